"""Detector parameter ranges: no value that `.trainspotter.yml` accepts crashes `analyze`.

For every detector and every numeric parameter, the extreme values its range allows (the
bound, the bound x 1e6, the ceiling) go through `parse_config` and then `analyze` on real
logs, one parameter at a time and all of a detector's at once; a hypothesis test draws
whole parameter sets from the same ranges. And the
detector code is scanned for parameters it takes the log, square root or reciprocal of:
their ranges must keep those defined.
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from trainspotter.analysis import AnalysisSettings, analyze
from trainspotter.config import (
    ConfigError,
    ParamRange,
    detector_params,
    param_pairs,
    param_ranges,
    parse_config,
)
from trainspotter.detectors import DETECTORS
from trainspotter.model import Run
from trainspotter.readers import read_log

REPO = Path(__file__).resolve().parents[1]
LOGS = (
    "examples/healthy/metrics.csv",
    "examples/divergence/trainer_state.json",
    # no warmup and an unstable start: the only path through lr_schedule's early check
    "examples/missing_warmup/trainer_state.json",
)


@cache
def _runs() -> tuple[Run, ...]:
    return tuple(read_log(REPO / path) for path in LOGS)


def _kind(detector: str, name: str) -> type:
    spec = next(s for s in detector_params(detector) if s.name == name)
    return int if spec.hint is int else float


def _lowest(limits: ParamRange, kind: type) -> float:
    low = limits.minimum
    assert low is not None, "every numeric parameter has a lower bound today"
    if not limits.exclusive:
        return low
    return low + 1 if kind is int else math.nextafter(low, math.inf)


def _extremes(limits: ParamRange, kind: type) -> list[float]:
    """The bound, the bound x 1e6 and the ceiling (capped at the range's maximum)."""
    low = _lowest(limits, kind)
    high = limits.maximum if limits.maximum is not None else sys.float_info.max
    values = [low, max(abs(low), 1.0) * 1e6, high]
    if kind is float and limits.maximum is None:
        values.append(1e300)
    clipped = sorted({min(max(v, low), high) for v in values})
    return [int(v) for v in clipped] if kind is int else clipped


def _with_pair(detector: str, name: str, value: float) -> dict[str, Any]:
    """`name: value`, plus the other half of a min/max pair where the default would put
    the pair out of order (min_window: 1000 needs max_window >= 1000)."""
    params: dict[str, Any] = {name: value}
    defaults = {s.name: s.default for s in detector_params(detector)}
    for low, high in param_pairs(detector):
        if name == low and value > defaults[high]:
            params[high] = value
        elif name == high and value < defaults[low]:
            params[low] = value
    return params


def _analyze_with(detector: str, params: dict[str, Any]) -> None:
    """Through the config parser (so only accepted values get here), then `analyze` on
    both logs with only that detector enabled."""
    text = yaml.safe_dump({"detectors": {detector: params}})
    config = parse_config(text)
    base = config.analysis_settings()
    only = AnalysisSettings(enabled=frozenset({detector}), params=base.params)
    for run in _runs():
        analyze(run, only)


CASES = [
    pytest.param(detector, name, value, id=f"{detector}.{name}={value!r}")
    for detector in DETECTORS
    for name, limits in param_ranges(detector).items()
    for value in _extremes(limits, _kind(detector, name))
]


@pytest.mark.parametrize(("detector", "name", "value"), CASES)
def test_extreme_valid_values_do_not_crash_analyze(detector: str, name: str, value: float) -> None:
    _analyze_with(detector, _with_pair(detector, name, value))


def _corner(detector: str, pick: int) -> dict[str, Any]:
    """Every numeric parameter of a detector at once at its lowest (pick 0), its bound x 1e6
    (pick 1) or its highest (pick -1) allowed value; a min/max pair both at the min's."""
    params: dict[str, Any] = {}
    for name, limits in param_ranges(detector).items():
        values = _extremes(limits, _kind(detector, name))
        params[name] = values[min(pick, len(values) - 1)] if pick >= 0 else values[pick]
    for low, high in param_pairs(detector):
        params[high] = max(params[high], params[low])
    return params


@pytest.mark.parametrize("pick", [0, 1, -1], ids=["lowest", "bound_x_1e6", "highest"])
@pytest.mark.parametrize("detector", list(DETECTORS))
def test_all_parameters_at_once_at_their_extremes(detector: str, pick: int) -> None:
    _analyze_with(detector, _corner(detector, pick))


def _strategy(limits: ParamRange, kind: type) -> st.SearchStrategy[Any]:
    low = _lowest(limits, kind)
    if kind is int:
        return st.integers(int(low), int(limits.maximum or 10**9))
    return st.floats(
        min_value=low,
        max_value=limits.maximum,
        allow_nan=False,
        allow_infinity=False,
    )


@pytest.mark.parametrize("detector", list(DETECTORS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_accepted_parameter_set_analyses(detector: str, data: st.DataObject) -> None:
    ranges = param_ranges(detector)
    names = data.draw(st.sets(st.sampled_from(sorted(ranges)), min_size=1), label="params")
    params = {
        name: data.draw(_strategy(ranges[name], _kind(detector, name)), label=name)
        for name in sorted(names)
    }
    try:
        parse_config(yaml.safe_dump({"detectors": {detector: params}}))
    except ConfigError:
        assume(False)  # a min/max pair drawn out of order: rejected, as it should be
    _analyze_with(detector, params)


# --------------------------------------------------------------------------- the code


_UNSAFE_CALLS = {"log": "log", "log10": "log", "log2": "log", "sqrt": "sqrt"}


def _param_uses(detector: str) -> dict[str, set[str]]:
    """Parameter name -> how the detector's module uses it where a bad value is undefined:
    `log` (log, log10, log2 of it), `sqrt`, `divide` (it is a divisor). Found as
    `<anything>.<param>` inside such a call or on the right of `/`."""
    names = {s.name for s in detector_params(detector)}
    module = inspect.getmodule(type(DETECTORS[detector]))
    assert module is not None
    # A detector split into a subpackage (divergence) does its math in the submodules.
    files = (
        sorted(Path(module.__file__ or "").parent.glob("*.py"))
        if hasattr(module, "__path__")
        else []
    )
    sources = [path.read_text() for path in files] or [inspect.getsource(module)]
    uses: dict[str, set[str]] = {}

    def note(node: ast.AST, how: str) -> None:
        if isinstance(node, ast.Attribute) and node.attr in names:
            uses.setdefault(node.attr, set()).add(how)

    for node in (node for source in sources for node in ast.walk(ast.parse(source))):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in _UNSAFE_CALLS:
                note(node.args[0], _UNSAFE_CALLS[called])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv):
            note(node.right, "divide")
    return uses


@pytest.mark.parametrize("detector", list(DETECTORS))
def test_params_under_log_sqrt_or_division_are_kept_defined(detector: str) -> None:
    ranges = param_ranges(detector)
    for name, hows in _param_uses(detector).items():
        limits = ranges[name]
        assert limits.minimum is not None, (detector, name, hows)
        if hows & {"log", "divide"}:
            assert limits.minimum > 0 or (limits.minimum == 0 and limits.exclusive), (
                f"{detector}.{name} is used in {hows}: its range must exclude 0 and below"
            )
        else:
            assert limits.minimum >= 0, f"{detector}.{name} is under a sqrt: must be >= 0"


def test_the_scan_finds_the_known_logs() -> None:
    """The scan above is not vacuous: it sees the log10 of each of these."""
    assert "log" in _param_uses("spikes")["min_ratio"]
    assert "log" in _param_uses("grad_norm")["explosion_ratio"]
    assert "log" in _param_uses("divergence")["transient_factor"]
