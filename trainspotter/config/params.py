"""Detector parameters as the config sees them: names, types, defaults, docs and ranges.

Everything is read off the live `DETECTORS` registry and each detector's `Params`
dataclass (field names, type hints, defaults, attribute docstrings), so a new detector or
parameter is configurable, range-checked and documented without an edit here.

Numeric parameters are range-checked, by rules read off each field's name, type and
default (`param_range`), so a value that would crash `analyze` or quietly turn a detector
into noise is a config error (exit 2) instead:
- every number must be finite (no `.inf` or `.nan`);
- a parameter whose default is > 0 must be > 0; one whose default is 0 must be >= 0;
  a negative default leaves the sign free (no detector has one today);
- an integer named `min_*`, `*_points` or `*_count` with a default >= 1 must be >= 1; an
  integer named `*_gap` (points allowed between two events) may be 0, merging only
  adjacent points;
- an integer `*_window` (a window of logged points) must be 3..1000: a median and its
  spread need 3 points (rolling statistics raise below that), and a detector may keep
  each candidate point's own window, so memory grows as candidates x window;
- every integer is at most 1,000,000,000: no log has that many points, and larger counts
  overflow the 64-bit window lengths of numpy and pandas (`growth_windows` x window);
- a parameter whose name contains `fraction` must be <= 1 (when its default is);
- `min_X` <= `max_X` for such a pair in one detector, on the values after defaults;
- a parameter whose use needs more declares it on its own field, as
  `Annotated[float, Above(minimum, exclusive, why)]` (`detectors/base.py`): a ratio whose
  log10 is a threshold must be > 1, say. That bound replaces the generic lower bound.
The JSON Schema carries the same bounds (`minimum`, `exclusiveMinimum`, `maximum`); the
finiteness and the min <= max pairs it cannot express.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import math
import textwrap
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from trainspotter.detectors import DETECTORS
from trainspotter.detectors.base import Above

# --------------------------------------------------------------------------- parameters


def _hints(params_type: type, *, extras: bool = False) -> dict[str, Any]:
    try:
        return typing.get_type_hints(params_type, include_extras=extras)
    except Exception:
        return {}


@lru_cache(maxsize=64)
def field_docs(params_type: type) -> dict[str, str]:
    """Each field's attribute docstring (the string literal under it), from the source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(params_type)))
    except (OSError, TypeError, SyntaxError):
        return {}
    docs: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


@dataclass(frozen=True)
class ParamSpec:
    """One configurable parameter of a detector."""

    name: str
    hint: Any
    """The field's type, without `Annotated` metadata."""
    default: Any
    doc: str
    above: Above | None = None
    """The lower bound the detector's math needs, declared on the field; None for none."""


def _above(hint: Any) -> Above | None:
    """The `Above` bound in an `Annotated[...]` hint, if any."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    return next((m for m in hint.__metadata__ if isinstance(m, Above)), None)


def detector_params(detector_id: str) -> list[ParamSpec]:
    """The parameters of a registered detector, in declaration order."""
    params_type = DETECTORS[detector_id].Params
    if not dataclasses.is_dataclass(params_type):
        return []
    hints = _hints(params_type)
    annotated = _hints(params_type, extras=True)
    docs = field_docs(params_type)
    specs: list[ParamSpec] = []
    for f in dataclasses.fields(params_type):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        hint = hints.get(f.name, Any)
        above = _above(annotated.get(f.name))
        specs.append(ParamSpec(f.name, hint, default, docs.get(f.name, ""), above))
    return specs


def declared_bounds() -> list[tuple[str, ParamSpec]]:
    """(detector id, parameter) for every parameter that declares an `Above` bound, in
    registry order."""
    return [
        (name, spec)
        for name in DETECTORS
        for spec in detector_params(name)
        if spec.above is not None
    ]


def describe_type(hint: Any) -> str:
    """A Params type hint in words, for messages."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(a) for a in args)
    if hint is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (tuple, list):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return f"a list of {len(args)} ({', '.join(describe_type(a) for a in args)})"
        return f"a list of ({describe_type(args[0]) if args else 'values'})"
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(hint, "a value")


# --------------------------------------------------------------------------- ranges

MAX_INT_PARAM = 1_000_000_000
"""Ceiling of every integer parameter: no log has that many points, and larger counts
overflow the 64-bit window lengths numpy and pandas take (`growth_windows` x window)."""

WINDOW_POINTS = (3, 1_000)
"""The range of an integer `*_window` parameter, in logged points."""


def number_text(value: float) -> str:
    """A number as a message shows it: YAML's spelling for the non-finite ones."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def is_number(value: Any) -> bool:
    """An int or float, and not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _out_of_range(op: str, bound: float, value: float, why: str) -> str:
    text = f"must be {op} {number_text(bound)}, got {number_text(value)}"
    return f"{text} ({why})" if why else text


