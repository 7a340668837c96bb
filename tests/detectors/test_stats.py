"""The shared robust statistics: trend test calibration, robust z, episodes."""

from __future__ import annotations

import numpy as np

from trainspotter.detectors import stats


def _ar1(n: int, phi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    eps = rng.normal(size=n)
    out = np.empty(n)
    out[0] = eps[0]
    for i in range(1, n):
        out[i] = phi * out[i - 1] + eps[i]
    return out


def test_trend_test_detects_a_real_drift() -> None:
    steps = np.arange(2000)
    values = 1.0 + 0.001 * steps + _ar1(2000, 0.5, 1) * 0.1
    trend = stats.trend_test(steps, values)
    assert trend is not None
    assert trend.p_value < 1e-6 and trend.tau > 0.5
    assert abs(trend.slope - 0.001) < 2e-4


def test_trend_test_is_calibrated_on_autocorrelated_noise() -> None:
    # Uncorrected, AR(1) noise with phi=0.8 is "significant" far more often than 5% of the
    # time; corrected, the rate stays near the nominal level (8% measured).
    steps = np.arange(300)
    rejections = sum(
        stats.trend_test(steps, _ar1(300, 0.8, seed)).p_value < 0.05  # type: ignore[union-attr]
        for seed in range(200)
    )
    assert rejections / 200 < 0.12


def test_trend_test_abstains_on_few_points() -> None:
    assert stats.trend_test(np.arange(5), np.arange(5.0)) is None
    assert stats.trend_test(np.arange(20), np.full(20, np.nan)) is None


def test_block_median_caps_points_and_drops_nonfinite() -> None:
    values = np.arange(10_000, dtype=float)
    values[5] = np.nan
    x, y = stats.block_median(np.arange(10_000), values, max_points=100)
    assert x.size <= 101 and np.all(np.isfinite(y))


def test_trailing_robust_z_flags_a_spike_not_its_neighbours() -> None:
    rng = np.random.default_rng(0)
    values = 1.0 + rng.normal(0, 0.01, 500)
    values[300] = 2.0
    z, _, _ = stats.trailing_robust_z(values, 50)
    assert z[300] > 50
    assert np.nanmax(np.abs(np.delete(z, 300)[60:])) < 8


def test_episodes_group_with_gaps() -> None:
    mask = np.zeros(20, dtype=bool)
    mask[[2, 3, 4, 7, 15]] = True
    assert stats.episodes(mask) == [(2, 4), (7, 7), (15, 15)]
    assert stats.episodes(mask, max_gap=2) == [(2, 7), (15, 15)]
    assert stats.episodes(np.zeros(3, dtype=bool)) == []


def test_noise_scale_ignores_trend() -> None:
    rng = np.random.default_rng(3)
    values = np.linspace(10, 0, 5000) + rng.normal(0, 0.5, 5000)
    assert abs(stats.noise_scale(values) - 0.5) < 0.05
