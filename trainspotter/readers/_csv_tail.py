"""Following a growing CSV, Lightning `metrics.csv` or W&B export (see `incremental.py`).

`CsvTail` is shared by the three table readers: each gives it where the file is now
(`locate`: Lightning re-resolves its folder every poll, to move to a new `version_N/`),
how raw column names are spelled, and how a parsed `Table` becomes its `Run`.
`TableFileReader` is the base of the readers whose log is one table file (csv, wandb):
it reads that file whole, and follows it as it grows.
"""

from __future__ import annotations

import io
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._csv import (
    bad_lines_note,
    column_positions,
    count_unquoted,
    numeric_column,
    parse_csv_frame,
    read_csv_table,
    sniff_csv_layout,
)
from trainspotter.readers._files import (
    BINARY_PROBE_BYTES,
    MAX_LINE_BYTES,
    check_text_bytes,
    decode_head,
)
from trainspotter.readers._tabular import NumericColumn, Table, canonical_name, find_step_column
from trainspotter.readers.base import Growth, Reader, ReadOptions, Tail
from trainspotter.readers.incremental import Follower, file_to_follow


def _last_line_end(data: bytes, *, quoted: bool) -> int:
    """Bytes up to and including the last newline (0 if none). With `quoted`, only a
    newline outside double quotes counts (a quoted CSV cell may hold a newline)."""
    end = data.rfind(b"\n") + 1
    if not quoted or end == 0 or b'"' not in data[:end]:
        return end
    raw = np.frombuffer(data[:end], dtype=np.uint8)
    quotes = np.cumsum(raw == ord('"'))
    newlines = np.flatnonzero(raw == ord("\n"))
    outside = newlines[(quotes[newlines] % 2) == 0]
    return int(outside[-1]) + 1 if outside.shape[0] else 0


def _first_record(data: bytes) -> bytes | None:
    """The first non-blank record of `data` (a quoted cell may hold a newline), with its
    line ending; None if `data` holds no complete non-blank record."""
    start = 0
    while start < len(data):
        end = start
        quoted = False
        while True:
            newline = data.find(b"\n", end)
            if newline < 0:
                return None
            quoted ^= data.count(b'"', end, newline) % 2 == 1
            end = newline + 1
            if not quoted:
                break
        record = data[start:end]
        if record.strip():
            return record if record.endswith(b"\n") else record + b"\n"
        start = end
    return None


def _count_records(data: bytes) -> int:
    """Newlines outside double quotes: the lines pandas counts (`data` starts unquoted)."""
    if b'"' not in data:
        return data.count(b"\n")
    raw = np.frombuffer(data, dtype=np.uint8)
    quotes = np.cumsum(raw == ord('"'))
    newlines = np.flatnonzero(raw == ord("\n"))
    return int(np.count_nonzero(quotes[newlines] % 2 == 0))


class _GrowingColumn:
    """A capacity-doubling float64 column with a "present" mask."""

    def __init__(self) -> None:
        self.values = np.empty(1024, dtype=np.float64)
        self.present = np.zeros(1024, dtype=bool)
        self.garbage = 0

    def put(self, start: int, column: NumericColumn) -> None:
        end = start + column.values.shape[0]
        if end > self.values.shape[0]:
            capacity = max(end, 2 * self.values.shape[0])
            values = np.empty(capacity, dtype=np.float64)
            present = np.zeros(capacity, dtype=bool)
            values[:start] = self.values[:start]
            present[:start] = self.present[:start]
            self.values, self.present = values, present
        self.values[start:end] = column.values
        self.present[start:end] = column.present
        self.garbage += column.garbage