@dataclass(frozen=True)
class ParamRange:
    """The values a numeric detector parameter accepts: finite, and within these bounds."""

    minimum: float | None = None
    """The lower bound; None for none."""
    exclusive: bool = False
    """Whether the lower bound itself is excluded (`> minimum` rather than `>= minimum`)."""
    maximum: float | None = None
    """The upper bound (inclusive); None for none."""
    why_minimum: str = ""
    """Why the lower bound, when it is not plain from the value (said in the error)."""
    why_maximum: str = ""
    """Why the upper bound, likewise."""

    def problem(self, value: float) -> str | None:
        """Why `value` is out of range, or None when it is in range."""
        if not math.isfinite(value):
            return f"must be a finite number, got {number_text(value)}"
        low = self.minimum
        if low is not None and (value <= low if self.exclusive else value < low):
            op = ">" if self.exclusive else ">="
            return _out_of_range(op, low, value, self.why_minimum)
        if self.maximum is not None and value > self.maximum:
            return _out_of_range("<=", self.maximum, value, self.why_maximum)
        return None

    def schema(self) -> dict[str, Any]:
        """The bounds as JSON Schema keywords."""
        out: dict[str, Any] = {}
        if self.minimum is not None:
            key = "exclusiveMinimum" if self.exclusive else "minimum"
            out[key] = _json_number(self.minimum)
        if self.maximum is not None:
            out["maximum"] = _json_number(self.maximum)
        return out


def _numeric_kind(hint: Any) -> type | None:
    """int or float for a numeric field (or a numeric field that may be null), else None."""
    if hint in (int, float):
        return typing.cast(type, hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(hint) if a is not type(None)]
        if arms and all(a in (int, float) for a in arms):
            return float if float in arms else int
    return None


def param_range(spec: ParamSpec) -> ParamRange | None:
    """The values a detector parameter accepts, by the rules in the module docstring;
    None for a parameter that is not a number."""
    kind = _numeric_kind(spec.hint)
    if kind is None:
        return None
    name, default = spec.name, spec.default
    minimum: float | None = None
    exclusive = False
    maximum: float | None = None
    why_minimum = why_maximum = ""
    known = is_number(default) and math.isfinite(default)
    if known and default > 0:
        minimum, exclusive = 0, True
    elif known and default == 0:
        minimum = 0
    if kind is int:
        if minimum == 0 and exclusive:
            minimum, exclusive = 1, False  # an integer > 0 is an integer >= 1
        if known and name.endswith("_gap") and default >= 0:
            minimum, exclusive = 0, False
        elif (
            known
            and default >= 1
            and (name.startswith("min_") or name.endswith(("_points", "_window", "_count")))
        ):
            minimum, exclusive = 1, False
        low, high = WINDOW_POINTS
        if known and name.endswith("_window") and low <= default <= high:
            minimum, maximum = low, high
            why_minimum = f"a window needs {low} points for a median and its spread"
            why_maximum = "a longer window costs memory as candidate points x window"
        if maximum is None and (not known or default <= MAX_INT_PARAM):
            maximum = MAX_INT_PARAM
            why_maximum = "larger counts overflow the 64-bit window lengths of numpy and pandas"
    if known and "fraction" in name and default <= 1 and (maximum is None or maximum > 1):
        maximum, why_maximum = 1, "a fraction"
    if spec.above is not None:
        minimum, exclusive, why_minimum = spec.above.minimum, spec.above.exclusive, spec.above.why
    return ParamRange(minimum, exclusive, maximum, why_minimum, why_maximum)


def param_ranges(detector_id: str) -> dict[str, ParamRange]:
    """The range of every numeric parameter of a registered detector."""
    ranges: dict[str, ParamRange] = {}
    for spec in detector_params(detector_id):
        found = param_range(spec)
        if found is not None:
            ranges[spec.name] = found
    return ranges


def param_pairs(detector_id: str) -> list[tuple[str, str]]:
    """The (`min_X`, `max_X`) pairs of numeric parameters of a detector: min <= max."""
    numeric = param_ranges(detector_id)
    return [
        (name, "max_" + name.removeprefix("min_"))
        for name in numeric
        if name.startswith("min_") and "max_" + name.removeprefix("min_") in numeric
    ]


def pair_problem(detector_id: str, values: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first `min_X` > `max_X` of a detector, on the configured `values` after
    defaults: (the configured key to blame, `min_X` when both are; the problem), or None."""
    defaults = {s.name: s.default for s in detector_params(detector_id)}
    for low_name, high_name in param_pairs(detector_id):
        if low_name not in values and high_name not in values:
            continue
        low = values.get(low_name, defaults[low_name])
        high = values.get(high_name, defaults[high_name])
        if not (is_number(low) and is_number(high)) or low <= high:
            continue
        if low_name in values:
            high_text = number_text(high) + ("" if high_name in values else ", its default")
            return low_name, (
                f"{number_text(low)} is above {high_name} ({high_text}): "
                f"{low_name} must be <= {high_name}"
            )
        return high_name, (
            f"{number_text(high)} is below {low_name} ({number_text(low)}, its default): "
            f"{high_name} must be >= {low_name}"
        )
    return None


__all__ = [
    "MAX_INT_PARAM",
    "WINDOW_POINTS",
    "ParamRange",
    "ParamSpec",
    "describe_type",
    "detector_params",
    "field_docs",
    "param_pairs",
    "param_range",
    "param_ranges",
]
