"""Incremental reading of a growing log: each poll reads only what was appended.

A `Tail` follows one log (a file, or a folder a reader accepts) for `trainspotter watch`.
`poll()` reads the new complete data and returns a `Growth` (how many points arrived, and
the new values per metric for watch's cheap online checks); `run()` builds the `Run` from
everything read so far through the reader's own code (`table_to_run`,
`JsonlLines.run`, `HfTrainerStateReader.run_from_state`, `tensorboard_events.build_run`),
so after a final poll the Run is exactly the one `read_log` builds from the same file.

Per format:

- CSV, Lightning `metrics.csv`, W&B exports (append-only): the header is parsed once; each
  poll parses only the bytes after the last complete line with pandas' C parser (the same
  options as `read_csv_table`, column names given), cut at the last newline that is not
  inside a quoted cell. Parsed cells go into capacity-doubling numpy arrays per column
  (amortised O(new)). Bad-line numbers are shifted so notes match a whole-file read.
- JSON Lines (append-only): the complete new lines go to the reader's `JsonlLines`.
- TensorBoard event files (append-only): one `EventFileScanner` per file continues from
  its byte offset, whole records only; new event files in a run folder are picked up.
- `trainer_state.json` (rewritten whole on every save): re-read only when its size, mtime
  or inode changed; a file that does not parse (half-written) is kept waiting for the next
  poll and the last good state stays. The new `log_history` entries (those past the old
  length, when the old ones are unchanged) are the growth.

Every text format consumes complete lines only: a half-written last line waits for the
next poll, except in the final poll (`poll(final=True)`, when watch stops), which reads the
file to its end exactly as `read_log` would. A file that shrank, changed inode (rotation)
or whose first bytes changed is read again from the start (`Growth.restarted`). A file that
does not exist yet is waited for. This module does not decide when to analyse: that is
`trainspotter.watch`.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import FloatArray, Run
from trainspotter.readers import csvlog, hf, jsonl, lightning_csv, tensorboard_events, wandb_csv
from trainspotter.readers._files import (
    BINARY_PROBE_BYTES,
    check_text_bytes,
    decode_head,
    not_utf8,
    read_text,
)
from trainspotter.readers._tabular import (
    NumericColumn,
    RunBuilder,
    Table,
    bad_lines_note,
    canonical_name,
    column_positions,
    count_unquoted,
    find_step_column,
    numeric_column,
    parse_csv_frame,
    sniff_csv_layout,
)
from trainspotter.readers.base import Reader, ReadOptions

FINGERPRINT_BYTES = 64
"""The first bytes of a file, compared each poll: if they change, the file was replaced."""


@dataclass
class Growth:
    """What one poll found."""

    points: int = 0
    """New rows / records / entries read."""
    fresh: dict[str, FloatArray] = field(default_factory=dict)
    """Canonical metric name -> the new values, in file order (for online checks)."""
    last_step: int | None = None
    """The last step among the new data, when known."""
    restarted: bool = False
    """The file was truncated, replaced or rotated: everything was read again."""


class Tail(Protocol):
    """One followed log."""

    display: str
    points: int
    """Rows / records / entries read so far."""

    def poll(self, final: bool = False) -> Growth:
        """Read what was appended since the last poll (InputError for a bad log)."""
        ...

    def run(self) -> Run | None:
        """The Run of everything read so far, or None before anything was read."""
        ...


# --------------------------------------------------------------------------- bytes


class _Follower:
    """Reads the bytes appended to one file since the last call; detects replacement."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.consumed = 0
        """Bytes already turned into data."""
        self.buffer = b""
        """Bytes read but not yet used (an incomplete last line or record)."""
        self._inode: int | None = None
        self._fingerprint = b""

    def reset(self) -> None:
        self.consumed = 0
        self.buffer = b""
        self._inode = None
        self._fingerprint = b""

    def read(self) -> tuple[bytes, bool]:
        """`buffer` plus the new bytes, and whether the file was replaced (then everything
        is new). A missing file reads as nothing new."""
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return self.buffer, False
        except OSError as exc:
            raise InputError(str(self.path), f"cannot read: {exc.strerror or exc}") from None
        with handle:
            stat = os.fstat(handle.fileno())
            known = self.consumed + len(self.buffer)
            replaced = False
            if self._inode is not None:
                head = handle.read(min(FINGERPRINT_BYTES, len(self._fingerprint)))
                replaced = (
                    stat.st_ino != self._inode
                    or stat.st_size < known
                    or head != self._fingerprint[: len(head)]
                )
            if replaced:
                self.reset()
                known = 0
            if self._inode is None:
                self._inode = stat.st_ino
            if stat.st_size <= known:
                return self.buffer, replaced
            handle.seek(known)
            new = handle.read(stat.st_size - known)
        if len(self._fingerprint) < FINGERPRINT_BYTES and self.consumed == 0:
            self._fingerprint = (self.buffer + new)[:FINGERPRINT_BYTES]
        return self.buffer + new, replaced

    def keep(self, data: bytes, used: int) -> None:
        """`used` bytes of `data` (what `read` returned) were consumed; keep the rest."""
        self.consumed += used
        self.buffer = data[used:]
        if len(self._fingerprint) < FINGERPRINT_BYTES and self.consumed:
            # Grow the fingerprint as the head of the file fills in.
            with self.path.open("rb") as handle:
                self._fingerprint = handle.read(FINGERPRINT_BYTES)


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


