"""Robust statistics shared by the detectors, fitted to training curves.

Training curves are noisy, autocorrelated, heavy-tailed and logged at wildly different
frequencies, so everything here is rank- or median-based and windows are counted in logged
points, not raw steps.

- Moving windows (median, min, sum, max): bottleneck's C moving-window functions (the
  median a double heap, O(n log w)): the well-kept choice over a hand-written loop, 4-5x
  faster than pandas' rolling median on a million points and ~100x cheaper to import
  than pandas (whose import was a tenth of a million-step `analyze`). `_moving` gives
  them pandas' rolling semantics, which the detectors were written against (and the
  tests compare with): +-inf skipped like NaN, `min_periods`, windows cut at the ends.
- Trend: the Mann-Kendall test with an autocorrelation correction (the variance of S
  inflated by the AR(1) effective-sample-size factor of the detrended ranks), run on a
  block-median decimated series (<= `MAX_TREND_POINTS` points, so its O(m^2) pair count
  stays small whatever the log length), and the Theil-Sen slope
  on the same points. The p-value alone is never a verdict: detectors compare the fitted
  change against the noise level (`noise_scale`).

No detector-specific logic lives here. One module over ~500 lines on purpose: a flat
library of small independent functions, each found by name (`stats.trend_test`), with
nothing to untangle by splitting it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import bottleneck as bn
import numpy as np
import numpy.typing as npt

from trainspotter.model import FloatArray

MAD_TO_SIGMA = 1.4826
"""MAD x 1.4826 estimates the standard deviation of Gaussian noise."""

MAX_TREND_POINTS = 400
"""Decimation target for rank trend tests: 400 points give 79,800 pairs (fast) and keep
enough resolution for any drift that spans more than 1/400 of a window."""


def finite_xy(steps: npt.ArrayLike, values: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """The (step, value) pairs whose value is finite, as float arrays."""
    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(y)
    return x[keep], y[keep]


def _moving(
    function: Callable[..., FloatArray],
    values: npt.ArrayLike,
    window: int,
    min_periods: int,
    *,
    center: bool = False,
) -> FloatArray:
    """A bottleneck moving-window `function` with pandas' `rolling(window, min_periods,
    center)` semantics: NaN and +-inf are skipped, a window with fewer than `min_periods`
    values gives NaN, a centred window covers `(window - 1) // 2` points after its point."""
    if not 1 <= min_periods <= window:
        raise ValueError(f"min_periods {min_periods} must be between 1 and window {window}")
    y = np.asarray(values, dtype=np.float64)
    n = y.size
    if n == 0:
        return np.empty(0, dtype=np.float64)
    # The points a window reaches before and after its own, cut to the series (a window
    # longer than the series covers all of it: never allocate for the rest).
    after = (window - 1) // 2 if center else 0
    before = min(window - 1 - after, n - 1)
    after = min(after, n - 1)
    width = before + after + 1
    if width < min_periods:
        return np.full(n, np.nan)
    y = np.where(np.isinf(y), np.nan, y)
    if after:
        y = np.concatenate([y, np.full(after, np.nan)])
    return np.asarray(function(y, width, min_count=min_periods)[after : after + n], np.float64)


def _shifted(values: npt.ArrayLike) -> FloatArray:
    """The series one point later (the first point NaN), as pandas' `shift(1)`."""
    y = np.asarray(values, dtype=np.float64)
    return np.concatenate([np.full(min(1, y.size), np.nan), y[:-1]])


def rolling_median(values: npt.ArrayLike, window: int, *, center: bool = False) -> FloatArray:
    """Median over the last `window` points (or centred), NaN-aware, O(n log w).

    The first points use as many as exist (min_periods=1).
    """
    return _moving(bn.move_median, values, window, 1, center=center)


