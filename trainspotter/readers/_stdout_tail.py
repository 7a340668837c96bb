"""Following printed training output as it grows (`trainspotter watch`): the tail of
`readers/stdout.py`, kept apart so that module stays one reader (see
`readers/incremental.py` for how every format is followed)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from trainspotter.model import Run
from trainspotter.readers._tabular import canonical_name
from trainspotter.readers.base import FollowedLog, Growth, Reader, ReadOptions
from trainspotter.readers.incremental import TextFollower


class PrintedMetric(Protocol):
    @property
    def values(self) -> array[float]: ...


class PrintedLines(Protocol):
    """What the tail needs of `stdout.StdoutLines`."""

    @property
    def metrics(self) -> Mapping[str, PrintedMetric]: ...

    @property
    def records(self) -> int: ...

    @property
    def line_count(self) -> int: ...

    @property
    def last_step(self) -> int: ...

    def add(self, lines: Iterable[str]) -> None: ...

    def run(self, source_format: str, display: str, options: ReadOptions, *notes: str) -> Run: ...


@dataclass(eq=False)
class StdoutTail(FollowedLog[Reader]):
    """A training log still being printed to (see `readers/incremental.py`); `target` is
    the file (`file_to_follow`)."""

    make_lines: Callable[[], PrintedLines]
    """The reader's line parser (`stdout.StdoutLines`), made anew when the file restarts."""
    _text: TextFollower = field(init=False)
    _lines: PrintedLines = field(init=False)

    def __post_init__(self) -> None:
        self._text = TextFollower(self.target, self.display, skip_holes=True)
        self._lines = self.make_lines()

    def poll(self, final: bool = False) -> Growth:
        new, replaced = self._text.read_lines(final)
        growth = Growth(restarted=replaced)
        if replaced:
            self._lines = self.make_lines()
        lines = self._lines
        marks = {name: len(metric.values) for name, metric in lines.metrics.items()}
        records = lines.records
        lines.add(new)
        growth.points = lines.records - records
        self.points = lines.records
        if growth.points:
            growth.last_step = lines.last_step
        for raw, metric in lines.metrics.items():
            start = marks.get(raw, 0)
            if len(metric.values) > start:
                name = canonical_name(raw, self.options.aliases)
                growth.fresh[name] = np.frombuffer(metric.values, dtype=np.float64)[start:].copy()
        return growth

    def run(self) -> Run | None:
        if self._lines.line_count == 0:
            return None
        holes = self._text.holes
        notes = holes.notes() if holes is not None else []
        return self._lines.run(self.reader.name, self.display, self.options, *notes)