class _Grow:
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


# --------------------------------------------------------------------------- CSV family


class CsvTail:
    """A growing CSV, Lightning metrics.csv or W&B export."""

    def __init__(self, reader: Reader, target: Path, display: str, options: ReadOptions) -> None:
        self.reader = reader
        self.target = target
        self.display = display
        self.options = options
        self.file = target
        if isinstance(reader, lightning_csv.LightningReader):
            self.file, _ = reader.prepare(target, display)
        self._follower = _Follower(self.file)
        self.points = 0
        self._reset()

    def _reset(self) -> None:
        self.points = 0
        self._layout: Any = None
        self._positions: list[tuple[int, str]] = []
        self._ignored: dict[str, str] = {}
        self._columns: dict[str, _Grow] = {}
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
            spelling = (
                lightning_csv.lightning_spelling
                if isinstance(self.reader, lightning_csv.LightningReader)
                else None
            )
            name = self._names[raw] = canonical_name(raw, self.options.aliases, spelling)
        return name

    def poll(self, final: bool = False) -> Growth:
        switched = False
        if isinstance(self.reader, lightning_csv.LightningReader) and self.target.is_dir():
            file, _ = self.reader.prepare(self.target, self.display)
            if file != self.file:  # a new version_N/ (a restarted run): read that one
                self.file, switched = file, True
                self._follower = _Follower(file)
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
            self._columns[name] = _Grow()
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
        table = self.table()
        reader = self.reader
        if isinstance(reader, lightning_csv.LightningReader):
            _, builder = reader.prepare(self.target, self.display)
            return reader.run_from_table(table, builder, self.options)
        if isinstance(reader, csvlog.CsvReader | wandb_csv.WandbReader):
            return reader.run_from_table(table, self.display, self.options)
        raise TypeError(f"not a CSV reader: {reader.name}")


# --------------------------------------------------------------------------- JSON Lines


