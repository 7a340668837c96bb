"""The one data model every reader converges on and every detector and report reads.

A `Run` is a set of named metric `Series`. A `Series` is three parallel numpy arrays
(step, value, wall time), sorted by step, so a million-point metric costs ~24 MB and no
Python object per value. Non-finite values are kept: a NaN loss is evidence, not noise.

`Finding` is what a detector reports. This module knows nothing of files or formats.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class Severity(enum.IntEnum):
    """How bad a finding is. Ordered, so `max()` gives the worst."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        """The lower-case name used in the CLI, config and JSON (`info`, `warning`, `error`)."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """`"warning"` -> `Severity.WARNING`; raises ValueError on anything else."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use info, warning or error)") from None


@dataclass(frozen=True, eq=False)
class Series:
    """One metric over a run: parallel arrays sorted by step, one value per step.

    Duplicate steps rule (applied by `Series.build`): the value written *last* in the file
    wins. A resumed or restarted run re-logs steps it already logged, and what it logged last
    is what training continued from. The number of dropped duplicates is returned to the
    reader, which counts it in `Run.meta["duplicate_steps"]`.
    """

    steps: IntArray
    """Step numbers, int64, strictly increasing."""
    values: FloatArray
    """Values, float64; NaN and +/-Inf are kept as logged."""
    wall_time: FloatArray
    """Seconds since the epoch (or since the run's start) per point; NaN where unknown."""

    def __len__(self) -> int:
        return int(self.steps.shape[0])

    @classmethod
    def build(
        cls,
        steps: npt.ArrayLike,
        values: npt.ArrayLike,
        wall_time: npt.ArrayLike | None = None,
    ) -> tuple[Series, int]:
        """Sort by step (stable) and resolve duplicate steps; return the series and how
        many duplicate points were dropped. Inputs are in file order."""
        # Copies: the arrays are frozen below, and the caller's own arrays must stay writable.
        step_arr = np.array(steps, dtype=np.int64)
        value_arr = np.array(values, dtype=np.float64)
        if wall_time is None:
            wall_arr = np.full(step_arr.shape, np.nan, dtype=np.float64)
        else:
            wall_arr = np.array(wall_time, dtype=np.float64)
        if not (step_arr.shape == value_arr.shape == wall_arr.shape) or step_arr.ndim != 1:
            raise ValueError("steps, values and wall_time must be 1-D arrays of one length")
        n = len(step_arr)
        if n > 1 and not bool(np.all(step_arr[1:] > step_arr[:-1])):
            order = np.argsort(step_arr, kind="stable")
            sorted_steps = step_arr[order]
            # Keep the last occurrence of each step in file order: within a run of equal
            # steps a stable sort keeps file order, so the last of the run is the latest.
            keep = np.empty(n, dtype=bool)
            keep[:-1] = sorted_steps[1:] != sorted_steps[:-1]
            keep[-1] = True
            idx = order[keep]
            step_arr, value_arr, wall_arr = step_arr[idx], value_arr[idx], wall_arr[idx]
        dropped = n - int(step_arr.shape[0])
        for arr in (step_arr, value_arr, wall_arr):
            arr.setflags(write=False)
        return cls(step_arr, value_arr, wall_arr), dropped

    @property
    def finite(self) -> npt.NDArray[np.bool_]:
        """Mask of finite values."""
        return np.isfinite(self.values)

    def nonfinite_count(self) -> int:
        """How many logged values are NaN or +/-Inf."""
        return int(np.count_nonzero(~np.isfinite(self.values)))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    """`value` (JSON-like data) with every lone surrogate in a string replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_without_surrogates(v) for v in value)
    return value


@dataclass
class Run:
    """Everything a reader could learn from one log."""

    metrics: dict[str, Series]
    """Canonical metric name (see `names.py`) -> series."""
    source_format: str
    """The reader that produced this run (`hf`, `csv`, `jsonl`, `wandb`, `lightning`,
    `tensorboard`)."""
    source_path: str
    """The file or folder the user named (as given, for reports and annotations)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Reader facts: the run-summary entry, skipped cells, duplicate steps, other runs in
    the file, notes. JSON-serialisable values only."""

    def __post_init__(self) -> None:
        # A JSON key or value can spell a lone surrogate (`"\\ud800"`), which no UTF-8
        # output can encode: replaced once here, so every report can write every name.
        if any(_SURROGATE.search(name) for name in self.metrics):
            self.metrics = {_SURROGATE.sub("\ufffd", k): v for k, v in self.metrics.items()}
        scrubbed = _without_surrogates(self.meta)
        if scrubbed != self.meta:  # keep the reader's own dict unless it must change
            self.meta = scrubbed

    def notes(self) -> list[str]:
        """Human-readable reader notes (skipped rows, fallbacks, other runs)."""
        return list(self.meta.get("notes", []))

    def add_note(self, text: str) -> None:
        """Record a reader note shown in every report."""
        self.meta.setdefault("notes", []).append(text)

    def step_span(self) -> tuple[int, int] | None:
        """(first, last) logged step over every metric; None when no metric has a point."""
        logged = [s for s in self.metrics.values() if len(s)]
        if not logged:
            return None
        return min(int(s.steps[0]) for s in logged), max(int(s.steps[-1]) for s in logged)

    @property
    def name(self) -> str:
        """A short display name: the run name if the reader knows one, else the file name."""
        run_name = self.meta.get("run_name")
        if isinstance(run_name, str) and run_name:
            return run_name
        return Path(self.source_path).name or self.source_path


Evidence = dict[str, float | int | str]


@dataclass(frozen=True)
class Finding:
    """One diagnosed episode: what, where, how sure (the numbers) and what to do."""

    detector: str
    """Stable detector id (`spikes`, `divergence`, ...)."""
    title: str
    """One line, e.g. "train/loss diverged to NaN"."""
    severity: Severity
    metric: str
    """The canonical metric the finding is about."""
    step_start: int
    step_end: int
    message: str
    """The evidence in words, with numbers."""
    evidence: Evidence = field(default_factory=dict)
    """Name -> number or string; the numbers behind the message."""
    fixes: tuple[str, ...] = ()
    """The usual fixes, most likely first."""
    id: str = ""
    """Set by analysis: `F1`, `F2`, ... in report order."""
    related: tuple[str, ...] = ()
    """Set by analysis: ids of findings about the same incident."""
    cause: str | None = None
    """Set by analysis: id of the finding judged to have caused this one."""
    suppressed: str | None = None
    """Set by the config's `ignore` rules: the reason it was suppressed."""
