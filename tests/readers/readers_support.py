"""Helpers for the reader tests (imported by name: tests/readers is on sys.path under
pytest's default import mode)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from trainspotter.model import Run

MakeFile = Callable[[str, str | bytes], Path]
"""The `make_file` fixture: write content at a relative name under tmp_path."""


def assert_well_formed(run: Run) -> None:
    """The Run contract every reader must meet, whatever the input."""
    assert isinstance(run, Run)
    for name, series in run.metrics.items():
        assert isinstance(name, str) and name
        assert series.steps.dtype == np.int64
        assert series.values.dtype == np.float64
        assert series.steps.shape == series.values.shape == series.wall_time.shape
        assert len(series) > 0
        assert bool(np.all(np.diff(series.steps) > 0)), name
    for key in ("duplicate_steps", "skipped_cells", "backward_steps"):
        assert isinstance(run.meta.get(key, {}), dict)
    assert all(isinstance(note, str) for note in run.notes())


STDOUT_DATA = Path(__file__).resolve().parents[1] / "data" / "stdout"
"""Output printed by real training runs (tests/data/stdout, written by generate.py)."""
PRINTED_LOGS = sorted(STDOUT_DATA.glob("*.log")) + sorted(STDOUT_DATA.glob("*/log/log.txt"))
"""Every captured log: what each loop printed, and the `log/log.txt` a build-nanogpt-style
loop wrote."""
PRINTED_NAMES = [p.relative_to(STDOUT_DATA).as_posix() for p in PRINTED_LOGS]


def stdout_fixture(name: str) -> Path:
    """A captured printed log; the test is skipped when it was not generated."""
    path = STDOUT_DATA / name
    if not path.is_file():
        pytest.skip(f"{name} was not generated")
    return path


def read_stdout_fixture(name: str) -> tuple[Path, Run, str]:
    """A captured printed log, the well-formed Run read from it, and its text."""
    from trainspotter.readers import read_log

    path = stdout_fixture(name)
    run = read_log(path)
    assert_well_formed(run)
    return path, run, path.read_text(encoding="utf-8")