def trailing_robust_z(
    values: npt.ArrayLike, window: int, *, floor: float = 0.0
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Modified z-score of each point against the `window` points *before* it.

    Returns (z, baseline_median, baseline_sigma). Excluding the point itself means a
    spike cannot inflate its own baseline. `floor` is a minimum sigma (in value units) so
    a perfectly flat stretch does not turn a rounding wiggle into an infinite z.
    NaN where the baseline has fewer than 3 finite points.
    """
    y = np.asarray(values, dtype=np.float64)
    prior = _shifted(y)
    med = _moving(bn.move_median, prior, window, 3)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, skipped as pandas did
        dev = np.abs(prior - med)
    # The MAD of the baseline window: deviations of the window's points from the median
    # known at the window's end. Using the current median for each lagged point is the
    # standard streaming approximation; exact up to drift within one window.
    mad = _moving(bn.move_median, dev, window, 3)
    sigma = np.maximum(mad * MAD_TO_SIGMA, floor)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (y - med) / sigma
    z[~np.isfinite(sigma) | (sigma <= 0)] = np.nan
    return z, med, sigma


def noise_scale(values: npt.ArrayLike) -> float:
    """Point-to-point noise sigma of a curve, robust to trend and outliers.

    MAD of first differences / sqrt(2) (differencing removes a slow trend; the median
    ignores spikes). 0.0 when fewer than 3 finite points.
    """
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    if y.size < 3:
        return 0.0
    diffs = np.diff(y)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return mad * MAD_TO_SIGMA / math.sqrt(2.0)


def second_difference_sigma(values: npt.ArrayLike) -> float:
    """Jitter sigma from second differences: y[i+1] - 2 y[i] + y[i-1] cancels a linear trend
    and most of a smooth curve, and has variance 6 sigma^2 on white noise. The median of
    their absolute values (x 1.4826 / sqrt 6) ignores a single wild point. 0.0 when fewer
    than 3 finite points."""
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    if y.size < 3:
        return 0.0
    return float(np.median(np.abs(np.diff(y, n=2)))) * MAD_TO_SIGMA / math.sqrt(6.0)


def block_median(
    steps: npt.ArrayLike, values: npt.ArrayLike, max_points: int = MAX_TREND_POINTS
) -> tuple[FloatArray, FloatArray]:
    """Decimate to at most `max_points` points by the median of equal-count blocks.

    Non-finite values are dropped first. Blocks of medians keep a drift and shed spikes,
    which is what a trend test wants.
    """
    x, y = finite_xy(steps, values)
    n = y.size
    if n <= max_points:
        return x, y
    block = math.ceil(n / max_points)
    usable = (n // block) * block
    xs = np.median(x[:usable].reshape(-1, block), axis=1)
    ys = np.median(y[:usable].reshape(-1, block), axis=1)
    if usable < n:
        xs = np.append(xs, np.median(x[usable:]))
        ys = np.append(ys, np.median(y[usable:]))
    return xs, ys


@dataclass(frozen=True)
class Trend:
    """Result of `trend_test`: direction and strength of a monotone trend."""

    n: int
    """Points the test ran on (after decimation)."""
    tau: float
    """Kendall's tau between order and value, -1..1."""
    z: float
    """Mann-Kendall z after the autocorrelation correction."""
    p_value: float
    """Two-sided p-value."""
    slope: float
    """Theil-Sen slope, value units per step."""
    intercept: float
    """Theil-Sen intercept (value at step 0)."""


def _normal_two_sided_p(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


def theil_sen(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """Median of pairwise slopes and the matching median intercept. O(m^2) memory: call
    on decimated data (`block_median`)."""
    if x.size < 2:
        return 0.0, float(y[0]) if y.size else 0.0
    i, j = np.triu_indices(x.size, k=1)
    dx = x[j] - x[i]
    ok = dx != 0
    if not np.any(ok):
        return 0.0, float(np.median(y))
    slope = float(np.median((y[j] - y[i])[ok] / dx[ok]))
    intercept = float(np.median(y - slope * x))
    return slope, intercept


def trend_test(steps: npt.ArrayLike, values: npt.ArrayLike) -> Trend | None:
    """Mann-Kendall trend test, corrected for autocorrelation, plus the Theil-Sen slope.

    Runs on a block-median decimation of the finite points. None below 8 points.
    The variance of S is multiplied by (1 + r1) / (1 - r1), r1 the lag-1 autocorrelation
    of the detrended ranks, so a smooth but noisy curve does not look "significant".
    Why not Hamed & Rao's sum over significant lags: on AR(1) noise with phi = 0.8 (300
    points, 200 seeds) it still rejected 27% of the time at alpha = 0.05, because
    finite-sample autocorrelations are biased low; the AR(1) factor rejected 8% (3.5%,
    6% and 13% at phi = 0, 0.5, 0.95), with unchanged power on a real drift.
    """
    x, y = block_median(steps, values)
    n = int(y.size)
    if n < 8:
        return None
    i, j = np.triu_indices(n, k=1)
    s = float(np.sign(y[j] - y[i]).sum())
    # Tie correction for the variance of S.
    _, counts = np.unique(y, return_counts=True)
    ties = counts[counts > 1]
    var_s = (n * (n - 1) * (2 * n + 5) - float(np.sum(ties * (ties - 1) * (2 * ties + 5)))) / 18.0
    slope, intercept = theil_sen(x, y)
    # Autocorrelation correction: inflate var(S) by the AR(1) effective-sample-size factor
    # (1 + r1) / (1 - r1), r1 the lag-1 autocorrelation of the detrended ranks.
    detrended = y - slope * x
    ranks = detrended.argsort().argsort().astype(np.float64)
    ranks -= ranks.mean()
    denom = float(np.dot(ranks, ranks))
    factor = 1.0
    if denom > 0:
        lag1 = min(max(float(np.dot(ranks[:-1], ranks[1:])) / denom, 0.0), 0.98)
        factor = (1.0 + lag1) / (1.0 - lag1)
    var_s *= factor
    if var_s <= 0:
        return Trend(n, 0.0, 0.0, 1.0, slope, intercept)
    if s > 0:
        z = (s - 1) / math.sqrt(var_s)
    elif s < 0:
        z = (s + 1) / math.sqrt(var_s)
    else:
        z = 0.0
    tau = s / (0.5 * n * (n - 1))
    return Trend(n, tau, z, _normal_two_sided_p(z), slope, intercept)


def episodes(mask: npt.NDArray[np.bool_], max_gap: int = 0) -> list[tuple[int, int]]:
    """Group True positions of `mask` into (first_index, last_index) episodes, merging
    runs separated by at most `max_gap` False positions. One finding per episode, not per
    point."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > max_gap + 1)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]]))
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def window_points(n: int, fraction: float, minimum: int, maximum: int) -> int:
    """A window length in logged points: `fraction` of the series, clamped. Windows adapt
    to logging frequency because they count points, not steps."""
    return int(min(max(round(n * fraction), minimum), maximum))


# --- Curve-shape helpers shared by spikes, divergence, plateau, loss_floor (and any other
# detector that needs them).

LR_ZERO_FRACTION = 0.01
"""An LR below 1% of its peak is "~0": the optimiser has effectively stopped moving."""


def log_if_positive(values: FloatArray) -> tuple[FloatArray, bool]:
    """Log10 of a series whose finite values are all > 0, else the values unchanged.

    Loss noise is roughly multiplicative (minibatch loss variance scales with the loss),
    so in log space a MAD is stationary along a decaying curve and a jump reads as a ratio.
    Non-finite values stay non-finite.
    """
    finite = values[np.isfinite(values)]
    if finite.size and float(finite.min()) > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log10(values), True
    return values, False


def level_scale(values: npt.ArrayLike) -> float:
    """A robust magnitude of a curve's level, for "a fraction of the level" thresholds.

    max(|median|, IQR) of the finite values: the median for ordinary positive losses, the
    spread for curves that sit near or cross zero (so a relative threshold never collapses
    to nothing). 0.0 when there is no finite value.
    """
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    if y.size == 0:
        return 0.0
    q25, q50, q75 = np.percentile(y, [25, 50, 75])
    return float(max(abs(q50), q75 - q25))


def smooth_curve(
    steps: npt.ArrayLike,
    values: npt.ArrayLike,
    *,
    window_fraction: float = 0.05,
    max_points: int = MAX_TREND_POINTS,
) -> tuple[FloatArray, FloatArray]:
    """A robust smooth of a curve: block-median decimation to <= `max_points`, then a
    centred rolling median over `window_fraction` of the points (at least 3, odd).

    Finite points only. Spikes and minibatch noise are shed; level shifts and trends
    survive. Cost O(n) for the decimation plus O(m log w) on the decimated points.
    """
    x, y = block_median(steps, values, max_points)
    if y.size < 3:
        return x, y
    width = max(3, round(y.size * window_fraction)) | 1
    return x, rolling_median(y, width, center=True)


def smoothing_error(values: npt.ArrayLike, window_fraction: float = 0.05) -> float:
    """How much `smooth_curve(..., window_fraction)` of a flat noisy curve still wiggles:
    the standard error of a median over the raw points one smoothing window spans,
    1.25 x `noise_scale` / sqrt(points). A smoothed excursion smaller than a few of these
    is noise."""
    y = np.asarray(values, dtype=np.float64)
    points = max(3.0, window_fraction * float(np.count_nonzero(np.isfinite(y))))
    return 1.25 * noise_scale(y) / math.sqrt(points)


def trailing_block_baseline(
    values: npt.ArrayLike, window: int, blocks_per_window: int = 4
) -> tuple[FloatArray, FloatArray]:
    """A fast, approximate trailing baseline: (median, noise sigma) per point from the
    `window` or so points before the block the point sits in.

    The series is cut into blocks of window / `blocks_per_window` points; each block gets
    its median and its point-to-point noise (MAD of first differences / sqrt 2, immune to
    a trend); a rolling median over the previous `blocks_per_window` blocks gives every
    point of the next block its baseline. Cost O(n) plus a rolling median over n / block
    points: ~30x cheaper than an exact rolling median of 1e6 points with a window of 100,
    for screening candidates that an exact statistic then confirms. NaN where fewer than
    one earlier block exists (and for NaN-only blocks).
    """
    y = np.asarray(values, dtype=np.float64)
    n = y.size
    block = max(1, window // blocks_per_window)
    m = -(-n // block)
    padded = np.full(m * block, np.nan)
    padded[:n] = y
    rows = padded.reshape(m, block)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks are expected
        centre = np.nanmedian(rows, axis=1)
        if block > 1:
            diffs = np.diff(rows, axis=1)
            mid = np.nanmedian(diffs, axis=1)
            spread = np.nanmedian(np.abs(diffs - mid[:, None]), axis=1)
            spread *= MAD_TO_SIGMA / math.sqrt(2.0)
        else:
            spread = np.full(m, np.nan)
    # Baseline for block k: the previous `blocks_per_window` blocks (shift by one).
    prior_centre = _moving(bn.move_median, _shifted(centre), blocks_per_window, 1)
    prior_spread = _moving(bn.move_median, _shifted(spread), blocks_per_window, 1)
    med = np.repeat(prior_centre, block)[:n]
    sig = np.repeat(prior_spread, block)[:n]
    return med, sig


def final_run_start(mask: npt.NDArray[np.bool_]) -> int | None:
    """Index where the last all-True stretch of `mask` starts, if `mask` ends True; else
    None. ("From which point on does the condition hold until the end?")"""
    if mask.size == 0 or not bool(mask[-1]):
        return None
    false_idx = np.flatnonzero(~mask)
    return int(false_idx[-1]) + 1 if false_idx.size else 0


def lr_zero_step(
    steps: npt.ArrayLike, lr: npt.ArrayLike, fraction: float = LR_ZERO_FRACTION
) -> int | None:
    """The first logged step from which the LR stays below `fraction` of its peak until
    the end of the log, or None if it does not end there (or no finite positive LR)."""
    x, y = finite_xy(steps, lr)
    if y.size == 0:
        return None
    peak = float(y.max())
    if peak <= 0:
        return None
    start = final_run_start(y < fraction * peak)
    return None if start is None else int(x[start])


def span_fraction(steps: npt.ArrayLike, step: float) -> float:
    """Where `step` falls in the logged span of `steps`, 0.0 (first) .. 1.0 (last)."""
    x = np.asarray(steps, dtype=np.float64)
    if x.size == 0:
        return 0.0
    lo, hi = float(x[0]), float(x[-1])
    return 0.0 if hi <= lo else float((step - lo) / (hi - lo))


# --- Helpers shared by overfitting, lr_schedule, grad_norm, throughput and eval_noise
# (and any other detector that needs them).


@dataclass(frozen=True)
class Excursion:
    """How far a curve went above its level just before a step range (`excursion`)."""

    baseline: float
    """Median of the finite points just before the range."""
    sigma: float
    """Point-to-point noise of those points (`noise_scale`), value units."""
    peak: float
    """The highest finite value inside the range; NaN when there is none."""
    peak_step: int
    """The step of `peak`; -1 when there is none."""
    nonfinite_step: int | None
    """The first step inside the range whose value is NaN or +/-Inf, if any."""
    steps: FloatArray
    """The steps inside the range."""
    values: FloatArray
    """The values inside the range, as logged."""

    @property
    def rise(self) -> float:
        """peak - baseline (NaN when the range has no finite value)."""
        return self.peak - self.baseline

    def threshold(self, sigmas: float, fraction: float) -> float:
        """The level a blow-up reaches: `sigmas` noise sigmas and `fraction` of the
        baseline's magnitude above the baseline."""
        return self.baseline + max(sigmas * self.sigma, fraction * abs(self.baseline))

    def first_step_above(self, level: float) -> int | None:
        """The first step inside the range at or above `level`, if any."""
        above = np.flatnonzero(self.values >= level)
        return int(self.steps[above[0]]) if above.size else None

    def ends_above(self, level: float) -> bool:
        """Whether the last three values inside the range sit (in median) at or above
        `level`: the excursion had not recovered when the range ended."""
        tail = self.values[-3:]
        tail = tail[~np.isnan(tail)]
        return bool(tail.size) and float(np.median(tail)) >= level


def excursion(
    steps: npt.ArrayLike,
    values: npt.ArrayLike,
    start_step: float,
    end_step: float,
    baseline_points: int,
) -> Excursion | None:
    """The rise of a curve inside [start_step, end_step] over the median of its last
    `baseline_points` finite points before `start_step` ("did the loss blow up here?").

    None when fewer than 3 finite baseline points exist. O(log n + window) per call.
    """
    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    lo = int(np.searchsorted(x, start_step, side="left"))
    hi = int(np.searchsorted(x, end_step, side="right"))
    _, before_y = finite_xy(x[:lo], y[:lo])
    before_y = before_y[-max(baseline_points, 3) :]
    if before_y.size < 3:
        return None
    inside_x, inside_y = x[lo:hi], y[lo:hi]
    finite = np.isfinite(inside_y)
    nonfinite_step = int(inside_x[~finite][0]) if not bool(finite.all()) else None
    if bool(finite.any()):
        top = int(np.argmax(np.where(finite, inside_y, -np.inf)))
        peak, peak_step = float(inside_y[top]), int(inside_x[top])
    else:
        peak, peak_step = math.nan, -1
    return Excursion(
        baseline=float(np.median(before_y)),
        sigma=noise_scale(before_y),
        peak=peak,
        peak_step=peak_step,
        nonfinite_step=nonfinite_step,
        steps=inside_x,
        values=inside_y,
    )


def step_after(steps: npt.ArrayLike, step: float, points: int) -> float:
    """The logged step `points` points after `step` (the last logged step if the log ends
    first; `step` itself if nothing follows). Windows "the next N logged points" adapt to
    the logging interval."""
    x = np.asarray(steps, dtype=np.float64)
    after = int(np.searchsorted(x, step, side="right"))
    if after >= x.size:
        return float(step)
    return float(x[min(after + max(points, 1) - 1, x.size - 1)])


@dataclass(frozen=True)
class Change:
    """How a curve moved over a step range (`change_over`)."""

    n: int
    """Finite points in the range."""
    start_level: float
    """Median of the first half of those points."""
    end_level: float
    """Median of the second half."""
    tau: float
    """Kendall's tau of the Mann-Kendall test; 0.0 below its 8-point minimum."""
    p_value: float
    """Two-sided p of `trend_test` (autocorrelation-corrected); 1.0 below 8 points."""

    def falling(self, alpha: float = 0.05) -> bool:
        """Still going down: the second half sits lower and, where the test can run
        (>= 8 points), the downward trend is significant at `alpha` or near-monotone
        (tau <= -0.6: 80% of pairs in falling order; the autocorrelation correction can
        blunt the p-value of a curve so smooth that its detrended ranks look correlated)."""
        lower = self.end_level < self.start_level
        if self.n < 8:
            return lower
        return lower and self.tau < 0 and (self.p_value < alpha or self.tau <= -0.6)


def change_over(
    steps: npt.ArrayLike, values: npt.ArrayLike, start_step: float, end_step: float
) -> Change | None:
    """Half-vs-half medians and a rank trend test of a curve over [start_step, end_step].

    None below 3 finite points in the range.
    """
    x, y = finite_xy(steps, values)
    lo = int(np.searchsorted(x, start_step, side="left"))
    hi = int(np.searchsorted(x, end_step, side="right"))
    x, y = x[lo:hi], y[lo:hi]
    if y.size < 3:
        return None
    half = y.size // 2
    trend = trend_test(x, y)
    return Change(
        n=int(y.size),
        start_level=float(np.median(y[: max(half, 1)])),
        end_level=float(np.median(y[half:])),
        tau=0.0 if trend is None else trend.tau,
        p_value=1.0 if trend is None else trend.p_value,
    )


def median_shift(
    values: npt.ArrayLike, min_before: int, min_after: int, sustain: float
) -> tuple[int, float, float] | None:
    """The strongest sustained upward level shift of a short (decimated) series.

    For every split k with at least `min_before` points before it and `min_after` after,
    compares the median of everything before k with the median of the next
    max(min_after, sustain x (points left)) points from k: a level that rose and *stayed*
    risen for `sustain` of the rest of the series. A minority of outliers on either side
    (periodic slow steps) moves neither median. Returns (k, median before, median after)
    for the largest shift, or None when no split is possible. O(m^2) memory: call it on
    block medians (`block_median`), m <= MAX_TREND_POINTS.
    """
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    m = int(y.size)
    lo, hi = max(min_before, 1), m - max(min_after, 1)
    if hi < lo:
        return None
    splits = np.arange(lo, hi + 1)
    before = _moving(bn.move_median, y, m, 1)[splits - 1]  # the expanding median
    lengths = np.maximum(min_after, np.ceil(sustain * (m - splits))).astype(np.int64)
    cols = np.arange(m)
    inside = (cols[None, :] >= splits[:, None]) & (cols[None, :] < (splits + lengths)[:, None])
    after = np.nanmedian(np.where(inside, y[None, :], np.nan), axis=1)
    best = int(np.argmax(after - before))
    return int(splits[best]), float(before[best]), float(after[best])


def rolling_min(values: npt.ArrayLike, window: int) -> FloatArray:
    """Minimum over the last `window` points (NaN-skipping, min_periods=1), O(n)."""
    return _moving(bn.move_min, values, window, 1)


def held_for(mask: npt.NDArray[np.bool_], points: int) -> npt.NDArray[np.bool_]:
    """The True positions of `mask` that belong to a run of at least `points` consecutive
    Trues ("a condition that held, not one outlier"). O(n)."""
    flags = np.asarray(mask, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        run_ends = _moving(bn.move_sum, flags, points, points) >= points
    # Spread each qualifying run end back over the `points` positions that make it up.
    reach = _moving(bn.move_max, run_ends[::-1].astype(np.float64), points, 1)
    held: npt.NDArray[np.bool_] = (reach[::-1] > 0) & np.asarray(mask, dtype=bool)
    return held


def trailing_median(values: npt.ArrayLike, window: int) -> FloatArray:
    """Median of about the `window` points *before* each point (NaN-aware); NaN where
    fewer than 3 of them are finite (in the block form below: in the first block). The
    baseline half of `trailing_robust_z`.

    Exact for windows under 50 points. From 50 on, the median of the block medians
    (blocks of window/10 points) of the window//block blocks before the point's own
    block: within a few percent of the exact median for a slowly moving baseline, still
    blind to a spike in the point's own block, and 5-10x faster on a million points
    (one O(n) block pass, then a rolling median over n/block values).
    """
    y = np.asarray(values, dtype=np.float64)
    block = window // 10 if window >= 50 else 1
    if block <= 1:
        return _moving(bn.move_median, _shifted(y), window, 3)
    per_block = _moving(bn.move_median, _shifted(_block_medians(y, block)), window // block, 1)
    return np.repeat(per_block, block)[: y.size]


def _block_medians(y: FloatArray, block: int) -> FloatArray:
    """The median of each run of `block` points (the last may be shorter), NaN skipped
    and +-inf kept, as pandas' groupby median: the middle value, or the mean of the two."""
    rows = -(-y.size // block)
    padded = np.full(rows * block, np.nan)
    padded[: y.size] = y
    ordered = np.sort(padded.reshape(rows, block), axis=1)  # NaN last
    held = np.count_nonzero(~np.isnan(ordered), axis=1)
    low = np.take_along_axis(ordered, np.maximum(held - 1, 0)[:, None] // 2, axis=1)[:, 0]
    high = np.take_along_axis(ordered, (held // 2)[:, None], axis=1)[:, 0]
    with np.errstate(invalid="ignore"):  # -inf and inf in one block: NaN, as pandas
        middle = np.where(held % 2 == 1, low, (low + high) / 2)
    return np.where(held == 0, np.nan, middle)


def trailing_mad_at(
    values: npt.ArrayLike, window: int, indices: npt.ArrayLike, centers: npt.ArrayLike
) -> FloatArray:
    """The MAD around `centers` of the `window` points before each of `indices` (NaN-aware,
    not scaled to sigma). O(len(indices) x window): for the few candidate points a cheap
    screen has left, instead of a second rolling median over the whole series."""
    y = np.asarray(values, dtype=np.float64)
    at = np.asarray(indices, dtype=np.int64)
    if at.size == 0:
        return np.empty(0, dtype=np.float64)
    positions = at[:, None] + np.arange(-window, 0)[None, :]
    windows = np.where(positions >= 0, y[np.clip(positions, 0, None)], np.nan)
    deviations = np.abs(windows - np.asarray(centers, dtype=np.float64)[:, None])
    # Callers pass points whose trailing median exists, so no row is all-NaN.
    return np.asarray(np.nanmedian(deviations, axis=1), dtype=np.float64)
