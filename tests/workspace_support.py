"""The bundled example runs as the gate and the Action tests use them, and the container's
`entrypoint.py` loaded as a module (it is a script, not part of the package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
HEALTHY = "examples/healthy/trainer_state.json"
DIVERGENT = "examples/divergence/trainer_state.json"


def need_examples(*names: str) -> None:
    """Skip when a bundled example run has not been generated."""
    for name in names:
        if not (EXAMPLES / name / "trainer_state.json").is_file():
            pytest.skip(f"examples/{name} is not generated yet")


def load_entrypoint() -> ModuleType:
    """`entrypoint.py` as a module."""
    spec = importlib.util.spec_from_file_location("entrypoint", REPO / "entrypoint.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
