"""Shared pytest setup: make `tests/` importable (for tests/synth.py) and locate data."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture
def repo_root() -> Path:
    """The repository root."""
    return REPO
