"""Write one run's ground truth into ``examples/expected.json`` (used by the framework runs).

``generate.py`` owns the numpy runs' entries; each framework run (``hf_no_warmup``,
``lightning_input_spike``, ``loader_slowdown_tb``, and those of ``keras_runs.py`` and
``lightning_runs.py``) has its own training script, run in its own environment, which
replaces only its own entry through :func:`write_entry`. The file keeps
the layout ``generate.py`` writes (indent 2, one trailing newline).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

EXPECTED_PATH = Path(__file__).resolve().parent / "expected.json"


def rounded(value: float) -> float | str:
    """Six significant digits, as generate.py writes; non-finite values as strings."""
    if not math.isfinite(value):
        return str(value)
    return float(f"{value:.6g}")


def write_entry(name: str, entry: dict[str, Any]) -> None:
    """Replace (or add, at the end) the entry of run ``name``; every other entry is kept."""
    expected: dict[str, Any] = {}
    if EXPECTED_PATH.exists():
        expected = json.loads(EXPECTED_PATH.read_text(encoding="utf-8"))
    expected[name] = entry
    EXPECTED_PATH.write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")


def write_runs(
    runs: Mapping[str, Callable[[Any], dict[str, Any]]], names: list[str], data: Any
) -> None:
    """Train the named runs (all without names) on ``data``, each writing its own entry."""
    for name in names or list(runs):
        write_entry(name, runs[name](data))
        print(name, "written")
