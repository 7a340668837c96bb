"""Shared pytest setup: make `tests/` importable (for tests/synth.py, tests/workspace_support.py)
and locate data; the example workspace and entrypoint fixtures."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from workspace_support import EXAMPLES, load_entrypoint, need_examples  # noqa: E402


@pytest.fixture
def repo_root() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout with the healthy and the divergent example run."""
    need_examples("healthy", "divergence")
    for name in ("healthy", "divergence"):
        shutil.copytree(EXAMPLES / name, tmp_path / "examples" / name)
    return tmp_path


@pytest.fixture
def entry() -> ModuleType:
    """The container's `entrypoint.py`, loaded as a module."""
    return load_entrypoint()
