"""Series: sorting, the duplicate-step rule, non-finite values kept."""

from __future__ import annotations

import numpy as np
import pytest

from trainspotter.model import Series, Severity


def test_build_sorts_by_step_and_keeps_last_duplicate() -> None:
    series, dropped = Series.build([3, 1, 2, 1, 3], [30.0, 10.0, 20.0, 11.0, 31.0])
    assert series.steps.tolist() == [1, 2, 3]
    # The value written last in file order wins for steps 1 and 3.
    assert series.values.tolist() == [11.0, 20.0, 31.0]
    assert dropped == 2


def test_build_keeps_nonfinite_values_as_evidence() -> None:
    series, dropped = Series.build([0, 1, 2], [1.0, float("nan"), float("inf")])
    assert dropped == 0
    assert np.isnan(series.values[1]) and np.isinf(series.values[2])
    assert series.nonfinite_count() == 2
    assert series.finite.tolist() == [True, False, False]


def test_build_arrays_are_typed_and_read_only() -> None:
    series, _ = Series.build([0, 1], [1, 2], wall_time=[10.0, 11.0])
    assert series.steps.dtype == np.int64 and series.values.dtype == np.float64
    assert series.wall_time.tolist() == [10.0, 11.0]
    with pytest.raises(ValueError):
        series.values[0] = 5.0


def test_build_without_wall_time_is_nan() -> None:
    series, _ = Series.build([0], [1.0])
    assert np.isnan(series.wall_time[0])


def test_build_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError):
        Series.build([0, 1], [1.0])


def test_empty_series() -> None:
    series, dropped = Series.build([], [])
    assert len(series) == 0 and dropped == 0


def test_severity_order_and_parse() -> None:
    assert Severity.INFO < Severity.WARNING < Severity.ERROR
    assert Severity.parse(" Warning ") is Severity.WARNING
    with pytest.raises(ValueError):
        Severity.parse("fatal")


def test_build_does_not_freeze_the_callers_arrays() -> None:
    steps, values = np.arange(3), np.ones(3)
    Series.build(steps, values)
    values[0] = 2.0
    steps[0] = -1
