"""Axis rules for the HTML charts: Heckbert ticks, zero floor, log scale, outlier cap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainspotter.report.axes import (
    nice_number,
    nice_ticks,
    step_label,
    step_ticks,
    tick_label,
    value_axis,
)


@pytest.mark.parametrize(
    ("value", "rounded", "ceiling"),
    [
        (0.7, 0.5, 1.0),
        (1.4, 1.0, 2.0),
        (2.5, 2.0, 5.0),
        (4.0, 5.0, 5.0),
        (8.0, 10.0, 10.0),
        (0.00031, 0.0005, 0.0005),
        (73_000.0, 100_000.0, 100_000.0),
    ],
)
def test_nice_number(value: float, rounded: float, ceiling: float) -> None:
    assert nice_number(value, round_to_nearest=True) == pytest.approx(rounded)
    assert nice_number(value, round_to_nearest=False) == pytest.approx(ceiling)


def test_nice_ticks_heckbert_example() -> None:
    ticks = nice_ticks(0.0, 2.37)
    assert ticks.values == (0.0, 1.0, 2.0, 3.0)
    ticks = nice_ticks(-3.2, 7.1)
    assert ticks.values == (-5.0, 0.0, 5.0, 10.0)
    assert nice_ticks(0.0, 0.00036).values == (0.0, 0.0001, 0.0002, 0.0003, 0.0004)


@given(
    st.floats(-1e9, 1e9, allow_nan=False),
    st.floats(1e-6, 1e9, allow_nan=False),
)
def test_nice_ticks_cover_the_range_with_nice_spacing(low: float, width: float) -> None:
    high = low + width
    ticks = nice_ticks(low, high)
    # Covered up to a rounding error relative to the range (a denormal low such as
    # -5e-324 may round to a 0 tick).
    slack = 1e-9 * max(abs(low), abs(high), width)
    assert ticks.low <= low + slack and ticks.high >= high - slack
    assert 2 <= len(ticks.values) <= 12
    mantissa = ticks.spacing / 10 ** np.floor(np.log10(ticks.spacing))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-6


def test_step_ticks_stay_inside_the_domain() -> None:
    assert step_ticks(1, 399, 4) == [100, 200, 300]
    assert step_ticks(0, 1_000_000, 6) == [0, 200_000, 400_000, 600_000, 800_000, 1_000_000]
    assert step_ticks(5, 5, 4) == [5]


def test_labels() -> None:
    assert tick_label(0.0003, 0.0001) == "3e-4"
    assert tick_label(2_000_000.0, 1_000_000.0) == "2e6"
    assert tick_label(0.25, 0.05) == "0.25"
    assert tick_label(1500.0, 500.0) == "1,500"
    assert [step_label(s) for s in (0, 500, 2500, 120_000, 1_000_000)] == [
        "0",
        "500",
        "2.5k",
        "120k",
        "1M",
    ]


def test_non_negative_metric_starts_at_zero() -> None:
    axis = value_axis(np.linspace(2.3, 2.5, 100), log_allowed=False)
    assert axis.low == 0.0 and not axis.log and axis.high >= 2.5


def test_negative_values_keep_their_low() -> None:
    axis = value_axis(np.linspace(-3.0, 1.0, 100), log_allowed=False)
    assert axis.low <= -3.0 < 0


def test_loss_spanning_more_than_two_decades_gets_log_axis() -> None:
    loss = np.geomspace(10.0, 0.01, 1000)
    axis = value_axis(loss, log_allowed=True)
    assert axis.log and axis.low <= 0.01 and axis.high >= 10.0
    assert all(np.log10(t).is_integer() for t in axis.ticks)
    # the same values without permission stay linear; a narrow loss stays linear
    assert not value_axis(loss, log_allowed=False).log
    assert not value_axis(np.geomspace(3.0, 0.5, 1000), log_allowed=True).log


def test_outlier_cap_stops_the_axis_below_a_spike() -> None:
    loss = np.linspace(2.0, 0.5, 1000)
    loss[500] = 1e4
    axis = value_axis(loss, log_allowed=True)
    assert axis.capped and not axis.log
    assert axis.high < 10 and axis.high >= 2.0
    assert axis.fraction(np.array([1e4]))[0] > 1.0  # drawn clamped at the top edge


def test_no_cap_without_outliers_and_nan_ignored() -> None:
    values = np.r_[np.linspace(0.0, 1.0, 100), [np.nan, np.inf]]
    axis = value_axis(values, log_allowed=False)
    assert not axis.capped and axis.high == 1.0


def test_empty_or_constant_series() -> None:
    assert value_axis(np.array([np.nan]), log_allowed=True).high > 0
    constant = value_axis(np.full(10, 3e-4), log_allowed=False)
    assert constant.low == 0.0 and constant.high >= 3e-4


def test_one_tiny_value_does_not_make_a_flat_metric_logarithmic() -> None:
    grad_norm = np.abs(np.random.default_rng(0).normal(1.0, 0.2, 10_000))
    grad_norm[1234] = 1e-5
    axis = value_axis(grad_norm, log_allowed=True)
    assert not axis.log and axis.low == 0.0
