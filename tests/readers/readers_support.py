"""Helpers for the reader tests (imported by name: tests/readers is on sys.path under
pytest's default import mode)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

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
