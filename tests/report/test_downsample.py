"""M4 downsampling: extremes survive, the count is bounded, a million points keep their extremes."""

from __future__ import annotations

import numpy as np

from trainspotter.report.downsample import m4_indices


def test_short_series_is_kept_whole() -> None:
    x = np.arange(100)
    assert np.array_equal(m4_indices(x, np.zeros(100), buckets=50), np.arange(100))


def test_every_bucket_keeps_first_last_min_and_max() -> None:
    rng = np.random.default_rng(1)
    n, buckets = 100_000, 500
    x = np.arange(n)
    y = rng.normal(size=n)
    chosen = m4_indices(x, y, buckets)
    assert chosen.size <= 4 * buckets
    assert np.all(np.diff(chosen) > 0)
    bucket = (x * buckets) // n
    for b in (0, 137, 499):
        members = np.flatnonzero(bucket == b)
        kept = set(chosen[np.isin(chosen, members)])
        expected = {
            members[0],
            members[-1],
            members[np.argmin(y[members])],
            members[np.argmax(y[members])],
        }
        assert expected <= kept


def test_a_one_point_spike_survives() -> None:
    n = 1_000_000
    x = np.arange(n)
    y = np.sin(x / 5000.0)
    y[654_321] = 1e6
    y[123_456] = -1e6
    chosen = m4_indices(x, y, 880)
    assert 654_321 in chosen and 123_456 in chosen
    assert chosen.size <= 4 * 880


def test_uneven_steps() -> None:
    x = np.r_[np.arange(0, 1000), np.arange(10_000, 2_000_000, 7)]
    y = np.cos(x / 1e4)
    chosen = m4_indices(x, y, 300)
    assert chosen[0] == 0 and chosen[-1] == x.size - 1 and chosen.size <= 1200


def test_million_points_keep_the_extremes() -> None:
    """A 1M-point series keeps its ends and its extremes within 4 points per column (its
    speed is measured by `make bench`'s reports case)."""
    n = 1_000_000
    x = np.arange(n, dtype=np.int64)
    y = np.random.default_rng(0).normal(size=n)
    chosen = m4_indices(x, y, 900)
    assert chosen[0] == 0 and chosen[-1] == n - 1 and chosen.size <= 4 * 900
    assert int(np.argmax(y)) in chosen and int(np.argmin(y)) in chosen
