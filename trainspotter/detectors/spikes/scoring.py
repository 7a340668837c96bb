"""Spike scoring over one curve: each point's jump against its trailing window, the
episodes those jumps form, whether the curve came back, and whether an episode is large
enough in absolute terms to be an incident."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from trainspotter.detectors import loss_scale, stats
from trainspotter.detectors.spikes.params import SpikesParams
from trainspotter.model import FloatArray, IntArray, Series


@dataclass(frozen=True)
class Curve:
    """One metric prepared for spike scoring (all arrays over its finite points)."""

    steps: IntArray
    raw: FloatArray
    values: FloatArray
    """log10(raw) when `in_log`, else raw."""
    in_log: bool
    min_jump: float
    """The smallest jump that counts, in `values` units."""
    window: int
    ends_nonfinite: bool
    """The metric's last logged value is NaN/Inf (it never came back)."""

    def back(self, v: float) -> float:
        """A `values`-space number in the metric's own units."""
        return float(10.0**v) if self.in_log else v


@dataclass(frozen=True)
class Episode:
    start: int
    end: int
    peak: int
    baseline: float
    """Pre-spike level, in `values` units."""
    z: float
    recovered: bool | None
    level_after: float
    """In `values` units: where the curve came back to, or where it stayed; NaN when
    there is nothing after the episode."""
    back_at: int | None
    """Index where the recovered level starts (None if it did not come back)."""
    absorbed: int = 0
    """Later flagged episodes that happened before the curve came back (one incident)."""
    by_run: bool = False
    """Found only by the run rule: no point reaches `z_threshold` (`flagged_points`)."""
    sigma: float = math.nan
    """The noise sigma of the episode's first point, in `values` units."""
    by_end: bool = False
    """Found by the end-of-log rule (`end.end_episode`): the log's last points, far above
    the level before them and beyond every earlier rise of the curve."""
    earlier_rise: float = math.nan
    """For an episode the log ends on: the largest rise of an earlier point above the
    median of the `RECENT_POINTS` before it, in `values` units (0 when none rose)."""
    earlier_rise_at: int | None = None
    """Index of that earlier point (None when none rose)."""
    lr_rise: LrRise | None = None
    """For an episode the log ends on: the rise of the logged LR just before it
    (`lr_rise_before`), None when the LR did not rise or was not logged."""
    train_blow_up: tuple[str, int] | None = None
    """For an eval loss the log ends on: the train loss and the step where it turned
    non-finite or reached 10x its level at the tail's start (`end.train_blow_up`): the
    eval tail is that divergence seen on the eval set, which divergence reports."""
    within_history: bool = False
    """A single last logged point that the end-of-log rule does not pass: the curve rose
    half as far (in `values` units) or more before and came back, so this one is as likely
    its own tail (one hard batch) as a blow-up."""


def is_memorised(curve: Curve, ep: Episode, params: SpikesParams) -> bool:
    """The curve sat below `near_zero_fraction` of its highest earlier level, and the
    jump stayed below that level."""
    level = curve.back(ep.baseline)
    reference = _reference(curve, ep.start, params)
    return (
        loss_scale.near_zero(level, reference, params.near_zero_fraction)
        and float(curve.raw[ep.peak]) < reference
    )


def large_enough(curve: Curve, ep: Episode, params: SpikesParams) -> bool:
    """The absolute sense of a spike (`loss_scale`): it undoes at least
    `min_progress_share` of the progress made, and, once the curve has memorised (below
    `near_zero_fraction` of its highest earlier level), it either climbs above that
    earlier level or does not come back within `recovery_points` points."""
    level = curve.back(ep.baseline)
    peak = float(curve.raw[ep.peak])
    reference = _reference(curve, ep.start, params)
    if not loss_scale.undoes_progress(peak, level, reference, params.min_progress_share):
        return False
    if is_memorised(curve, ep, params):
        came_back_soon = ep.back_at is not None and ep.back_at - ep.end <= params.recovery_points
        return not came_back_soon
    return True


