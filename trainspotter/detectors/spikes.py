"""spikes: a sudden jump in a loss-type metric, and whether the curve came back from it.

One module over ~500 lines on purpose: scoring, episode merging, recovery, severity and
the message are one pipeline over one `_Curve`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from trainspotter.detectors import idioms, loss_scale, stats
from trainspotter.detectors.base import Above, Detector, Reads, fmt
from trainspotter.model import Evidence, Finding, FloatArray, IntArray, Run, Series, Severity
from trainspotter.names import is_eval, is_loss_like

NAME = "spikes"


@dataclass(frozen=True)
class SpikesParams:
    """Parameters of the spikes detector (defaults explained in `SpikesDetector`)."""

    z_threshold: float = 8.0
    """Minimum modified z-score of the jump (noise from the trailing window)."""
    min_ratio: Annotated[
        float,
        Above(
            1,
            True,
            "the smallest jump that counts is log10(min_ratio): undefined at <= 0, and at <= 1 "
            "no rise is needed and the noise floor (1% of that jump) is gone",
        ),
    ] = 1.5
    """Minimum size of the jump relative to the level just before it (a ratio)."""
    window_fraction: float = 0.05
    """Trailing baseline window as a fraction of the metric's logged points..."""
    min_window: int = 20
    """...but at least this many points..."""
    max_window: int = 100
    """...and at most this many."""
    min_points: int = 12
    """Abstain on a metric with fewer finite points than this."""
    min_baseline: int = 8
    """A point needs this many finite points before it to be judged at all."""
    merge_gap: int = 2
    """Flagged points separated by at most this many unflagged points are one episode."""
    recovery_points: int = 5
    """The level after an episode is the median of this many points after it."""
    max_findings_per_metric: int = 5
    """Report at most this many episodes per metric (the largest); the rest are counted."""
    min_progress_share: float = 0.1
    """A spike must undo at least this share of the progress the curve had made (from
    the highest level it held before down to the pre-spike level), in raw units."""
    near_zero_fraction: float = 0.05
    """Below this fraction of its highest earlier level a positive curve has memorised:
    a jump that comes back within `recovery_points` points there is not an incident
    unless it climbs above that earlier level."""
    startup_fall: float = 10.0
    """A fall of at least this ratio between two consecutive logs among a log's first
    points ends a start-up transient, which the progress and memorised tests then skip."""


@dataclass(frozen=True)
class _Curve:
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
class _Episode:
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


