"""The flat tail of one loss curve: smoothing, where the flat stretch starts, its trend,
and the context (LR, eval loss) the verdicts read."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import stats
from trainspotter.detectors.base import fmt
from trainspotter.detectors.plateau.params import MONOTONE_TAU, SMOOTH_FRACTION, PlateauParams
from trainspotter.model import FloatArray


@dataclass(frozen=True)
class Plateau:
    start_step: int
    flat_fraction: float
    start_level: float
    flat_level: float
    improvement: float
    best_level: float
    """The lowest smoothed level anywhere in the run."""
    clear_best_level: float
    """`best_level` raised by twice the smoothing error (`stats.smoothing_error`): how low
    the curve clearly went. On a flat noisy curve the smoothed minimum and the highest
    smoothed point of the start sit that far apart by chance alone (a 5-point window over
    a per-batch loss with 18% scatter wiggles by ~10%)."""
    still_falling: bool


def _units(value: float, in_log: bool) -> float:
    if not in_log:
        return value
    try:
        return float(10.0**value)
    except OverflowError:  # a loss near the float limit (1.8e308): its log rounds above
        return math.inf


def find_plateau(x: FloatArray, y: FloatArray, params: PlateauParams) -> Plateau | None:
    # In log space for positive losses: a loss still falling from 0.2 to 0.02 is improving
    # (tenfold), however flat that looks next to a start at 2.5.
    t, in_log = stats.log_if_positive(y)
    xs, ts = stats.smooth_curve(x, t, window_fraction=SMOOTH_FRACTION)
    m = ts.size
    if m < 3:
        return None
    head = max(1, m // 10)
    # The raw first points too: a wide smoothing window would blur a drop that happens
    # within the first few percent of the run.
    start_t = max(float(np.max(ts[:head])), float(np.median(t[:5])))
    flat_t = float(np.median(ts[-head:]))
    gain = start_t - flat_t
    wiggle = 2.0 * stats.smoothing_error(t, SMOOTH_FRACTION)
    tolerance = max(params.flat_tolerance * max(gain, 0.0), wiggle)
    suffix_max = np.maximum.accumulate(ts[::-1])[::-1]
    within = suffix_max - flat_t <= tolerance
    # No flat stretch at all (the smoothed end itself is off the final level): length 0.
    start_step = int(xs[int(np.argmax(within))]) if bool(within[-1]) else int(x[-1])
    flat = x >= start_step
    flat_trend = stats.trend_test(x[flat], y[flat])
    if flat_trend is not None:
        still_falling = flat_trend.z < 0 and flat_trend.p_value < params.alpha
    else:  # too few flat points to test (under 8): the whole log's trend decides
        still_falling = is_falling(stats.trend_test(x, y), params.alpha)
    start_level, flat_level = _units(start_t, in_log), _units(flat_t, in_log)
    return Plateau(
        start_step=start_step,
        flat_fraction=1.0 - stats.span_fraction(x, start_step),
        start_level=start_level,
        flat_level=flat_level,
        improvement=start_level - flat_level,
        best_level=_units(float(np.min(ts)), in_log),
        clear_best_level=_units(min(float(np.min(ts)) + wiggle, start_t), in_log),
        still_falling=still_falling,
    )


@dataclass(frozen=True)
class Context:
    """What the verdicts need about one loss and the run's LR."""

    name: str
    first: int
    last: int
    plateau: Plateau
    start_abs: float
    lr_x: FloatArray
    lr_y: FloatArray
    eval_x: FloatArray
    """The eval loss next to a train loss (empty when there is none)."""
    eval_y: FloatArray
    per_epoch: bool
    """The log's step is an epoch count (each point aggregates a whole epoch)."""

    @property
    def has_lr(self) -> bool:
        return self.lr_y.size >= 2 and float(self.lr_y.max()) > 0

    @property
    def peak_lr(self) -> float:
        return float(self.lr_y.max()) if self.has_lr else float("nan")

    def lr_at(self, step: float) -> float:
        """The last logged LR at or before `step` (the first one before any is logged)."""
        i = int(np.searchsorted(self.lr_x, step, side="right")) - 1
        return float(self.lr_y[max(i, 0)])

    @property
    def flat_text(self) -> str:
        p = self.plateau
        return (
            f"{self.name} has been flat at about {fmt(p.flat_level)} since step "
            f"{p.start_step}, the last {fmt(100 * p.flat_fraction)}% of the run (steps "
            f"{p.start_step}-{self.last})"
        )


def is_falling(trend: stats.Trend | None, alpha: float) -> bool:
    """A significant downward trend, or a near-monotone one: the autocorrelation correction
    blunts the p-value of a curve so smooth that its detrended ranks look correlated."""
    if trend is None or trend.tau >= 0:
        return False
    return trend.p_value < alpha or trend.tau <= -MONOTONE_TAU
