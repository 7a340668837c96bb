"""Aligning a baseline run with a candidate: by step, or by epoch or tokens when logged.

Two runs with different batch sizes (or sequence lengths) reach the same point of training
at different steps; both logging an epoch (or a token counter) says where. The axis is
`tokens` when both runs log a token counter, else `epoch` when both log the epoch and
their steps per epoch differ by more than `STEPS_PER_EPOCH_TOLERANCE`, else `step`. The
baseline's metrics are then re-expressed in the candidate's steps (the candidate step at
which the candidate had seen the same epoch or tokens), so every check, and a chart that
overlays both curves, works on one step axis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.model import FloatArray, Run, Series

STEPS_PER_EPOCH_TOLERANCE = 0.01
"""Epoch alignment only when the runs' steps per epoch differ by more than 1%; otherwise
steps are exact and epochs (rounded by some loggers) add nothing."""

_TOKEN_COUNTER = re.compile(r"(^|/)(num_)?(input_)?tokens(_seen)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Alignment:
    """The axis used and the baseline's metrics on the candidate's steps."""

    axis: str
    baseline: dict[str, Series]
    note: str | None = None


def _counter(run: Run, axis: str) -> Series | None:
    if axis == "epoch":
        series = run.metrics.get(names.EPOCH)
    else:
        series = next(
            (s for m, s in run.metrics.items() if _TOKEN_COUNTER.search(m) is not None), None
        )
    if series is None:
        return None
    finite = series.finite
    if int(np.count_nonzero(finite)) < 2:
        return None
    return series


def _position(series: Series) -> tuple[FloatArray, FloatArray]:
    """(steps, counter) over finite points, the counter made non-decreasing."""
    finite = series.finite
    steps = series.steps[finite].astype(np.float64)
    counter = np.maximum.accumulate(series.values[finite])
    return steps, counter


def _steps_per_unit(series: Series) -> float:
    steps, counter = _position(series)
    span = float(counter[-1] - counter[0])
    return float(steps[-1] - steps[0]) / span if span > 0 else float("nan")


def choose_axis(candidate: Run, baseline: Run) -> tuple[str, Series | None, Series | None]:
    """The alignment axis and each run's counter for it (None for `step`)."""
    tokens = (_counter(candidate, "tokens"), _counter(baseline, "tokens"))
    if tokens[0] is not None and tokens[1] is not None:
        return "tokens", tokens[0], tokens[1]
    epochs = (_counter(candidate, "epoch"), _counter(baseline, "epoch"))
    if epochs[0] is not None and epochs[1] is not None:
        rate_c, rate_b = _steps_per_unit(epochs[0]), _steps_per_unit(epochs[1])
        comparable = np.isfinite(rate_c) and np.isfinite(rate_b) and rate_b > 0
        if comparable and abs(rate_c / rate_b - 1.0) > STEPS_PER_EPOCH_TOLERANCE:
            return "epoch", epochs[0], epochs[1]
    return "step", None, None


def align(candidate: Run, baseline: Run) -> Alignment:
    """The baseline's metrics on the candidate's step axis (see the module docstring).
    On the `epoch` and `tokens` axes, baseline points beyond the candidate's counter
    range cannot be placed and are left out (said in `note`)."""
    axis, counter_c, counter_b = choose_axis(candidate, baseline)
    if counter_c is None or counter_b is None:
        return Alignment("step", dict(baseline.metrics))
    steps_c, position_c = _position(counter_c)
    steps_b, position_b = _position(counter_b)
    low, high = float(position_c[0]), float(position_c[-1])
    mapped: dict[str, Series] = {}
    dropped = 0
    for metric, series in baseline.metrics.items():
        where = np.interp(series.steps.astype(np.float64), steps_b, position_b)
        inside = (where >= low) & (where <= high)
        dropped += int(np.count_nonzero(~inside))
        new_steps = np.rint(np.interp(where[inside], position_c, steps_c)).astype(np.int64)
        mapped[metric], _ = Series.build(new_steps, series.values[inside], series.wall_time[inside])
    note = None
    if dropped:
        note = (
            f"{dropped} baseline points lie beyond the candidate's {axis} range and are "
            "not compared"
        )
    return Alignment(axis, mapped, note)