class SpikesDetector(
    Detector,
    name=NAME,
    params=SpikesParams,
    causal_rank=3,
    reads=Reads(is_loss_like, "no loss metric"),
    summary="Sudden jumps in a loss (train or eval): warning, error when it does not recover.",
):
    """Finds sudden jumps in any loss-like metric (train or eval), recovered or not.

    **What it finds.** One finding per spike episode: a *warning* when the curve came
    back to its pre-spike level (however late), an *error* when it never did (the run was
    damaged: it stays well above where it was before the jump for at least
    `recovery_points` points after it). An episode with fewer than `recovery_points`
    points after it (the end of the log) is a warning that says how many there were. A
    spike judged against fewer than a full window of earlier points (early in the log)
    says so and is one level less severe. When a run logs a total loss and its terms
    (`train/loss` or `mean_loss` beside `*_loss` columns), one incident is one finding on
    the total, naming the terms that spiked with it; a term spiking while the total does
    not is the optimiser trading terms off and is not reported. A train-loss spike that
    came back while `eval/loss` did not come back to its best says what eval did.

    **Algorithm.** Per loss-like metric (`names.is_loss_like`), on its finite points:

    1. Log10 space when every value is positive (`stats.log_if_positive`), the usual case
       for losses. Loss noise is roughly multiplicative (a minibatch's loss varies in
       proportion to the loss), so in log space one noise scale fits the whole decaying
       curve, a jump reads as a ratio, and 1e-4..1e4 need no special case. Always-log
       rather than only-when-spanning-decades: over a short window the two agree to first
       order, and log keeps the ratio test exact. Curves with zero or negative values stay
       linear, with jumps measured against the curve's robust level (`stats.level_scale`).
    2. For each point, its trailing window (the `window` points before it:
       `window_fraction` of the points clamped to `min_window`..`max_window`; counted in
       points so it adapts to the logging interval): the pre-spike level is the median of
       the last 5 points (current, where a whole-window median lags a curve that is still
       falling, and robust to one earlier outlier); the noise is the MAD of the window's first
       differences / sqrt 2 (immune to the trend, unlike a MAD about the median, which on
       a fast-falling eval curve would count the fall as noise). A modified z-score =
       jump / noise, with the noise floored at the logging resolution (a loss rounded to
       4 decimals cannot show noise below 1e-4: 0.0003 -> 0.0008 is rounding, not a
       spike).
    3. A point is a spike when z >= `z_threshold` AND the jump is at least `min_ratio`
       times the pre-spike level (linear: (min_ratio - 1) x the level). The ratio test is
       what keeps a very smooth curve (tiny noise) from turning a harmless wiggle into an
       enormous z.
    3b. Absolute size (`loss_scale`): relative tests alone call 1e-8 -> 6e-4 a huge spike.
       An episode must also undo at least `min_progress_share` of the progress the curve
       had made, in raw units: peak - level >= share x (reference - level), where the
       reference is the highest 5-point median the curve held before. And once the curve
       sits below `near_zero_fraction` of that reference (it has memorised: most batches
       give ~0 and one hard example gives a jump of orders of magnitude), an episode that
       came back within `recovery_points` points and stayed below the reference is the
       loss's own heavy tail: not reported (one whose recovery the log cannot show is
       info).
       Both tests measure against the highest level the curve held before, and a
       start-up transient must not set it: the first logs of a run with a bad initial
       scale (unnormalised targets, a huge first output) can sit 6-8 decades above
       everything after them, which makes any later incident look small and the working
       level look "memorised" (wild3 lightning/012: 8e7-1e8 at steps 0-4, a working level
       of ~10, then a burst to 2.3e6 at steps 25-30). The transient is the leading points
       up to the largest fall between two consecutive logs among the first max(5, 10%) of
       the points, when that fall is at least `startup_fall` (10x) in one log; the
       reference is then taken after it (`startup_points`). A loss that falls gradually,
       however far (a run that memorises from 2.3 to 1e-8), has no such fall and keeps its
       whole descent as the progress a spike must undo. (The level and the noise never
       came from the start: they are the points just before the spike.)
    4. Flagged points within `merge_gap` points of each other form one episode
       (`stats.episodes`); it lasts while the points after it stay above the recovery
       threshold (below), when the curve then comes back under it: a burst's later points,
       judged against windows that already hold the burst, are not flagged on their own,
       and without this the peak and the "came back" step would fall inside the burst.
       Recovery: the first run of `recovery_points` consecutive points
       after the episode whose median is back within the threshold of the pre-spike level
       (below `min_ratio` x it, and within half the z threshold in noise sigmas). Never
       back: not recovered (error). Jumps flagged before the curve came back are the same
       incident (a blow-up that keeps climbing) and are folded into the first finding.
    5. Severity: recovered is a warning, except a single logged point that is back at the
       very next one: one hard batch, the tail of minibatch noise, reported as info (with
       Student-t noise of 3-10 degrees of freedom such points reach 1.5-3x and robust z
       8-40 on healthy runs: tests/detectors/test_healthy_property.py). Not recovered is
       an error; a rough baseline (fewer than a window of points) lowers either one level.

    Cost: exact statistics for a point need its own window; on series of more than 2,000
    points `stats.trailing_block_baseline` (O(n)) screens candidates first, and only those
    are scored exactly. A million points take ~0.2 s.

    **Defaults and why.**
    - `z_threshold` 8: Iglewicz and Hoaglin's 3.5 labels outliers in one sample; over a
      log of 10^5 points, heavy-tailed minibatch noise crosses 3.5 many times and 6 now
      and then (an epoch-level physics-informed loss reached z 6.2 with no incident in a
      real log). A real spike (a corrupt batch, a bad update) is z 10 and far beyond.
    - `min_ratio` 1.5: a loss 50% above its level within one logging interval; the
      routine bumps at epoch boundaries of multi-epoch fine-tunes (5-35% in real logs)
      stay below it.
    - `window_fraction` 0.05 (5% of the points), `min_window` 20 .. `max_window` 100:
      enough differences for a stable noise estimate, short enough to follow the curve.
    - `min_points` 12, `min_baseline` 8: fewer points give no usable noise estimate (the
      detector abstains; a sparse eval curve needs 12 evaluations).
    - `recovery_points` 5: the median of 5 points sheds one noisy point after a spike.
    - `max_findings_per_metric` 5: a very spiky metric yields its first episode and its
      largest ones with a count, not a wall of findings.
    - `min_progress_share` 0.1: a practitioner reads a loss on a linear plot of the whole
      run; a jump under a tenth of the height the curve has come down is a wiggle there,
      whatever its ratio.
    - `near_zero_fraction` 0.05: below 5% of its earlier level a classifier's batch loss
      is dominated by single misclassified examples (one at p=0.01 in a batch of 16 adds
      0.29), so one-log jumps to 0.1-0.3 are routine and say nothing about the run.
    - `startup_fall` 10: minibatch noise and a steep but smooth descent move a loss by
      less than tenfold between two logs; a start-up transient falls by 10^2-10^6 in one
      (4.3e6 -> 1.0 in lightning/012).

    **False-positive modes.** Deliberate discontinuities: an LR warm restart (SGDR) can
    lift the loss by more than half for a while (the lr_schedule detector names the
    restart, and the two are linked); a change of data mixture or curriculum stage; a
    loss logged as a running average that resets at epoch starts. Very heavy-tailed
    per-batch losses (batch size 1, reinforcement learning, adversarial losses): a batch
    whose loss is 1.5-2x the others is real but may be harmless; such a run shows several
    recovered spikes. Misses by design: a spike smaller than a tenth of the progress made
    (a run that trains to 0.01 and jumps to 0.05 is not reported), and a memorised run's
    one-log jumps, even when a real bad batch caused them; a one-point jump of any size
    that is back at the next logged point is only info, even when it was a real bad batch
    (a corrupted sample shows that way only when logged per step); a total-loss incident in a run
    whose total is not recognised (named other than `train/loss`, `loss`, `mean_loss`,
    `total_loss` and the like) is reported per term.
    Start-up transient: a run logged so sparsely that its loss falls tenfold between its
    first two logs and then memorises has its reference taken after that fall, so its
    memorised one-log jumps can be reported; a gradual but fast start-up (several logs
    of 3-5x each) is not a transient, and a burst measured against it can still be
    missed.

    **Example.** `examples/loss_spike/trainer_state.json`: a warning at step 400, where a
    batch with shifted labels made train/loss jump, and it recovered. Silent on
    `examples/healthy/trainer_state.json`.
    """

    def detect(self, run: Run, params: SpikesParams) -> list[Finding]:
        """One finding per spike episode in every loss-like metric; the terms of a total
        loss are folded into the total's findings."""
        per_metric = {
            name: _detect_metric(name, series, run, params)
            for name, series in run.metrics.items()
            if is_loss_like(name)
        }
        total = loss_scale.total_loss(run)
        if total is None:
            return [f for found in per_metric.values() for f in found]
        return _fold_components(per_metric, total, loss_scale.components(run, total))