class JsonlTail:
    """A growing JSON Lines log."""

    def __init__(self, reader: Reader, target: Path, display: str, options: ReadOptions) -> None:
        self.reader = reader
        self.display = display
        self.options = options
        self.file = target
        if target.is_dir():
            found = reader.find_in_folder(target)
            if found is None:
                raise InputError(display, "no JSON Lines file in this folder")
            self.file = found
        self._follower = _Follower(self.file)
        self._lines = jsonl.JsonlLines()
        self._names: dict[str, str] = {}
        self.points = 0

    def poll(self, final: bool = False) -> Growth:
        data, replaced = self._follower.read()
        growth = Growth(restarted=replaced)
        if replaced:
            self._lines = jsonl.JsonlLines()
            self.points = 0
        end = len(data) if final else data.rfind(b"\n") + 1
        if end == 0:
            self._follower.keep(data, 0)
            return growth
        chunk = data[:end]
        at_start = self._follower.consumed == 0
        if self._follower.consumed < BINARY_PROBE_BYTES:
            check_text_bytes(chunk[: BINARY_PROBE_BYTES - self._follower.consumed], self.display)
        try:
            text = chunk.decode("utf-8-sig" if at_start else "utf-8")
        except UnicodeDecodeError as exc:
            raise not_utf8(chunk, exc, self.display, self._follower.consumed) from None
        records = self._lines.records
        marks = records.marks()
        rows_before = records.row_count
        self._lines.add(text.splitlines())
        self._follower.keep(data, end)
        growth.points = records.row_count - rows_before
        self.points = records.row_count
        for raw, values in records.values_since(marks).items():
            name = self._names.get(raw)
            if name is None:
                name = self._names[raw] = canonical_name(raw, self.options.aliases)
            if name.lower() in ("step", "global_step", "_step", "iter", "iteration"):
                if values.shape[0] and np.isfinite(values[-1]):
                    growth.last_step = int(values[-1])
                continue
            growth.fresh[name] = values
        return growth

    def run(self) -> Run | None:
        if self._lines.line_count == 0:
            return None
        return self._lines.run(self.reader.name, self.display, self.options)


# --------------------------------------------------------------------------- trainer_state


class HfTail:
    """A `trainer_state.json` that the Trainer rewrites whole at every save."""

    def __init__(
        self, reader: hf.HfTrainerStateReader, target: Path, display: str, options: ReadOptions
    ) -> None:
        self.reader = reader
        self.target = target
        self.display = display
        self.options = options
        self._seen: tuple[int, int, int] | None = None
        self._state: dict[str, Any] | None = None
        self._file: Path | None = None
        self.waiting: str | None = None
        """Why the last changed file was not taken (e.g. it does not parse yet)."""
        self.points = 0

    def poll(self, final: bool = False) -> Growth:
        growth = Growth()
        try:
            file, _ = self.reader.prepare(self.target, self.display)
            stat = file.stat()
        except (InputError, FileNotFoundError):
            if final and self._state is None:
                raise
            return growth
        key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if key == self._seen and file == self._file:
            return growth
        try:
            state = self.reader.state_from_text(read_text(file, self.display), self.display)
        except InputError as exc:
            # Half-written (the Trainer is saving): keep the last good state, try again.
            self.waiting = exc.problem
            if final:
                raise
            return growth
        self.waiting = None
        self._seen = key
        old = self._state["log_history"] if self._state is not None else []
        new = state["log_history"]
        if file != self._file or len(new) < len(old) or (old and new[len(old) - 1] != old[-1]):
            growth.restarted = self._state is not None
            fresh_entries = new
        else:
            fresh_entries = new[len(old) :]
        self._file = file
        self._state = state
        self.points = len(new)
        growth.points = len(fresh_entries)
        collected: dict[str, list[float]] = {}
        for entry in fresh_entries:
            if not isinstance(entry, dict) or hf.is_summary_entry(entry):
                continue
            step = entry.get(hf.STEP_KEY)
            if isinstance(step, int) and not isinstance(step, bool):
                growth.last_step = step
            for key, value in entry.items():
                if key in (hf.STEP_KEY, hf.EPOCH_KEY) or isinstance(value, bool):
                    continue
                if isinstance(value, int | float):
                    name = canonical_name(key, self.options.aliases, hf.hf_spelling)
                    collected.setdefault(name, []).append(float(value))
        growth.fresh = {name: np.asarray(v, dtype=np.float64) for name, v in collected.items()}
        return growth

    def run(self) -> Run | None:
        if self._state is None:
            return None
        _, builder = self.reader.prepare(self.target, self.display)
        return self.reader.run_from_state(self._state, builder, self.options)


