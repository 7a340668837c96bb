"""The overfitting detector's trend rule: a noisy eval loss drifting up after its minimum.

A noisy eval curve (a small validation set, many evaluations) never passes a test against
its single-point noise (steps 2 and 5 of `overfitting`), yet a drift over many noisy points
is well established even when each point is not. This rule asks the many points: a
significant upward Mann-Kendall trend (`stats.trend_test`, autocorrelation-corrected) over
the evaluations after the (smoothed) minimum's window, and an effect size, the median of
the last third of those evaluations against the median of their first third, both a
relative floor and beyond the standard error of the two medians, each over its third's
effective size when the evaluations are autocorrelated (`eval_jitter.EvalJitter`).

Apart from `overfitting.py` so the detector module stays one readable unit (< 500 lines).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import stats
from trainspotter.detectors.eval_jitter import MEDIAN_EFFICIENCY, eval_jitter
from trainspotter.detectors.eval_rise import (
    TrainTrend,
    degrading_title,
    percent,
    smoothing_width,
    train_clause,
)
from trainspotter.model import FloatArray

MAD_TO_SIGMA = 1.4826
"""sigma of Gaussian values / their median absolute deviation."""


@dataclass(frozen=True)
class TrendRise:
    """An eval loss whose evaluations after its minimum trend upward."""

    k: int
    """Index of the smoothed minimum."""
    width: int
    min_level: float
    start: int
    """Index of the first evaluation judged (the first after the minimum's window)."""
    third: int
    """Evaluations in each third whose medians are compared."""
    early: float
    """Median of the first `third` judged evaluations."""
    late: float
    """Median of the last `third` evaluations."""
    stderr: float
    """Standard error of late - early (each third's own robust spread)."""
    tau: float
    p_value: float
    level: float

    @property
    def rise(self) -> float:
        return self.late - self.early


def _spread(values: FloatArray) -> float:
    """Robust sigma of one third's values around their median (MAD x 1.4826)."""
    return MAD_TO_SIGMA * float(np.median(np.abs(values - np.median(values))))


def trend_rise(
    x: FloatArray,
    y: FloatArray,
    min_points: int,
    alpha: float,
    min_rise: float,
    smoothing_fraction: float,
) -> TrendRise | None:
    """The evaluations after the smoothed minimum's window (`min_points` or more) trend
    upward at `alpha` (Mann-Kendall, autocorrelation-corrected), and the median of their
    last third is at least `min_rise` of the first third's median above it and beyond the
    standard error of the difference of the two medians (each: 1.2533 x sigma /
    sqrt(effective m), sigma the larger of its third's own MAD spread, which the trend
    within a third widens, and the curve's level sigma, which autocorrelation widens:
    correlated evaluations cluster within a third and understate the spread); None
    otherwise. The trend test carries the significance; the standard error keeps the
    quoted effect from being one third's spikes.

    The minimum's window itself is left out: its values are low because they were picked
    as the lowest, and a trend test that starts on them finds a rise in a flat curve."""
    n = int(y.size)
    width = smoothing_width(n, smoothing_fraction)
    smooth = stats.rolling_median(y, width, center=True) if width > 1 else y
    k = int(np.argmin(smooth))
    start = k + width // 2 + 1
    xs, ys = x[start:], y[start:]
    if ys.size < min_points:
        return None
    trend = stats.trend_test(xs, ys)
    if trend is None or trend.tau <= 0 or trend.p_value >= alpha:
        return None
    third = int(ys.size) // 3
    early_values, late_values = ys[:third], ys[-third:]
    early, late = float(np.median(early_values)), float(np.median(late_values))
    level = abs(early) if early != 0 else stats.level_scale(y)
    # Each third's median: its own spread or the curve's level sigma (autocorrelated
    # evaluations cluster within a third), over its effective size (`EvalJitter`).
    jitter = eval_jitter(y, start)
    stderr = math.hypot(
        *(
            max(_spread(values), jitter.level_sigma) / jitter.level_sigma * jitter.median_sd(third)
            if jitter.level_sigma > 0
            else MEDIAN_EFFICIENCY * _spread(values) / math.sqrt(third)
            for values in (early_values, late_values)
        )
    )
    if late - early < max(min_rise * level, stderr):
        return None
    min_level = float(smooth[k])
    return TrendRise(
        k, width, min_level, start, third, early, late, stderr, trend.tau, trend.p_value, level
    )


def trend_text(
    metric: str, x: FloatArray, rise: TrendRise, trend: TrainTrend
) -> tuple[str, str, dict[str, float | int]]:
    """The trend rule's title, message and evidence, in numbers that say what they are."""
    m, first = rise.third, rise.start
    rise_pct = percent(rise.rise, rise.level)
    smoothed = f" (smoothed, median of {rise.width})" if rise.width > 1 else ""
    judged = x.size - first
    sigmas = f"{rise.rise / rise.stderr:.1f}x" if rise.stderr > 0 else "with no spread, beyond"
    message = (
        f"{metric} trends upward after its minimum {rise.min_level:.4g}{smoothed} at step "
        f"{int(x[rise.k])}: over the {judged} evaluations from step {int(x[first])} to "
        f"{int(x[-1])}, the median of the last {m} (steps {int(x[-m])}-{int(x[-1])}) is "
        f"{rise.late:.4g}, {rise_pct:.0f}% above the median of the first {m} (steps "
        f"{int(x[first])}-{int(x[first + m - 1])}), {rise.early:.4g}; {sigmas} the standard "
        f"error of the two medians ({rise.stderr:.3g}), and a Mann-Kendall trend test "
        f"(autocorrelation-corrected) gives tau {rise.tau:.2f}, p = {rise.p_value:.2g}: each "
        f"evaluation is noisy, the drift over {judged} of them is not. Meanwhile "
        f"{train_clause(trend)}"
    )
    if trend.state() == "falling":
        message += "."
        title = f"{metric} rising from its minimum while {trend.name} falls (overfitting)"
    else:
        message += (
            ": not overfitting's textbook signature, but the model the run ends with is "
            "clearly worse on the eval set than earlier in the run."
        )
        drift = f"trends up, the last {m} evaluations' median {rise_pct:.0f}% above the first {m}'s"
        title = degrading_title(metric, trend, rise_pct, drift)
    evidence: dict[str, float | int] = {
        "min_step": int(x[rise.k]),
        "min_level": rise.min_level,
        "end_level": rise.late,
        "rise": rise.rise,
        "rise_percent": rise_pct,
        "early_level": rise.early,
        "third_evaluations": m,
        "median_stderr": rise.stderr,
        "trend_tau": rise.tau,
        "trend_p": rise.p_value,
        "evaluations": int(x.size),
        "evaluations_after_min": judged,
    }
    return title, message, evidence