def _fold_components(
    per_metric: dict[str, list[Finding]], total: str, terms: list[str]
) -> list[Finding]:
    """One incident, one finding, led by the total loss: a term's spike inside a spike of
    the total (up to where the total came back) is named in the total's finding; a term's
    spike while the total did not spike is the optimiser trading terms off, not reported."""
    totals = per_metric.get(total, [])
    moved: dict[int, list[str]] = {}
    for term in terms:
        for f in per_metric.pop(term, []):
            for i, t in enumerate(totals):
                reach = t.evidence.get("recovered_at_step", t.step_end)
                if t.evidence.get("recovered") == "no":
                    reach = 2**62
                if f.step_start <= int(reach) and f.step_end >= t.step_start:
                    if term not in moved.setdefault(i, []):
                        moved[i].append(term)
                    break
    out = [f for name, found in per_metric.items() if name != total for f in found]
    for i, t in enumerate(totals):
        names = moved.get(i)
        if names:
            t = dataclasses.replace(
                t,
                message=t.message + f" Terms of {total} that spiked with it: {', '.join(names)}.",
                evidence={**t.evidence, "terms_that_spiked": ", ".join(names)},
            )
        out.append(t)
    return out


def _detect_metric(name: str, series: Series, run: Run, params: SpikesParams) -> list[Finding]:
    finite = series.finite
    raw = series.values[finite]
    n = int(raw.size)
    if n < max(params.min_points, params.min_baseline + 1):
        return []
    values, in_log = stats.log_if_positive(raw)
    if in_log:
        min_jump = math.log10(params.min_ratio)
    else:
        level = stats.level_scale(raw)
        if level <= 0:
            return []
        min_jump = (params.min_ratio - 1.0) * level
    window = stats.window_points(n, params.window_fraction, params.min_window, params.max_window)
    curve = _Curve(
        steps=series.steps[finite],
        raw=raw,
        values=values,
        in_log=in_log,
        min_jump=min_jump,
        window=window,
        ends_nonfinite=not bool(np.isfinite(series.values[-1])),
    )
    z, median, sigma = _spike_scores(curve, params)
    found = [
        _judge(curve, z, median, sigma, start, end, params)
        for start, end in stats.episodes(z >= params.z_threshold, max_gap=params.merge_gap)
    ]
    found = [e for e in _merge_unrecovered(found) if _large_enough(curve, e, params)]
    if not found:
        return []
    return [
        _finding(name, run, curve, e, params, len(found))
        for e in _worth_showing(found, curve, params)
    ]


