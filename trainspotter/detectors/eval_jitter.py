"""The noise of an eval curve as a rise from its best must beat it.

Consecutive checkpoints evaluated on one fixed eval set share most of their errors, so an
eval level wanders by more than neighbouring evaluations differ (autocorrelated noise); a
small eval set with a few hard examples jitters with heavy tails. A rise judged against
the point-to-point noise alone reads both as a rise. `EvalJitter` holds the point-to-point
sigma and the lag-1 autocorrelation r of the evaluations (`lag1_autocorrelation`: ranks,
as `stats.trend_test` uses, of the evaluations about a fitted parabola, so that a rise, a
U or a hump is signal and one wild evaluation cannot set r; small-sample bias corrected),
and gives what the rise rules
need: the sd of one evaluation about the level (sigma / sqrt(1 - r), since first
differences of AR(1) noise with sd s have sd s sqrt(2 (1 - r))), the sd of a median of m
consecutive evaluations (effective size m (1 - r) / (1 + r)), and `flat_bound`: how far a
FLAT curve's end median sits above its best-of-n pick at 95%. Heavy tails are met by
medians (every level is one) and by `best_of_n_sigmas`, the Gaussian bound beyond which a
single evaluation is a wild one, not a level.

Apart from `eval_rise.py` so both stay one readable unit (< 500 lines).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from trainspotter.detectors import stats
from trainspotter.model import FloatArray

MEDIAN_EFFICIENCY = 1.2533
"""sd of the median of m Gaussian values / (sigma / sqrt(m)), large m (sqrt(pi / 2))."""

CONFIDENCE_Z = 1.645
"""One-sided 95%."""

MIN_LAG1_POINTS = 8
"""Evaluations needed to estimate a lag-1 autocorrelation (fewer: assumed independent)."""

MAX_LAG1 = 0.9
"""The estimate's cap: beyond it a curve is a random walk and no level bound holds."""


@dataclass(frozen=True)
class EvalJitter:
    """An eval curve's noise as a rise from its best must beat it: the point-to-point sigma
    and the lag-1 autocorrelation of the evaluations (consecutive checkpoints share most of
    their errors on a fixed eval set, so the level wanders more than neighbours differ)."""

    sigma: float
    """Point-to-point noise (`curve_noise`)."""
    lag1: float
    """Lag-1 autocorrelation of the detrended evaluations (0 to `MAX_LAG1`)."""

    @property
    def inflation(self) -> float:
        """(1 + r) / (1 - r): the variance of a mean of m AR(1) values is this times the
        independent one (m / inflation is the effective sample size)."""
        return (1.0 + self.lag1) / (1.0 - self.lag1)

    @property
    def level_sigma(self) -> float:
        """The sd of one evaluation about the curve's level: first differences of AR(1)
        noise with sd s have sd s sqrt(2 (1 - r)), so the point-to-point sigma is
        s sqrt(1 - r) and understates s."""
        return self.sigma / math.sqrt(1.0 - self.lag1)

    def median_sd(self, m: int) -> float:
        """The sd of the median of m consecutive evaluations: 1.2533 x the level sigma /
        sqrt(effective m), never more than one evaluation's."""
        return self.level_sigma * min(1.0, MEDIAN_EFFICIENCY * math.sqrt(self.inflation / m))

    def flat_bound(self, n: int, width: int, recent: int, alpha: float) -> float:
        """How far above the least of n values (each a median of `width`) the median of the
        `recent` last evaluations of a FLAT curve with this noise stays at 95%: the
        Bonferroni bound for the best-of-n pick (valid under any dependence) plus the
        one-sided 95% spread of the recent median."""
        best = best_of_n_sigmas(n, alpha) * self.median_sd(width)
        return best + CONFIDENCE_Z * self.median_sd(recent)


def best_of_n_sigmas(n: int, alpha: float) -> float:
    """The least of n values of one Gaussian noise sits at most this many sigma below its
    mean with probability 1 - alpha (Bonferroni: Phi^-1(1 - alpha / n), any dependence)."""
    # Lower tail, clamped: 1 - alpha / n rounds to 1.0 for a tiny alpha (no quantile).
    return -NormalDist().inv_cdf(min(max(alpha / n, 1e-300), 0.5))


def _detrended(y: FloatArray) -> FloatArray:
    """The evaluations about a fitted parabola (block medians beyond
    `stats.MAX_TREND_POINTS`): a rise, a U or a hump is signal, not autocorrelation; a
    straight line leaves a hump in the residuals, which then read as correlated noise."""
    x, y = stats.block_median(np.linspace(0.0, 1.0, y.size), y)
    return np.asarray(y - np.polyval(np.polyfit(x, y, 2), x), dtype=np.float64)


def lag1_autocorrelation(detrended: FloatArray) -> float:
    """Lag-1 autocorrelation of the detrended evaluations (of their ranks, as
    `stats.trend_test` does, so one wild evaluation cannot set it), corrected for its
    small-sample bias (about -(4 + 4 r) / m for m points about a fitted parabola, simulated
    for m = 8-80 and r = 0-0.8: the mean corrected estimate is 0.02-0.14 at r = 0, 0.4-0.75
    at r = 0.8) and clipped to [0, `MAX_LAG1`]; 0 below `MIN_LAG1_POINTS`."""
    m = int(detrended.size)
    if m < MIN_LAG1_POINTS:
        return 0.0
    ranks = detrended.argsort().argsort().astype(np.float64)
    ranks -= ranks.mean()
    denom = float(np.dot(ranks, ranks))
    if denom <= 0:
        return 0.0
    r = float(np.dot(ranks[:-1], ranks[1:])) / denom
    return min(max(r + (4.0 + 4.0 * max(r, 0.0)) / m, 0.0), MAX_LAG1)


def eval_jitter(y: FloatArray, start: int) -> EvalJitter:
    """The curve's jitter, its autocorrelation judged on the evaluations from `start` (the
    stretch a rise is claimed over; at least the last `MIN_LAG1_POINTS`)."""
    start = max(min(start, int(y.size) - MIN_LAG1_POINTS), 0)
    if y.size - start < MIN_LAG1_POINTS:
        return EvalJitter(curve_noise(y), 0.0)
    return EvalJitter(curve_noise(y), lag1_autocorrelation(_detrended(y[start:])))


def curve_noise(y: FloatArray) -> float:
    """Two estimates of one eval noise over the whole curve, each inflatable only (first
    differences by a steep descent, second differences by sharp bends): the smaller."""
    return min(stats.noise_scale(y), stats.second_difference_sigma(y))