class CsvTail:
    """A growing CSV, Lightning metrics.csv or W&B export."""

    def __init__(
        self,
        display: str,
        options: ReadOptions,
        *,
        locate: Callable[[], Path],
        build: Callable[[Table], Run],
        spelling: Callable[[str], str] | None = None,
    ) -> None:
        self.display = display
        self.options = options
        self._locate = locate
        """The file to read now (asked every poll)."""
        self._build = build
        """The reader's Table -> Run (the same code as a whole-file read)."""
        self._spelling = spelling
        """The format's own metric spellings, for `canonical_name`."""
        self.file = locate()
        self._follower = Follower(self.file, max_pending=MAX_LINE_BYTES)
        self.points = 0
        self._reset()

    def _reset(self) -> None:
        self.points = 0
        self._layout: Any = None
        self._positions: list[tuple[int, str]] = []
        self._ignored: dict[str, str] = {}
        self._columns: dict[str, _GrowingColumn] = {}
        self._names: dict[str, str] = {}
        self._step_column: str | None = None
        self._bad = 0
        self._first_bad: int | None = None
        self._first_row: bytes | None = None
        """The file's first data row (with its newline), once read."""
        self._lines = 0
        """Lines as pandas numbers them (rows, blank lines; a quoted newline does not
        count) from the file's start to the next unparsed byte."""

    def _canonical(self, raw: str) -> str:
        name = self._names.get(raw)
        if name is None:
            name = self._names[raw] = canonical_name(raw, self.options.aliases, self._spelling)
        return name

    def poll(self, final: bool = False) -> Growth:
        switched = False
        file = self._locate()
        if file != self.file:  # a new version_N/ (a restarted run): read that one
            self.file, switched = file, True
            self._follower = Follower(file, max_pending=MAX_LINE_BYTES)
        data, replaced = self._follower.read()
        growth = Growth(restarted=replaced or (switched and self.points > 0))
        if replaced or switched:
            self._reset()
        if not data:
            return growth
        used = 0
        if self._layout is None:
            used = self._read_header(data, final)
            if self._layout is None:
                self._follower.keep(data, 0)
                return growth
        body = data[used:]
        end = len(body) if final else _last_line_end(body, quoted=True)
        if end:
            self._parse(body[:end], growth)
        self._follower.keep(data, used + end)
        return growth

    def _read_header(self, data: bytes, final: bool) -> int:
        """Parse the header once its line (and, if needed, the next) is complete; return
        the bytes it used (0 while waiting)."""
        complete = data if final else data[: _last_line_end(data, quoted=True)]
        if not complete:
            return 0
        head = decode_head(complete[:BINARY_PROBE_BYTES], self.display)
        layout = sniff_csv_layout(head)
        if layout is None:
            if final:
                raise InputError(self.display, "no header line (the file holds only blank lines)")
            return 0
        non_blank = [line for line in head.split("\n") if line.strip()]
        if (
            layout.junk_line is None
            and not final
            and len(non_blank) < 2
            and count_unquoted(layout.header, layout.delimiter) == 0
        ):
            return 0  # one line without a delimiter may be a junk title line: wait
        # The header line's end: after `skip_lines` newlines, then the header's own newline.
        end = 0
        for _ in range(layout.skip_lines + 1):
            newline = complete.find(b"\n", end)
            end = len(complete) if newline < 0 else newline + 1
        frame, _ = parse_csv_frame(
            io.BytesIO(complete[:end]),
            self.display,
            layout,
            skiprows=layout.skip_lines,
            nrows=0,
            encoding="utf-8-sig",
        )
        # Each chunk is parsed after a copy of the header line, so pandas sizes rows by the
        # header exactly as in a whole-file read (a first row with an extra cell is a bad
        # line, not a wider table).
        start = 0
        for _ in range(layout.skip_lines):
            start = complete.find(b"\n", start) + 1
        self._header_line = complete[start:end].rstrip(b"\r\n") + b"\n"
        self._positions, self._ignored = column_positions(list(frame.columns), self.display)
        for _, name in self._positions:
            self._columns[name] = _GrowingColumn()
        choice = find_step_column(name for _, name in self._positions)
        self._step_column = choice.column
        self._layout = layout
        self._lines = layout.skip_lines + 1
        return end

    def _parse(self, chunk: bytes, growth: Growth) -> None:
        if self._follower.consumed < BINARY_PROBE_BYTES:
            check_text_bytes(chunk[: BINARY_PROBE_BYTES - self._follower.consumed], self.display)
        if chunk.strip():
            # pandas sizes rows by the first data row when it is wider than the header (it
            # cuts it instead of skipping it, and takes that width for every row), so after
            # the file's first row a copy of it stands in front of each chunk and is dropped.
            prefix = self._first_row or b""
            frame, bad_lines = parse_csv_frame(
                io.BytesIO(self._header_line + prefix + chunk),
                self.display,
                self._layout,
                encoding="utf-8-sig",
            )
            shift = 2 if prefix else 1  # the copied header (and first row) lines
            bad_lines = [line - shift for line in bad_lines]
            if prefix:
                frame = frame.iloc[1:]
            if self._first_row is None:
                self._first_row = _first_record(chunk)
        else:
            frame, bad_lines = None, []
        if bad_lines:
            self._bad += len(bad_lines)
            first = min(bad_lines) + self._lines
            self._first_bad = first if self._first_bad is None else min(self._first_bad, first)
        self._lines += _count_records(chunk)
        if frame is None or len(frame) == 0:
            return
        start = self.points
        for position, name in self._positions:
            column = numeric_column(frame.iloc[:, position])
            self._columns[name].put(start, column)
            if name == self._step_column:
                logged = column.values[column.present]
                finite = logged[np.isfinite(logged)]
                if finite.shape[0]:
                    growth.last_step = int(finite[-1])
            elif bool(column.present.any()):
                growth.fresh[self._canonical(name)] = column.values[column.present]
        self.points += len(frame)
        growth.points += len(frame)

    def table(self) -> Table:
        """Everything parsed so far as the Table `read_csv_table` would return."""
        n = self.points
        table = Table({}, n, ignored=dict(self._ignored))
        layout = self._layout
        if self._bad and self._first_bad is not None:
            table.meta["skipped_rows"] = self._bad
            table.notes.append(bad_lines_note(self._bad, self._first_bad + layout.skip_lines))
        if layout.junk_line is not None:
            table.notes.append(f"skipped a first line that is not the header: {layout.junk_line!r}")
        for name, grow in self._columns.items():
            table.columns[name] = NumericColumn(
                grow.values[:n].copy(), grow.present[:n].copy(), grow.garbage
            )
        return table

    def run(self) -> Run | None:
        if self._layout is None:
            return None
        return self._build(self.table())


class TableFileReader(Reader):
    """A reader whose log is one table file (csv, wandb): read whole with
    `read_csv_table`, followed as it grows with `CsvTail`."""

    @abstractmethod
    def run_from_table(self, table: Table, display: str, options: ReadOptions) -> Run:
        """The Run from a parsed table (whole, or as much as `watch` has read)."""

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = options.display_for(path)
        return self.run_from_table(read_csv_table(path, display), display, options)

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        file = file_to_follow(self, target, display)
        return CsvTail(
            display,
            options,
            locate=lambda: file,
            build=lambda table: self.run_from_table(table, display, options),
        )


__all__ = ["CsvTail", "TableFileReader"]
