"""The regression detector's measurements: each returns `ComparedValue`s, never findings.

`eval_values`: final and best value of every quality eval metric both runs log, against
the eval jitter. `curve_values`: each training loss at matched steps. `timing_value`: the
median step time (or throughput) over the common stretch. The detector's module turns the
regressed ones into findings. Every function works on the candidate's steps (the baseline
already aligned, see `align.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.compare.model import ComparedValue
from trainspotter.detectors import stats
from trainspotter.detectors.eval_noise import higher_is_better, is_quality_metric
from trainspotter.detectors.regression.params import RegressionParams
from trainspotter.model import FloatArray, Run, Series

TIMING_BLOCKS = 10
"""Each run's timing is cut into this many blocks; the spread of their medians is how
much the machine's load moved the timing within a run."""


def _finite(series: Series) -> tuple[FloatArray, FloatArray]:
    keep = series.finite
    return series.steps[keep].astype(np.float64), series.values[keep]


def eval_jitter(values: FloatArray) -> float:
    """Evaluation-to-evaluation jitter (sigma) over the later half of the evaluations:
    second differences cancel the curve's smooth trend; the later half is where the run
    is judged, and early evaluations move for real."""
    return stats.second_difference_sigma(values[len(values) // 2 :])


def _tolerance(
    sigma: float, baseline: float, higher: bool, params: RegressionParams
) -> tuple[float, str]:
    """The larger of `noise_z` x the jitter and `margin` x the baseline's level (its
    error, 1 - value, for a higher-is-better metric in [0, 1])."""
    noise = params.noise_z * sigma
    error_like = higher and 0.0 <= baseline <= 1.0
    level = 1.0 - baseline if error_like else abs(baseline)
    margin = params.margin * level
    if margin >= noise:
        of = "the baseline's error (1 - value)" if error_like else "|baseline value|"
        return margin, f"margin {params.margin:g} x {of} {level:.4g}"
    return noise, f"{params.noise_z:g} x the eval jitter of both runs {sigma:.4g}"


def eval_values(
    candidate: Run, baseline: dict[str, Series], params: RegressionParams
) -> tuple[list[ComparedValue], list[str]]:
    """Final and best value of each quality eval metric in both runs (and notes on the
    metrics that could not be compared)."""
    out: list[ComparedValue] = []
    notes: list[str] = []
    for metric in sorted(set(candidate.metrics) & set(baseline)):
        higher = higher_is_better(metric)
        if not is_quality_metric(metric) or higher is None:
            continue
        steps_c, values_c = _finite(candidate.metrics[metric])
        steps_b, values_b = _finite(baseline[metric])
        if min(len(values_c), len(values_b)) < params.min_eval_points:
            notes.append(
                f"{metric}: fewer than {params.min_eval_points} finite evaluations in a run"
            )
            continue
        sigma = math.hypot(eval_jitter(values_c), eval_jitter(values_b))
        sign = -1.0 if higher else 1.0
        best = np.argmax if higher else np.argmin
        i_c, i_b = int(best(values_c)), int(best(values_b))
        for quantity, at_c, at_b in (("final", -1, -1), ("best", i_c, i_b)):
            value_c, value_b = float(values_c[at_c]), float(values_b[at_b])
            tolerance, basis = _tolerance(sigma, value_b, bool(higher), params)
            worse_by = sign * (value_c - value_b)
            out.append(
                ComparedValue(
                    metric=metric,
                    quantity=quantity,
                    candidate=value_c,
                    baseline=value_b,
                    candidate_step=int(steps_c[at_c]),
                    baseline_step=int(steps_b[at_b]),
                    worse_by=worse_by,
                    tolerance=tolerance,
                    tolerance_basis=basis,
                    regressed=worse_by > tolerance and tolerance > 0,
                )
            )
    return out, notes


@dataclass(frozen=True)
class WorseStretch:
    """The longest stretch over which a loss stayed worse than the baseline's."""

    first_step: int
    last_step: int
    points: int
    median_ratio: float


def curve_values(
    candidate: Run, baseline: dict[str, Series], params: RegressionParams
) -> tuple[list[tuple[ComparedValue, WorseStretch | None]], list[str]]:
    """Each training loss both runs log, compared at the candidate's steps."""
    out: list[tuple[ComparedValue, WorseStretch | None]] = []
    notes: list[str] = []
    for metric in sorted(set(candidate.metrics) & set(baseline)):
        if not names.is_loss_like(metric) or names.is_eval(metric):
            continue
        compared = _curve(metric, candidate.metrics[metric], baseline[metric], params)
        if compared is None:
            notes.append(f"{metric}: too few matched steps to compare the curves")
        else:
            out.append(compared)
    return out, notes


def _curve(
    metric: str, candidate: Series, baseline: Series, params: RegressionParams
) -> tuple[ComparedValue, WorseStretch | None] | None:
    steps_c, values_c = _finite(candidate)
    steps_b, values_b = _finite(baseline)
    keep_c, keep_b = values_c > 0, values_b > 0
    steps_c, values_c = steps_c[keep_c], np.log(values_c[keep_c])
    steps_b, values_b = steps_b[keep_b], np.log(values_b[keep_b])
    if min(len(steps_c), len(steps_b)) < params.min_curve_points:
        return None
    low, high = max(steps_c[0], steps_b[0]), min(steps_c[-1], steps_b[-1])
    inside = (steps_c >= low) & (steps_c <= high)
    if int(np.count_nonzero(inside)) < params.min_curve_points:
        return None
    steps = steps_c[inside]
    log_ratio = values_c[inside] - np.interp(steps, steps_b, values_b)
    window = stats.window_points(len(steps), params.curve_window_fraction, 5, 200)
    smoothed = stats.rolling_median(log_ratio, window, center=True)
    in_range_b = values_b[(steps_b >= low) & (steps_b <= high)]
    sigma = math.hypot(stats.noise_scale(values_c[inside]), stats.noise_scale(in_range_b))
    # A median of `window` points has a standard error of about 1.25 sigma / sqrt(window).
    noise = params.noise_z * 1.2533 * sigma / math.sqrt(window)
    threshold = max(math.log(params.curve_min_ratio), noise)
    worse = smoothed > threshold
    stretch = None
    runs = stats.episodes(worse)
    if runs:
        first, last = max(runs, key=lambda r: r[1] - r[0])
        if (last - first + 1) >= params.curve_min_fraction * len(steps):
            stretch = WorseStretch(
                first_step=int(steps[first]),
                last_step=int(steps[last]),
                points=last - first + 1,
                median_ratio=math.exp(float(np.median(log_ratio[first : last + 1]))),
            )
    basis = (
        f"smoothed ratio above {math.exp(threshold):.3g} (the larger of curve_min_ratio "
        f"{params.curve_min_ratio:g} and {params.noise_z:g} x the curves' noise) over at "
        f"least {params.curve_min_fraction:.0%} of {len(steps)} matched steps"
    )
    overall = math.exp(float(np.median(log_ratio)))
    value = ComparedValue(
        metric=metric,
        quantity="curve",
        candidate=float(np.exp(values_c[inside][-1])),
        baseline=float(np.exp(np.interp(steps[-1], steps_b, values_b))),
        candidate_step=int(steps[-1]),
        baseline_step=None,
        worse_by=(stretch.median_ratio if stretch else overall) - 1.0,
        tolerance=math.exp(threshold) - 1.0,
        tolerance_basis=basis,
        regressed=stretch is not None,
    )
    return value, stretch


def _timing(run_metrics: dict[str, Series]) -> tuple[str, FloatArray, FloatArray] | None:
    """(metric, steps, slowness) with slowness = log seconds per step (higher = slower)."""
    step_time = run_metrics.get(names.STEP_TIME)
    if step_time is not None:
        steps, values = _finite(step_time)
        keep = values > 0
        return names.STEP_TIME, steps[keep], np.log(values[keep])
    throughput = run_metrics.get(names.THROUGHPUT)
    if throughput is not None:
        steps, values = _finite(throughput)
        keep = values > 0
        return names.THROUGHPUT, steps[keep], -np.log(values[keep])
    loss = run_metrics.get(names.TRAIN_LOSS)
    if loss is not None:
        keep = np.isfinite(loss.wall_time)
        steps, wall = loss.steps[keep].astype(np.float64), loss.wall_time[keep]
        if len(steps) > 2:
            per_step = np.diff(wall) / np.diff(steps)
            good = np.isfinite(per_step) & (per_step > 0)
            return "wall-clock seconds per step", steps[1:][good], np.log(per_step[good])
    return None


def _block_spread(slowness: FloatArray) -> float:
    """Robust sigma of the medians of `TIMING_BLOCKS` blocks: the load's drift in a run."""
    medians = np.array([np.median(b) for b in np.array_split(slowness, TIMING_BLOCKS)])
    return float(np.median(np.abs(medians - np.median(medians)))) * stats.MAD_TO_SIGMA


def timing_value(
    candidate: Run, baseline: dict[str, Series], params: RegressionParams
) -> ComparedValue | None:
    """The median slowness of both runs over their common steps, when both log the same
    kind of timing (step time, throughput, or wall-clock times of the loss)."""
    found_c, found_b = _timing(candidate.metrics), _timing(baseline)
    if found_c is None or found_b is None or found_c[0] != found_b[0]:
        return None
    metric, steps_c, slow_c = found_c
    _, steps_b, slow_b = found_b
    if min(len(steps_c), len(steps_b)) < params.min_timing_points:
        return None
    low, high = max(steps_c[0], steps_b[0]), min(steps_c[-1], steps_b[-1])
    slow_c = slow_c[(steps_c >= low) & (steps_c <= high)]
    slow_b = slow_b[(steps_b >= low) & (steps_b <= high)]
    if min(len(slow_c), len(slow_b)) < params.min_timing_points:
        return None
    shift = float(np.median(slow_c) - np.median(slow_b))
    sigma = math.hypot(_block_spread(slow_c), _block_spread(slow_b))
    threshold = max(math.log1p(params.min_slowdown), params.noise_z * sigma)
    in_units = metric == names.THROUGHPUT
    median_c = float(np.exp(-np.median(slow_c) if in_units else np.median(slow_c)))
    median_b = float(np.exp(-np.median(slow_b) if in_units else np.median(slow_b)))
    return ComparedValue(
        metric=metric,
        quantity="median",
        candidate=median_c,
        baseline=median_b,
        candidate_step=None,
        baseline_step=None,
        worse_by=math.expm1(shift),
        tolerance=math.expm1(threshold),
        tolerance_basis=(
            f"the larger of min_slowdown {params.min_slowdown:g} and {params.noise_z:g} x the "
            f"drift of {TIMING_BLOCKS} block medians within each run"
        ),
        regressed=shift > threshold,
    )