STARTUP_RATE = 2.0
"""A leading stretch that falls on average at least this factor per log (and ends at least
`startup_fall` x above the log's median level) is a start-up transient, however gradual
each log's fall (`startup_points`)."""


def startup_points(raw: FloatArray, fall: float) -> int:
    """How many leading points are a start-up transient (a bad initial scale the first
    updates fix), 0 when there is none. Either rule marks one:

    - one log: the points before the largest fall between two consecutive logs among the
      first max(5, 10%) points, when that fall is at least `fall` x;
    - a steep stretch: the leading points at least `fall` x above the log's median level
      (its working level: a burst or a start-up shorter than half the log does not move
      it), when they fall on average at least `STARTUP_RATE` x per log down to the first
      point below that bound (256,337 -> 85 in 8 logs: 2.7x per log; a loss learning by
      gradual descent, 2.3 -> 1e-4 over hundreds of logs, falls a few percent per log).
    """
    if raw.size < 2 or not bool(np.all(raw > 0)):
        return 0
    head = raw[: max(5, raw.size // 10) + 1]
    ratios = head[:-1] / head[1:]
    i = int(np.argmax(ratios))
    if float(ratios[i]) >= fall:
        return i + 1
    high = raw >= fall * float(np.median(raw))
    k = raw.size if bool(np.all(high)) else int(np.argmin(high))
    if k == 0 or k >= raw.size:
        return 0
    per_log = math.log10(float(np.max(raw[:k])) / float(raw[k])) / k
    return k if per_log >= math.log10(STARTUP_RATE) else 0


def _reference(curve: Curve, upto: int, params: SpikesParams) -> float:
    """The highest level the curve held before index `upto` (`loss_scale.reference_level`),
    after its start-up transient when it had one and enough points follow it."""
    skip = startup_points(curve.raw, params.startup_fall) if curve.in_log else 0
    if skip and upto - skip >= loss_scale.REFERENCE_POINTS:
        return loss_scale.reference_level(curve.raw[skip:], upto - skip)
    return loss_scale.reference_level(curve.raw, upto)


def merge_unrecovered(found: list[Episode]) -> list[Episode]:
    """Episodes flagged before the curve came back from an earlier one (a blow-up that
    keeps climbing jumps again and again) belong to that earlier incident."""
    merged: list[Episode] = []
    blocked_until = -1
    for episode in found:
        if merged and episode.start <= blocked_until:
            merged[-1] = dataclasses.replace(merged[-1], absorbed=merged[-1].absorbed + 1)
            continue
        merged.append(episode)
        if episode.recovered is False:
            blocked_until = 2**62
        elif episode.back_at is not None:
            blocked_until = episode.back_at - 1
    return merged


def worth_showing(found: list[Episode], curve: Curve, params: SpikesParams) -> list[Episode]:
    """The first episode (the onset matters most for finding a cause) and then the largest
    jumps, up to `max_findings_per_metric`, in step order."""
    if len(found) <= params.max_findings_per_metric:
        return found
    by_size = sorted(found[1:], key=lambda e: curve.values[e.peak] - e.baseline, reverse=True)
    keep = [found[0], *by_size[: params.max_findings_per_metric - 1]]
    return sorted(keep, key=lambda e: e.start)


def spike_scores(curve: Curve, params: SpikesParams) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Modified z-scores, pre-spike levels and noise sigmas of the candidate points (NaN
    elsewhere).

    Exact statistics of each point's own trailing window (the `window` points before it):
    the level before the point is the median of its last `RECENT_POINTS`, and the noise
    is measured on the window's first differences (MAD of the differences / sqrt 2, as
    `stats.noise_scale` does), so a curve's own trend is not counted as noise. Exact
    statistics for every point of a million-point log would cost seconds, so above
    `_SCREEN_ABOVE` points `stats.trailing_block_baseline` screens first (half the minimum
    jump and a quarter of the z threshold against a block-median baseline), and only the
    candidates get the exact statistics, in chunks so memory stays bounded.

    The sigma is floored at the logging resolution (a loss written with 4 decimals cannot
    show noise below 1e-4, so 0.0003 -> 0.0008 is five rounding steps, not a z of
    thousands) and at a small fraction of the smallest jump that counts, so a perfectly
    flat stretch gives a large but finite z.
    """
    values, window = curve.values, curve.window
    n = values.size
    z = np.full(n, np.nan)
    median = np.full(n, np.nan)
    sigma = np.full(n, np.nan)
    floor = FLAT_NOISE_SHARE * curve.min_jump
    if n <= _SCREEN_ABOVE:
        candidate = np.ones(n, dtype=bool)
    else:
        rough_median, rough_sigma = stats.trailing_block_baseline(values, window)
        rough_jump = values - rough_median
        with np.errstate(invalid="ignore"):
            candidate = (rough_jump >= 0.5 * curve.min_jump) & ~(
                rough_jump < 0.25 * params.z_threshold * np.maximum(rough_sigma, floor)
            )
    candidate[: params.min_baseline] = False
    idx = np.flatnonzero(candidate)
    if idx.size == 0:
        return z, median, sigma
    padded = np.concatenate((np.full(window, np.nan), values))
    # Row i of `windows` holds values[i - window : i] (NaN before the first point).
    windows = np.lib.stride_tricks.sliding_window_view(padded, window)
    quantum = logging_resolution(curve.raw)
    for chunk in np.array_split(idx, max(1, idx.size // _CHUNK_ROWS)):
        rows = windows[chunk]
        enough = np.count_nonzero(np.isfinite(rows), axis=1) >= 3
        chunk, rows = chunk[enough], rows[enough]
        if chunk.size == 0:
            continue
        # The level just before the point: on a decaying or climbing curve the median of
        # the whole window lags behind; the last few points do not.
        centre = np.nanmedian(rows[:, -RECENT_POINTS:], axis=1)
        diffs = np.diff(rows, axis=1)
        mid = np.nanmedian(diffs, axis=1)
        noise = np.nanmedian(np.abs(diffs - mid[:, None]), axis=1)
        noise *= stats.MAD_TO_SIGMA / math.sqrt(2.0)
        sig = np.maximum(noise, noise_floor(curve, centre, quantum))
        jump = values[chunk] - centre
        z[chunk] = np.where(jump >= curve.min_jump, jump / sig, np.nan)
        median[chunk] = centre
        sigma[chunk] = sig
    return z, median, sigma


_SCREEN_ABOVE = 2_000
"""Series longer than this are screened with the block baseline before exact scoring."""

RECENT_POINTS = 5
"""The pre-spike level is the median of this many points just before the point: robust to
one earlier outlier, and current (no lag) on a curve that is still falling or rising."""

_CHUNK_ROWS = 20_000
"""Candidates scored per batch: bounds the temporary window copies to a few MB."""


FLAT_NOISE_SHARE = 0.01
"""The noise sigma is at least this share of the smallest jump that counts, so a perfectly
flat stretch gives a large but finite z (`noise_floor`)."""


def noise_floor(curve: Curve, level: FloatArray, quantum: float) -> FloatArray:
    """The smallest noise sigma a point is judged against, for pre-spike levels `level`
    (`values` units): the logging resolution `quantum` (`logging_resolution`, raw units; in
    log units, the ratio one rounding step makes at that level) and `FLAT_NOISE_SHARE` of
    the smallest jump that counts. The trailing-window rule (`spike_scores`) and the end
    rule (`end`) floor their noise with it."""
    if curve.in_log:
        resolution = np.log10(1.0 + quantum / np.power(10.0, level))
    else:
        resolution = np.full(np.shape(level), quantum)
    return np.maximum(resolution, FLAT_NOISE_SHARE * curve.min_jump)


def logging_resolution(raw: FloatArray) -> float:
    """The logging resolution: the smallest gap between distinct logged values (1e-4 for a
    loss rounded to 4 decimals; negligible for full-precision floats)."""
    distinct = np.unique(raw)
    if distinct.size < 2:
        return 0.0
    return float(np.min(np.diff(distinct)))


def flagged_points(z: FloatArray, params: SpikesParams) -> npt.NDArray[np.bool_]:
    """Points that are spikes: z >= `z_threshold`, or one of at least `sustained_points`
    consecutive points that each reach `sustained_z` (z is NaN below `min_ratio`) when none
    of them reaches `z_threshold`. A run that holds such a point is not flagged as a run:
    only that point is (as before the run rule existed), so its episode is dated from that
    point, not from the run's first point."""
    with np.errstate(invalid="ignore"):
        flagged = z >= params.z_threshold
        high = z >= params.sustained_z
    for start, end in stats.episodes(high):
        if end - start + 1 >= params.sustained_points and not flagged[start : end + 1].any():
            flagged[start : end + 1] = True
    return flagged


def judge_episode(
    curve: Curve,
    z: FloatArray,
    median: FloatArray,
    sigma: FloatArray,
    start: int,
    end: int,
    params: SpikesParams,
) -> Episode:
    """Peak, baseline and recovery of one episode.

    Recovered means the curve came back, however late: some `recovery_points` consecutive
    points after the episode have a median within `recovery_threshold` of the pre-spike
    level. `back_at` is the first point of that stretch.
    """
    values = curve.values
    baseline, base_sigma = float(median[start]), float(sigma[start])
    peak_z = float(np.nanmax(z[start : end + 1]))
    by_run = not peak_z >= params.z_threshold
    raised = max(curve.min_jump, 0.5 * params.z_threshold * base_sigma)
    threshold = recovery_threshold(curve, base_sigma, by_run, params)
    # Points are flagged where a jump is new against their own trailing window, so a
    # burst's later points (judged against a window that already holds the burst) may go
    # unflagged: the episode lasts while the points after it stay raised (above half the
    # single-point threshold), when the curve then comes back below that (not when it
    # stays up to the end).
    last = end
    while last + 1 < values.size and values[last + 1] - baseline >= raised:
        last += 1
    if last + 1 < values.size:
        end = last
    peak = start + int(np.argmax(values[start : end + 1]))
    after = values[end + 1 :]
    width = min(params.recovery_points, after.size)
    episode = Episode(
        start, end, peak, baseline, peak_z, None, math.nan, None, by_run=by_run, sigma=base_sigma
    )
    if width >= 3:
        # Median of each run of `width` consecutive points after the episode.
        runs = stats.rolling_median(after, width)[width - 1 :]
        back = np.flatnonzero(runs - baseline < threshold)
        if back.size:
            i = int(back[0])
            return dataclasses.replace(
                episode, recovered=True, level_after=float(runs[i]), back_at=end + 1 + i
            )
        # "Did not recover" needs a full `recovery_points` after the episode; fewer (the
        # episode is near the end of the log) leave it open.
        verdict = False if after.size >= params.recovery_points else None
        return dataclasses.replace(episode, recovered=verdict, level_after=float(runs[-1]))
    # Fewer than 3 points after the episode: recovery cannot be judged (unless the metric
    # ends non-finite: then it never came back).
    ended = False if curve.ends_nonfinite else None
    level = float(np.median(after)) if after.size else float("nan")
    return dataclasses.replace(episode, recovered=ended, level_after=level)


def recovery_threshold(
    curve: Curve, base_sigma: float, by_run: bool, params: SpikesParams
) -> float:
    """How close to the pre-spike level (in `values` units) the median after an episode
    must come for "it came back".

    A single-point spike (z >= `z_threshold`): below `min_ratio` x the level and within
    half the z threshold in noise sigmas, max(min_jump, 0.5 x z_threshold x sigma). A run
    (`by_run`) was flagged at `sustained_z` sigmas and `min_ratio`: coming back under that
    flag level is no return at all (a loss that stays 1.6x up on a noisy curve is still
    under 4 sigmas), so it must come back to half of it in both senses: within
    sqrt(`min_ratio`) x the level (log space; linear: half the minimum jump) or
    `sustained_z` / 2 sigmas, whichever is wider.
    """
    return max(recovery_ratio_bound(curve, by_run), recovery_sigmas(by_run, params) * base_sigma)


def recovery_ratio_bound(curve: Curve, by_run: bool) -> float:
    """The ratio bound of `recovery_threshold`, in `values` units."""
    return 0.5 * curve.min_jump if by_run else curve.min_jump


def recovery_sigmas(by_run: bool, params: SpikesParams) -> float:
    """The noise bound of `recovery_threshold`, in noise sigmas."""
    return 0.5 * params.sustained_z if by_run else 0.5 * params.z_threshold


def is_level_shift(ep: Episode, params: SpikesParams) -> bool:
    """A run-rule episode that is a change of level, not a burst: the curve did not come
    back to near its old level (`recovery_threshold`), or came back only after the raised
    points had faded for longer than `recovery_points` points (a rise that relaxes
    slowly: a new regime the model catches up with). A burst (a bad shard of batches)
    ends: the points right after it are back. A lasting rise is divergence's to judge."""
    if not ep.by_run:
        return False
    if ep.recovered is False:
        return True
    return ep.back_at is not None and ep.back_at - (ep.end + 1) >= params.recovery_points


LR_RISE = 1.1
"""An LR logged more than this factor above the lowest LR logged just before it is a
rise (`follows_lr_rise`): float jitter and a constant LR are not."""


@dataclass(frozen=True)
class LrRise:
    """A rise of the logged learning rate just before an episode (`lr_rise_before`): the
    raw LR values at the logged steps they were logged at."""

    from_step: int
    from_value: float
    """The lowest LR logged before the rise within the window looked at (the latest such
    point, when the LR held it)."""
    to_step: int
    to_value: float
    """The LR that rose above it (the largest ratio to the lowest LR before it)."""
    highest_before: float
    """The highest LR logged at any step before `from_step` (NaN when none was)."""

    @property
    def back_to_earlier_peak(self) -> bool:
        """The LR went back to no more than `LR_RISE` x an LR the run had already trained
        at (a warm restart, a cycle), not above every LR before it (a schedule that
        multiplies the LR by a factor the run never saw, or a warmup to a new peak)."""
        return self.to_value <= LR_RISE * self.highest_before


def lr_rise_before(
    lr: Series | None, steps: IntArray, start: int, tolerance: float = LR_RISE
) -> LrRise | None:
    """The rise of the learning rate (by more than `tolerance` x) between the logged point
    `RECENT_POINTS` before index `start` and `start` itself, None when it did not rise: a
    warm restart, a cycle, a warmup. Of several, the one of the largest ratio to the
    lowest LR logged before it in that window."""
    if lr is None:
        return None
    x, y = stats.finite_xy(lr.steps, lr.values)
    if x.size == 0:
        return None
    since = int(steps[max(0, start - RECENT_POINTS)])
    until = int(steps[start])
    first = max(0, int(np.searchsorted(x, since, side="right")) - 1)
    last = int(np.searchsorted(x, until, side="right"))
    seen = y[first:last]
    if seen.size < 2:
        return None
    lowest_before = np.minimum.accumulate(seen)[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rose = seen[1:] > tolerance * lowest_before
        ratio = np.where(rose, seen[1:] / lowest_before, -np.inf)
    if not bool(np.any(rose)):
        return None
    to = int(np.argmax(ratio)) + 1
    low = to - 1 - int(np.argmin(seen[:to][::-1]))  # the latest of equal lows: a constant LR
    earlier = y[: first + low]
    return LrRise(
        from_step=int(x[first + low]),
        from_value=float(seen[low]),
        to_step=int(x[first + to]),
        to_value=float(seen[to]),
        highest_before=float(np.max(earlier)) if earlier.size else math.nan,
    )


def follows_lr_rise(
    lr: Series | None, steps: IntArray, start: int, tolerance: float = LR_RISE
) -> bool:
    """Whether the learning rate rose (by more than `tolerance` x) between the logged point
    `RECENT_POINTS` before index `start` and `start` itself (`lr_rise_before`): a warm
    restart, a cycle, a warmup. A loss that climbs a few sigmas for a while right after the
    LR went up is the schedule's doing (lr_schedule names the restart), not a spike."""
    return lr_rise_before(lr, steps, start, tolerance) is not None