def _memorised(curve: _Curve, ep: _Episode, params: SpikesParams) -> bool:
    """The curve sat below `near_zero_fraction` of its highest earlier level, and the
    jump stayed below that level."""
    level = curve.back(ep.baseline)
    reference = _reference(curve, ep.start, params)
    return (
        loss_scale.near_zero(level, reference, params.near_zero_fraction)
        and float(curve.raw[ep.peak]) < reference
    )


def _large_enough(curve: _Curve, ep: _Episode, params: SpikesParams) -> bool:
    """The absolute sense of a spike (`loss_scale`): it undoes at least
    `min_progress_share` of the progress made, and, once the curve has memorised (below
    `near_zero_fraction` of its highest earlier level), it either climbs above that
    earlier level or does not come back within `recovery_points` points."""
    level = curve.back(ep.baseline)
    peak = float(curve.raw[ep.peak])
    reference = _reference(curve, ep.start, params)
    if not loss_scale.undoes_progress(peak, level, reference, params.min_progress_share):
        return False
    if _memorised(curve, ep, params):
        came_back_soon = ep.back_at is not None and ep.back_at - ep.end <= params.recovery_points
        return not came_back_soon
    return True


def startup_points(raw: FloatArray, fall: float) -> int:
    """How many leading points are a start-up transient: those before the largest fall
    between two consecutive logs among the first max(5, 10%) points, when that fall is at
    least `fall` x (a bad initial scale the first update fixes); 0 otherwise."""
    head = raw[: max(5, raw.size // 10) + 1]
    if head.size < 2 or not bool(np.all(head > 0)):
        return 0
    ratios = head[:-1] / head[1:]
    i = int(np.argmax(ratios))
    return i + 1 if float(ratios[i]) >= fall else 0


def _reference(curve: _Curve, upto: int, params: SpikesParams) -> float:
    """The highest level the curve held before index `upto` (`loss_scale.reference_level`),
    after its start-up transient when it had one and enough points follow it."""
    skip = startup_points(curve.raw, params.startup_fall) if curve.in_log else 0
    if skip and upto - skip >= loss_scale.REFERENCE_POINTS:
        return loss_scale.reference_level(curve.raw[skip:], upto - skip)
    return loss_scale.reference_level(curve.raw, upto)


def _merge_unrecovered(found: list[_Episode]) -> list[_Episode]:
    """Episodes flagged before the curve came back from an earlier one (a blow-up that
    keeps climbing jumps again and again) belong to that earlier incident."""
    merged: list[_Episode] = []
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


def _worth_showing(found: list[_Episode], curve: _Curve, params: SpikesParams) -> list[_Episode]:
    """The first episode (the onset matters most for finding a cause) and then the largest
    jumps, up to `max_findings_per_metric`, in step order."""
    if len(found) <= params.max_findings_per_metric:
        return found
    by_size = sorted(found[1:], key=lambda e: curve.values[e.peak] - e.baseline, reverse=True)
    keep = [found[0], *by_size[: params.max_findings_per_metric - 1]]
    return sorted(keep, key=lambda e: e.start)


def _spike_scores(curve: _Curve, params: SpikesParams) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Modified z-scores, pre-spike levels and noise sigmas of the candidate points (NaN
    elsewhere).

    Exact statistics of each point's own trailing window (the `window` points before it):
    the level before the point is the median of its last `_RECENT_POINTS`, and the noise
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
    floor = 0.01 * curve.min_jump
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
    quantum = _resolution(curve.raw)
    for chunk in np.array_split(idx, max(1, idx.size // _CHUNK_ROWS)):
        rows = windows[chunk]
        enough = np.count_nonzero(np.isfinite(rows), axis=1) >= 3
        chunk, rows = chunk[enough], rows[enough]
        if chunk.size == 0:
            continue
        # The level just before the point: on a decaying or climbing curve the median of
        # the whole window lags behind; the last few points do not.
        centre = np.nanmedian(rows[:, -_RECENT_POINTS:], axis=1)
        diffs = np.diff(rows, axis=1)
        mid = np.nanmedian(diffs, axis=1)
        noise = np.nanmedian(np.abs(diffs - mid[:, None]), axis=1)
        noise *= stats.MAD_TO_SIGMA / math.sqrt(2.0)
        if curve.in_log:
            resolution = np.log10(1.0 + quantum / np.power(10.0, centre))
        else:
            resolution = np.full(chunk.size, quantum)
        sig = np.maximum(np.maximum(noise, resolution), floor)
        jump = values[chunk] - centre
        z[chunk] = np.where(jump >= curve.min_jump, jump / sig, np.nan)
        median[chunk] = centre
        sigma[chunk] = sig
    return z, median, sigma


_SCREEN_ABOVE = 2_000
"""Series longer than this are screened with the block baseline before exact scoring."""

_RECENT_POINTS = 5
"""The pre-spike level is the median of this many points just before the point: robust to
one earlier outlier, and current (no lag) on a curve that is still falling or rising."""

_CHUNK_ROWS = 20_000
"""Candidates scored per batch: bounds the temporary window copies to a few MB."""


def _resolution(raw: FloatArray) -> float:
    """The logging resolution: the smallest gap between distinct logged values (1e-4 for a
    loss rounded to 4 decimals; negligible for full-precision floats)."""
    distinct = np.unique(raw)
    if distinct.size < 2:
        return 0.0
    return float(np.min(np.diff(distinct)))


def _judge(
    curve: _Curve,
    z: FloatArray,
    median: FloatArray,
    sigma: FloatArray,
    start: int,
    end: int,
    params: SpikesParams,
) -> _Episode:
    """Peak, baseline and recovery of one episode.

    Recovered means the curve came back, however late: some `recovery_points` consecutive
    points after the episode have a median within the threshold of the pre-spike level
    (`min_ratio`, and half the z threshold in baseline sigmas). `back_at` is the first
    point of that stretch.
    """
    values = curve.values
    baseline, base_sigma = float(median[start]), float(sigma[start])
    threshold = max(curve.min_jump, 0.5 * params.z_threshold * base_sigma)
    # Points are flagged where a jump is new against their own trailing window, so a
    # burst's later points (judged against a window that already holds the burst) may go
    # unflagged: the episode lasts while the points after it stay above the recovery
    # threshold, when the curve then comes back below it (not when it stays up to the end).
    last = end
    while last + 1 < values.size and values[last + 1] - baseline >= threshold:
        last += 1
    if last + 1 < values.size:
        end = last
    peak = start + int(np.argmax(values[start : end + 1]))
    after = values[end + 1 :]
    width = min(params.recovery_points, after.size)
    peak_z = float(np.nanmax(z[start : end + 1]))
    if width >= 3:
        # Median of each run of `width` consecutive points after the episode.
        runs = stats.rolling_median(after, width)[width - 1 :]
        back = np.flatnonzero(runs - baseline < threshold)
        if back.size:
            i = int(back[0])
            return _Episode(start, end, peak, baseline, peak_z, True, float(runs[i]), end + 1 + i)
        # "Did not recover" needs a full `recovery_points` after the episode; fewer (the
        # episode is near the end of the log) leave it open.
        verdict = False if after.size >= params.recovery_points else None
        return _Episode(start, end, peak, baseline, peak_z, verdict, float(runs[-1]), None)
    # Fewer than 3 points after the episode: recovery cannot be judged (unless the metric
    # ends non-finite: then it never came back).
    ended = False if curve.ends_nonfinite else None
    level = float(np.median(after)) if after.size else float("nan")
    return _Episode(start, end, peak, baseline, peak_z, ended, level, None)


def _finding(
    name: str, run: Run, curve: _Curve, ep: _Episode, params: SpikesParams, total: int
) -> Finding:
    baseline = curve.back(ep.baseline)
    peak_value = float(curve.raw[ep.peak])
    ratio = peak_value / baseline if baseline > 0 else float("nan")
    steps = curve.steps
    start_step, end_step, peak_step = int(steps[ep.start]), int(steps[ep.end]), int(steps[ep.peak])
    single = start_step == end_step
    size = f"{fmt(ratio)}x" if baseline > 0 else f"+{fmt(peak_value - baseline)}"
    # The noise window holds `window` points, fewer near the start of the log: say so.
    noise_points = min(ep.start, curve.window)
    short_baseline = noise_points < curve.window
    message = (
        f"{name} jumped from {fmt(baseline)} (median of the {_RECENT_POINTS} points before) "
        f"to {'' if single else 'a peak of '}{fmt(peak_value)} at step {peak_step} ({size}; "
        f"robust z {fmt(ep.z)} against the noise of the previous {noise_points} points)"
        + ("" if single else f", over steps {start_step}-{end_step}")
        + ". "
    )
    if short_baseline:
        message += (
            f"Only {noise_points} points precede it (a full baseline is {curve.window}), so "
            "the noise estimate is rough. "
        )
    level_after = curve.back(ep.level_after) if math.isfinite(ep.level_after) else math.nan
    evidence: Evidence = {
        "level_before": baseline,
        "peak_value": peak_value,
        "peak_step": peak_step,
        "ratio_to_baseline": ratio,
        "robust_z": ep.z,
        "window_points": curve.window,
        "points_in_episode": ep.end - ep.start + 1,
        "spike_episodes_in_metric": total,
    }
    points_after = int(curve.values.size - 1 - ep.end)
    evidence["points_after_episode"] = points_after
    if ep.recovered is None:
        # Once the curve has memorised, an unjudged jump is as likely one hard batch.
        memorised = _memorised(curve, ep, params)
        severity, recovery = (Severity.INFO if memorised else Severity.WARNING), "unknown"
        message += (
            f"The log ends {points_after} logged point{'s' if points_after != 1 else ''} after "
            f"it, fewer than the {params.recovery_points} needed to judge recovery"
            + (f" (their median is {fmt(level_after)})." if math.isfinite(level_after) else ".")
        )
    elif ep.recovered:
        severity, recovery = Severity.WARNING, "yes"
        back_step = int(steps[ep.back_at]) if ep.back_at is not None else end_step
        message += (
            f"It came back: from step {back_step} the median of the next "
            f"{params.recovery_points} points is {fmt(level_after)}."
        )
        if single and ep.back_at is not None and ep.back_at <= ep.end + 1:
            # One logged point, back at the very next one: one hard batch, the usual tail
            # of minibatch noise, not an incident a practitioner acts on.
            severity = Severity.INFO
            message += " One logged point, back at the next: most likely one hard batch."

        evidence["recovered_at_step"] = back_step
    else:
        severity, recovery = Severity.ERROR, "no"
        if not math.isfinite(level_after):
            message += "It did not recover: the metric is non-finite from then on."
        else:
            message += f"It did not recover: it ends at a median of {fmt(level_after)}"
            message += (
                f", {fmt(level_after / baseline)}x the level before." if baseline > 0 else "."
            )
    if short_baseline:
        # Severity follows evidence: a rough noise estimate lowers it one level.
        severity = Severity(max(int(Severity.INFO), int(severity) - 1))
    if ep.absorbed:
        later = "before coming back" if ep.recovered else "after that"
        times = "once more" if ep.absorbed == 1 else f"{ep.absorbed} more times"
        message += f" It jumped {times} {later}: counted in this finding."
        evidence["further_jumps"] = ep.absorbed
    evidence["recovered"] = recovery
    if math.isfinite(level_after):
        evidence["level_after"] = level_after
    if total > params.max_findings_per_metric:
        message += (
            f" One of {total} spike episodes in {name}: the first and the largest are reported."
        )
    lr_value = _lr_at(run, start_step)
    if lr_value is not None:
        evidence["lr_at_spike"] = lr_value
    # The step a reader looks for: the peak, named as such when the episode spans more.
    at = (
        f"at step {peak_step}"
        if single
        else f"at steps {start_step}-{end_step} (peak at step {peak_step})"
    )
    eval_note = None
    if recovery == "yes" and not is_eval(name):
        eval_note = loss_scale.eval_after(run, start_step, int(evidence["recovered_at_step"]))
    if eval_note:
        message += f" {eval_note}"
        evidence["eval_recovered"] = "no"
    outcome = {
        "yes": "and came back (eval/loss did not)" if eval_note else "and recovered",
        "no": "and did not recover",
        "unknown": "too close to the end of the log to judge recovery",
    }[recovery]
    title = f"{name} spiked {at} {outcome}"
    return Finding(
        detector=NAME,
        title=title,
        severity=severity,
        metric=name,
        step_start=start_step,
        step_end=end_step,
        message=message,
        evidence=evidence,
        fixes=_fixes(name, start_step, severity, first_logged=int(steps[0]), run=run),
    )


def _lr_at(run: Run, step: int) -> float | None:
    lr = run.metrics.get("lr")
    if lr is None or len(lr) == 0:
        return None
    i = int(np.searchsorted(lr.steps, step, side="right")) - 1
    if i < 0:
        return None
    value = float(lr.values[i])
    return value if math.isfinite(value) else None


def _fixes(
    name: str, step: int, severity: Severity, first_logged: int, run: Run
) -> tuple[str, ...]:
    if is_eval(name):
        return (
            f"Check the evaluation at step {step}: a changed or reshuffled eval set, a "
            "different eval batch size, or a model left in train mode (dropout, batch-norm "
            "statistics) moves the eval loss without the model changing.",
            "If train loss spiked at the same step, fix that first: the eval spike follows it.",
            "Keep the checkpoint from before the spike if the eval loss stayed high.",
        )
    fixes = [
        "Lower the peak learning rate (by 2-3x) or lengthen the warmup.",
        f"{idioms.clipping_fix(run)}.",
        f"Inspect the batches around step {step}: a corrupt, mislabelled or extremely long "
        "sample often causes a one-off jump.",
        "With Adam, raise eps (1e-8 -> 1e-6) or lower beta2 (0.999 -> 0.95) to damp update spikes.",
    ]
    if severity is Severity.ERROR:
        # No checkpoint precedes the first logged step: then the advice is a fresh start.
        where = (
            f"the last checkpoint before step {step}"
            if step > first_logged
            else "scratch (the trouble is there from the first logged step)"
        )
        fixes.insert(
            0,
            f"Restart from {where} with a 2-10x lower learning rate (and skip the offending "
            "batches).",
        )
    return tuple(fixes)


DETECTOR = SpikesDetector()
