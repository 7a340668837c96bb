"""The moving-window statistics (`detectors/stats.py`, bottleneck) against the pandas
formulations they replaced: the same values (NaN where pandas gives NaN) on series with
NaN, +-inf, ties and any window, centred or trailing."""

from __future__ import annotations

import warnings

import bottleneck as bn
import numpy as np
import numpy.typing as npt
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from trainspotter.detectors import stats

cell = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, np.nan, np.inf, -np.inf]),
)
series = st.lists(cell, max_size=60).map(lambda cells: np.asarray(cells, dtype=np.float64))
window = st.integers(1, 70)


def same(ours: npt.ArrayLike, theirs: npt.ArrayLike) -> bool:
    return bool(np.array_equal(np.asarray(ours), np.asarray(theirs), equal_nan=True))


@settings(max_examples=300, deadline=None)
@given(y=series, width=window, center=st.booleans())
def test_rolling_median_is_pandas(y: npt.NDArray[np.float64], width: int, center: bool) -> None:
    expected = pd.Series(y).rolling(width, min_periods=1, center=center).median()
    assert same(stats.rolling_median(y, width, center=center), expected)


@settings(max_examples=300, deadline=None)
@given(y=series, width=window)
def test_rolling_min_is_pandas(y: npt.NDArray[np.float64], width: int) -> None:
    assert same(stats.rolling_min(y, width), pd.Series(y).rolling(width, min_periods=1).min())


@settings(max_examples=300, deadline=None)
@given(mask=st.lists(st.booleans(), max_size=60), points=st.integers(1, 10))
def test_held_for_is_pandas(mask: list[bool], points: int) -> None:
    flags = pd.Series(np.asarray(mask, dtype=np.float64))
    run_ends = flags.rolling(points, min_periods=points).sum().to_numpy() >= points
    reach = pd.Series(run_ends[::-1].astype(np.float64)).rolling(points, min_periods=1).max()
    expected = (reach.to_numpy()[::-1] > 0) & np.asarray(mask, dtype=bool)
    assert same(stats.held_for(np.asarray(mask, dtype=bool), points), expected)


@settings(max_examples=300, deadline=None)
@given(y=series, width=st.integers(3, 120))
def test_trailing_median_is_pandas(y: npt.NDArray[np.float64], width: int) -> None:
    values = pd.Series(y)
    block = width // 10 if width >= 50 else 1
    if block <= 1:
        expected = values.shift(1).rolling(width, min_periods=3).median().to_numpy()
    else:
        blocks = values.groupby(np.arange(y.size) // block).median()
        per_block = blocks.shift(1).rolling(width // block, min_periods=1).median()
        expected = np.repeat(per_block.to_numpy(dtype=np.float64), block)[: y.size]
    assert same(stats.trailing_median(y, width), expected)


@settings(max_examples=300, deadline=None)
@given(y=series, width=st.integers(3, 40))
def test_trailing_robust_z_is_pandas(y: npt.NDArray[np.float64], width: int) -> None:
    prior = pd.Series(y).shift(1)
    med = prior.rolling(width, min_periods=3).median().to_numpy(dtype=np.float64)
    mad = (prior - med).abs().rolling(width, min_periods=3).median().to_numpy(np.float64)
    _, ours_med, ours_sigma = stats.trailing_robust_z(y, width, floor=0.01)
    assert same(ours_med, med)
    assert same(ours_sigma, np.maximum(mad * stats.MAD_TO_SIGMA, 0.01))


@settings(max_examples=300, deadline=None)
@given(y=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=60))
def test_the_expanding_median_is_pandas(y: list[float]) -> None:
    """`median_shift`'s baseline: the median of every point so far."""
    values = np.asarray(y, dtype=np.float64)
    expected = pd.Series(values).expanding().median().to_numpy(np.float64)
    assert same(stats._moving(bn.move_median, values, values.size, 1), expected)


@settings(max_examples=200, deadline=None)
@given(y=series, width=st.integers(1, 40), blocks=st.integers(1, 6))
def test_trailing_block_baseline_is_pandas(
    y: npt.NDArray[np.float64], width: int, blocks: int
) -> None:
    """Only its rolling step changed: compare it with pandas' on the block statistics."""
    block = max(1, width // blocks)
    rows = -(-y.size // block)
    padded = np.full(rows * block, np.nan)
    padded[: y.size] = y
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmedian(padded.reshape(rows, block), axis=1)
    expected = pd.Series(centre).shift(1).rolling(blocks, min_periods=1).median()
    med, _ = stats.trailing_block_baseline(y, width, blocks)
    assert same(med, np.repeat(expected.to_numpy(np.float64), block)[: y.size])


def test_a_window_far_longer_than_the_series_allocates_nothing_for_it() -> None:
    """A window of a billion points over five (a config's extreme value) is the whole
    series, as in pandas, without an array of a billion NaNs."""
    y = np.array([3.0, np.nan, 1.0, np.inf, 2.0])
    huge = 10**9
    assert same(stats.rolling_min(y, huge), pd.Series(y).rolling(huge, min_periods=1).min())
    expected = pd.Series(y).rolling(huge, min_periods=1, center=True).median()
    assert same(stats.rolling_median(y, huge, center=True), expected)
    assert np.isnan(stats.trailing_robust_z(y[:2], huge)[1]).all()