# --------------------------------------------------------------------------- TensorBoard


@dataclass
class _EventFile:
    scanner: tensorboard_events.EventFileScanner
    follower: _Follower


class TensorBoardTail:
    """A growing TensorBoard event file, or a run folder whose files grow and multiply."""

    def __init__(
        self,
        reader: tensorboard_events.TensorBoardReader,
        target: Path,
        display: str,
        options: ReadOptions,
    ) -> None:
        self.reader = reader
        self.target = target
        self.display = display
        self.options = options
        self._event_class = tensorboard_events.load_event_class(display)
        self._files: dict[Path, _EventFile] = {}
        self.points = 0

    def _scanner(self) -> tensorboard_events.EventFileScanner:
        scanner = tensorboard_events.EventFileScanner(self._event_class)
        scanner.keep_fresh = True
        return scanner

    def poll(self, final: bool = False) -> Growth:
        growth = Growth()
        try:
            root, files = self.reader.files(self.target, self.display)
        except InputError:
            if final and not self._files:
                raise
            return growth
        for file in files:
            state = self._files.get(file)
            if state is None:
                state = self._files[file] = _EventFile(self._scanner(), _Follower(file))
            data, replaced = state.follower.read()
            if replaced:
                state.scanner = self._scanner()
                growth.restarted = True
            if state.scanner.damaged_at is not None:
                continue
            before = state.scanner.records
            used = state.scanner.feed_bounded(data)
            state.follower.keep(data, used)
            growth.points += state.scanner.records - before
        prefix = len({file.parent for file in self._files}) > 1
        for file, state in self._files.items():
            for tag, steps, values in state.scanner.fresh:
                raw = tensorboard_events.metric_name(tag, file, root, prefix)
                name = canonical_name(raw, self.options.aliases)
                previous = growth.fresh.get(name)
                growth.fresh[name] = (
                    values if previous is None else np.concatenate([previous, values])
                )
                if steps.shape[0]:
                    growth.last_step = int(steps[-1])
            state.scanner.fresh.clear()
        self.points = sum(state.scanner.records for state in self._files.values())
        return growth

    def run(self) -> Run | None:
        if not self._files:
            return None
        root, files = self.reader.files(self.target, self.display)
        builder = RunBuilder(self.reader.name, self.display)
        readable = tensorboard_events.check_framing(files, root, self.display, builder)
        scanned = [
            tensorboard_events.ScannedFile(
                file, self._files[file].scanner, len(self._files[file].follower.buffer)
            )
            for file in readable
            if file in self._files
        ]
        return tensorboard_events.build_run(scanned, root, builder, self.options)


def open_tail(reader: Reader, target: Path, display: str, options: ReadOptions) -> Tail:
    """The Tail for a log that `reader` reads (a file, or a folder it accepts)."""
    if isinstance(reader, tensorboard_events.TensorBoardReader):
        return TensorBoardTail(reader, target, display, options)
    if isinstance(reader, hf.HfTrainerStateReader):
        return HfTail(reader, target, display, options)
    if isinstance(reader, jsonl.JsonlReader):
        return JsonlTail(reader, target, display, options)
    if isinstance(reader, csvlog.CsvReader | lightning_csv.LightningReader | wandb_csv.WandbReader):
        if target.is_dir():
            found = reader.find_in_folder(target)
            if found is None:
                raise InputError(display, f"no {reader.name} log in this folder")
            if not isinstance(reader, lightning_csv.LightningReader):
                target = found
        return CsvTail(reader, target, display, options)
    raise InputError(display, f"the {reader.name} format cannot be followed")


__all__ = [
    "CsvTail",
    "Growth",
    "HfTail",
    "JsonlTail",
    "Tail",
    "TensorBoardTail",
    "open_tail",
]
