"""throughput: a sustained regression in step time or samples/tokens per second."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.base import Abstain, Detector, Scope, scope_or_abstain
from trainspotter.model import Finding, Run, Severity

NAME = "throughput"


@dataclass(frozen=True)
class ThroughputParams:
    """Parameters of the throughput detector (see its docstring for each default's reason)."""

    min_points: int = 20
    """Abstain below this many finite, positive timing points."""
    min_slowdown: float = 0.2
    """The regression must make steps at least this much slower (0.2 = 20%)."""
    sustain_fraction: float = 1.0
    """The slower level must hold, in median, over this share of the rest of the run."""
    min_before_fraction: float = 0.05
    """The level before the change is the median of at least this share of the points
    (and 5 points)..."""
    min_after_fraction: float = 0.2
    """...and the slower stretch covers at least this share (and 5 points)."""
    end_fraction: float = 0.1
    """The slowdown must still hold (by half) over this last share of the points."""
    min_slow_share: float = 0.75
    """At least this share of the points from the change on are slow (above the midpoint
    of the two levels)."""
    min_z: float = 6.0
    """The shift of the medians must be this many standard errors (noise-relative)."""


@dataclass(frozen=True)
class _Timing:
    """One timing curve in "seconds per step"-like orientation (higher = slower)."""

    metric: str
    label: str
    steps: npt.NDArray[np.float64]
    slowness: npt.NDArray[np.float64]
    """log of seconds/step, or -log of samples/s: a regression is an upward shift."""
    unit: str
    higher_is_faster: bool


class ThroughputDetector(
    Detector,
    name=NAME,
    params=ThroughputParams,
    causal_rank=1,
    whole_run=True,
    summary="A sustained regression in step time or samples/tokens per second.",
):
    """Finds a sustained regression in step time (up) or throughput (down).

    **What it finds.** The step from which training runs persistently slower, by at least
    `min_slowdown` (20%), in `step_time` (seconds per step) or `throughput` (samples or
    tokens per second). When neither is logged, the seconds per step are derived from the
    wall-clock times of `train/loss` (TensorBoard, W&B and MLflow logs carry them, and a
    printed log whose every progress line starts with a logging timestamp: the time
    between two lines over the steps between them). Not one slow
    checkpoint step, not the periodic slow steps of evaluation or saving. Warning.

    **Algorithm.** Work on log time per step (or -log throughput), so a regression is an
    upward level shift measured as a ratio whatever the units. Decimate to <= 400 block
    medians (`stats.block_median`; a block median ignores slow steps that are fewer than
    half of its block). `stats.median_shift` then finds the split with the largest rise
    from the median of everything before it to the median of the next `sustain_fraction`
    (100%) of the remaining points: a change-point on a robust level. That split tends
    to land late (leaving out the slow stretch's own lower points raises the level after
    it), by more blocks the coarser the logging, so the change is re-dated to the split
    that best separates values below and above the midpoint of the two levels: first
    among all allowed block splits, then among the raw points of the blocks around it.
    The onset is the first logged step whose value shows the slowdown, within one logging
    interval of the cause whatever the interval (a logged interval mean shows it one
    interval later than a per-step value). The two levels are then the medians on either
    side of the dated change (before it; from it over `sustain_fraction` of the rest), and
    every check below and the message use them. Checks:
    - the slowdown is >= `min_slowdown` (20%);
    - the slower stretch covers >= `min_after_fraction` (20%) of the log, >=
      `min_slow_share` (75%) of its points sit above the midpoint, and so does the median
      of the last `end_fraction` (10%) of the log: a regression persists, contention from
      another job comes in bursts that end;
    - the shift is >= `min_z` (6) standard errors of a median (1.25 sigma / sqrt(points)
      per side, sigma from `stats.noise_scale`).
    The episode ends where a 5-block rolling median falls back below the midpoint (or at
    the end of the log). When step time and throughput show the same regression, one
    finding on throughput cites both.

    Minimum sample: `min_points` = 20 timing points; at least 5 points and
    `min_before_fraction` (5%) before the change, 5 points and `min_after_fraction` (20%)
    after it.

    **Defaults and why.** 20% is well above the few-percent drift of a healthy run and the
    noise of a shared machine; periodic eval/checkpoint steps are a minority of any block,
    so medians never see them; requiring the slower level over the rest of the run (in
    median: more than half of it slow), over a fifth of the log and until its end separates
    a regression from a transient stall or bursts of contention on a shared machine (a
    slow minute is not worth a warning). The price: a regression that starts in the last
    20% of the log, or that was fixed before the end, is not reported.

    **False-positive modes.** A deliberate change of work per step (a larger batch or sequence
    length, a curriculum phase, turning on an expensive metric) reads as a regression;
    a machine shared with another job slows a healthy run for real (the warning is then
    right about the time, not about the code); wall-clock-derived timing includes pauses
    between logs (a resumed run's restart gap is one interval and is ignored by medians).

    **Example.** `examples/throughput_drop/metrics.csv`: a warning from step 500, where
    every step began an extra forward pass over the training set (throughput fell 74%;
    `trainer_state.json` of that run has no per-step timing). From wall-clock times alone:
    `examples/logging_slowdown/train.log`, printed through Python `logging` with no step
    time, a warning from step 1020, the first line logged after the loader began to sleep
    5 ms per batch at step 1001 (a line every 20 steps). Silent on
    `examples/healthy/metrics.csv` and on `examples/logging_steady_healthy/train.log`.
    """

    def scope(self, run: Run, params: ThroughputParams) -> Scope | Abstain:
        """The metrics `detect` reads, or why there are none (cheap: names only)."""
        logged = [m for m in (names.THROUGHPUT, names.STEP_TIME) if m in run.metrics]
        loss = run.metrics.get(names.TRAIN_LOSS)
        if not logged and loss is not None and bool(np.isfinite(loss.wall_time).any()):
            logged = [names.TRAIN_LOSS]  # its wall-clock times give the seconds per step
        return scope_or_abstain(logged, "no step time or throughput metric, no wall-clock times")

    def detect(self, run: Run, params: ThroughputParams) -> list[Finding]:
        """At most one finding (the largest sustained regression) per incident: when step
        time and throughput both show it, one finding on throughput cites both."""
        findings: list[Finding] = []
        with np.errstate(all="ignore"):  # huge logged values may overflow: harmless
            timings = _timings(run, params)
        for timing in timings:
            with np.errstate(all="ignore"):
                finding = _check(timing, params)
            if finding is None:
                continue
            same = [f for f in findings if f.step_start <= finding.step_end]
            same = [f for f in same if finding.step_start <= f.step_end]
            if same:
                first = same[0]
                findings[findings.index(first)] = dataclasses.replace(
                    first,
                    message=f"{first.message} {finding.metric} agrees: {finding.title}.",
                    evidence={
                        **first.evidence,
                        f"{finding.metric}_slowdown": finding.evidence["slowdown"],
                    },
                )
            else:
                findings.append(finding)
        return findings


def _timings(run: Run, params: ThroughputParams) -> list[_Timing]:
    """The timing curves of a run: logged step time and throughput, else wall-clock."""
    timings = []
    for metric, higher_is_faster, unit in (
        (names.THROUGHPUT, True, "per second"),
        (names.STEP_TIME, False, "s/step"),
    ):
        series = run.metrics.get(metric)
        if series is None:
            continue
        x, v = stats.finite_xy(series.steps, series.values)
        keep = v > 0
        x, v = x[keep], v[keep]
        sign = -1.0 if higher_is_faster else 1.0
        timings.append(_Timing(metric, metric, x, sign * np.log(v), unit, higher_is_faster))
    if timings:
        return timings
    loss = run.metrics.get(names.TRAIN_LOSS)
    if loss is None or len(loss) < params.min_points + 1:
        return []
    known = np.isfinite(loss.wall_time)
    steps = loss.steps[known].astype(np.float64)
    wall = loss.wall_time[known]
    if steps.size < params.min_points + 1:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        per_step = np.diff(wall) / np.diff(steps)
    keep = np.isfinite(per_step) & (per_step > 0)
    label = f"seconds per step (from {names.TRAIN_LOSS} wall-clock times)"
    return [
        _Timing(names.TRAIN_LOSS, label, steps[1:][keep], np.log(per_step[keep]), "s/step", False)
    ]


def _check(timing: _Timing, params: ThroughputParams) -> Finding | None:
    """The regression finding for one timing curve, or None."""
    n = int(timing.slowness.size)
    if n < params.min_points:
        return None
    _, by = stats.block_median(timing.steps, timing.slowness)
    m = int(by.size)
    block = 1 if n <= stats.MAX_TREND_POINTS else math.ceil(n / stats.MAX_TREND_POINTS)
    segment = max(5, round(params.min_before_fraction * m))
    min_after = max(5, math.ceil(params.min_after_fraction * m))
    shift = stats.median_shift(by, segment, min_after, params.sustain_fraction)
    if shift is None:
        return None
    k, before, after = shift
    midpoint = (before + after) / 2
    # The largest shift to a sustained level tends to split late (dropping the slow
    # stretch's own lower points raises the level after the split), by more blocks the
    # coarser the logging: date the change where the two levels separate best, anywhere
    # a split is allowed.
    k = _refine_split(by, k, m, midpoint, lowest=segment, highest=m - min_after)
    if m - k < min_after:
        return None  # dated precisely, the slow stretch is too short to be sustained
    # The levels on either side of the dated change (the message names this step): the
    # split found first may be later, its slow side then only the slowest stretch.
    after_points = max(min_after, math.ceil(params.sustain_fraction * (m - k)))
    before, after = float(np.median(by[:k])), float(np.median(by[k : k + after_points]))
    midpoint = (before + after) / 2
    if float(np.mean(by[k:] >= midpoint)) < params.min_slow_share:
        return None  # slow bursts with fast stretches between them: contention
    effect = after - before
    slowdown = float(np.expm1(effect))  # inf, not an exception, for absurd values
    if slowdown < params.min_slowdown:
        return None
    # A regression persists: the last stretch of the log is still slow. Contention from
    # another job on the machine comes in bursts that end.
    tail = max(5, math.ceil(params.end_fraction * m))
    if float(np.median(by[-tail:])) < midpoint:
        return None
    sigma = stats.noise_scale(by)
    standard_error = 1.2533 * sigma * math.sqrt(1.0 / k + 1.0 / after_points)
    z = effect / standard_error if standard_error > 0 else math.inf
    if z < params.min_z:
        return None

    level = stats.rolling_median(by, 5, center=True)
    below = np.flatnonzero(level[k:] < before + effect / 2)
    last_block = k + int(below[0]) - 1 if below.size else m - 1
    last_block = max(last_block, k)
    # Date the change to the logged point: refine within the blocks around the split.
    first_raw = _refine_split(timing.slowness, min(k * block, n - 1), block, midpoint)
    start_step = int(timing.steps[first_raw])
    end_step = int(timing.steps[min((last_block + 1) * block, n) - 1])

    # Back to the logged units for the message: slowness is +-log(value).
    sign = -1.0 if timing.higher_is_faster else 1.0
    value_before, value_after = float(np.exp(sign * before)), float(np.exp(sign * after))
    if timing.higher_is_faster:
        title = f"{timing.label} fell {-float(np.expm1(-effect)):.0%} from step {start_step}"
    else:
        title = f"{timing.label} rose {slowdown:.0%} from step {start_step}"
    message = (
        f"{timing.label} went from a median of {value_before:.4g} {timing.unit} before step "
        f"{start_step} to {value_after:.4g} {timing.unit} after it: steps are "
        f"{slowdown:.0%} slower (a median shift of {z:.0f} standard errors), sustained "
        f"until step {end_step}" + (" (the end of the log)." if last_block == m - 1 else ".")
    )
    return Finding(
        detector=NAME,
        title=title,
        severity=Severity.WARNING,
        metric=timing.metric,
        step_start=start_step,
        step_end=end_step,
        message=message,
        evidence={
            "median_before": value_before,
            "median_after": value_after,
            "slowdown": slowdown,
            "z": z,
            "unit": timing.unit,
        },
        fixes=(
            f"Look for work added at step {start_step}: a debug or profiling hook, an extra "
            "forward pass or metric computed every step, more frequent logging or evaluation",
            "Check the input pipeline: starved dataloader workers (num_workers, prefetch), "
            "slow or remote storage, a cache that stopped hitting",
            "Check the machine: another job on the same GPU/CPU, thermal throttling, a "
            "different node after a resume",
            "If the work per step grew on purpose (batch size, sequence length), suppress "
            "this finding in .trainspotter.yml",
        ),
    )


def _refine_split(
    y: npt.NDArray[np.float64],
    k: int,
    reach: int,
    midpoint: float,
    *,
    lowest: int = 1,
    highest: int | None = None,
) -> int:
    """The split within `reach` points of `k` (and within [lowest, highest]) that puts the
    most points on the right side of `midpoint` (below before the split, above after it);
    the earliest of equally good splits."""
    top = y.size - 1 if highest is None else min(highest, y.size - 1)
    lo, hi = max(k - reach, lowest, 1), max(min(k + reach, top), max(lowest, 1))
    above = (y >= midpoint).astype(np.int64)
    below_before = np.concatenate(([0], np.cumsum(1 - above)))  # [j] = below among y[:j]
    above_after = np.concatenate((np.cumsum(above[::-1])[::-1], [0]))  # [j] = above in y[j:]
    splits = np.arange(lo, hi + 1)
    score = below_before[splits] + above_after[splits]
    return int(splits[int(np.argmax(score))])


DETECTOR = ThroughputDetector()
