"""JSON Lines training logs: one JSON object per line (nanoGPT-style `log.jsonl`,
`metrics.jsonl` from custom loops, many trainers' `--log-jsonl`).

Each object is a row. Nested objects are flattened with `/` (`{"eval": {"loss": 1}}` ->
`eval/loss`); lists are not metrics and are ignored with a note. Values follow the shared
cell rules (`_tabular`): numbers, JSON's `NaN`/`Infinity` tokens (Python's json reads them)
and the strings `"nan"`/`"inf"` are values; null is "not logged"; other strings count as
skipped cells. The step comes from the step column rule (`step`, `global_step`, `iter`, ...,
then `epoch`, then the line order).

Damage is tolerated, not hidden: a half-written last line (a run still writing, or killed)
is skipped with a note; other lines that are not JSON objects are skipped and counted in
`meta["skipped_lines"]`. A file in which no line is a JSON object is an InputError. A NUL
hole that truncating the log under its writer leaves (at its start or at a line start),
and a cut line after it, are skipped with a note (`_holes.py`).

Parsing: Python's json module is the reference parser (it reads the NaN/Infinity tokens
training code writes). When orjson is installed (`pip install 'trainspotter[fast]'`) each
line is tried with orjson first, which is about 5x faster (a million lines: 1.0 s against
5.0 s, benchmarks/README.md), and any line orjson rejects (NaN/Infinity tokens, numbers out
of range, lone surrogates) is parsed by json, so the result is the same either way: the
values land in the same float cells (orjson gives a float where json gives an integer too
big for 64 bits; `json_cell` turns both into the same float). orjson is optional rather
than a core dependency because it speeds up this one format only.

`find_in_folder`: a folder holding exactly one `*.jsonl` / `*.ndjson` file directly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._files import (
    MAX_LINE_BYTES,
    decode_next,
    first_line,
    read_text_pieces,
    single_file_with_suffix,
)
from trainspotter.readers._holes import NulHoles
from trainspotter.readers._records import RecordTableBuilder
from trainspotter.readers._tabular import RunBuilder, canonical_name, table_to_run
from trainspotter.readers.base import FollowedLog, Growth, Reader, ReadOptions, Tail
from trainspotter.readers.incremental import Follower, file_to_follow

SUFFIXES = (".jsonl", ".ndjson")
SCORE_OBJECT_LINE = 70
SCORE_NAME = 40


_fast_loads: Callable[[str], Any] | None
try:  # optional speed-up, see the module docstring
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None


def parse_line(text: str) -> object:
    """One JSON Lines line: orjson when installed, json for whatever orjson rejects."""
    if _fast_loads is not None:
        try:
            return _fast_loads(text)
        except Exception:  # orjson.JSONDecodeError and friends: let json decide
            pass
    return parse_json(text)


def parse_json(text: str) -> object:
    """json.loads, with every failure turned into ValueError (JSONDecodeError included).

    Deep nesting raises RecursionError and huge integers ValueError: both are bad input.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _describe(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class JsonlReader(Reader):
    """JSON Lines logs (see the module docstring)."""

    name = "jsonl"
    description = "JSON Lines: one JSON object per line"

    def sniff(self, path: Path, head: str) -> int:
        if "\x00" in head:
            return 0
        line = first_line(head)
        try:
            if isinstance(parse_json(line), dict):
                return SCORE_OBJECT_LINE
        except ValueError:
            pass
        return SCORE_NAME if path.name.lower().endswith(SUFFIXES) else 0

    def find_in_folder(self, folder: Path) -> Path | None:
        return single_file_with_suffix(folder, SUFFIXES)

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = options.display_for(path)
        lines = JsonlLines()
        holes = NulHoles()  # a truncation's NUL hole, skipped and noted
        # Piece by piece (each ends at a line break): a large log is never held as one
        # string plus a list of all its lines.
        for _, text in read_text_pieces(path, display, max_line=MAX_LINE_BYTES, holes=holes):
            lines.add(text.splitlines())
        return lines.run(self.name, display, options, *holes.notes())

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        return JsonlTail(self, file_to_follow(self, target, display), display, options)


class JsonlLines:
    """JSON Lines parsed line by line into a table; lines can be added as a file grows
    (`trainspotter watch` adds each poll's complete lines), and `run` builds the Run the
    reader would build from all the lines added so far."""

    def __init__(self) -> None:
        self.records = RecordTableBuilder()
        self.line_count = 0
        """Lines added so far (blank ones included), i.e. the next line's index."""
        self.last_content = -1
        """Index of the last non-blank line."""
        self.skipped: list[tuple[int, str]] = []
        """(line index, problem) of each non-blank line that is not a JSON object."""

    def add(self, lines: list[str]) -> None:
        """Parse the next lines (without line endings) of the file, in order."""
        records = self.records
        skipped = self.skipped
        index = self.line_count - 1
        for index, line in enumerate(lines, start=self.line_count):
            if not line.strip():
                continue
            self.last_content = index
            try:
                value = parse_line(line)
            except ValueError as exc:
                skipped.append((index, _describe(exc)))
                continue
            if isinstance(value, dict):
                records.add(value)
            else:
                skipped.append((index, f"a JSON {type(value).__name__}, not an object"))
        self.line_count += len(lines)

    def run(self, source_format: str, display: str, options: ReadOptions, *notes: str) -> Run:
        """The Run from every line added, the file's `notes` (a NUL hole skipped) noted
        first; InputError when no line is a JSON object."""
        builder = RunBuilder(source_format, display, appended_runs=True, run_name=options.run_name)
        builder.note(*notes)
        skipped = self.skipped
        records = self.records
        if skipped and skipped[-1][0] == self.last_content and records.row_count:
            # A damaged last line is a run still writing (or killed mid-line), not junk.
            builder.note(f"skipped a half-written last line (line {self.last_content + 1})")
            builder.meta["partial_last_line"] = True
            skipped = skipped[:-1]
        if records.row_count == 0:
            if skipped:
                index, problem = skipped[0]
                raise InputError(display, f"no line is a JSON object (line {index + 1}: {problem})")
            raise InputError(display, "no line is a JSON object")
        if skipped:
            builder.meta["skipped_lines"] = len(skipped)
            index, problem = skipped[0]
            builder.note(
                f"skipped {len(skipped)} line(s) that are not JSON objects "
                f"(first: line {index + 1}: {problem})"
            )
        return table_to_run(
            records.table(display),
            builder,
            name_for=lambda raw: canonical_name(raw, options.aliases),
        )


@dataclass(eq=False)
class JsonlTail(FollowedLog[JsonlReader]):
    """A growing JSON Lines log (see `readers/incremental.py`); `target` is the file
    (`file_to_follow`)."""

    _follower: Follower = field(init=False)
    _lines: JsonlLines = field(default_factory=JsonlLines, init=False)
    _names: dict[str, str] = field(default_factory=dict, init=False)
    _holes: NulHoles = field(default_factory=NulHoles, init=False)

    def __post_init__(self) -> None:
        self._follower = Follower(self.target, max_pending=MAX_LINE_BYTES)

    def poll(self, final: bool = False) -> Growth:
        data, replaced = self._follower.read()
        growth = Growth(restarted=replaced)
        if replaced:
            self._lines = JsonlLines()
            self._holes = NulHoles()
            self.points = 0
        end = len(data) if final else data.rfind(b"\n") + 1
        if end == 0 and not final:
            self._follower.keep(data, 0)
            return growth
        consumed = self._follower.consumed
        text = decode_next(data[:end], consumed, self.display, self._holes, final)
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
        return self._lines.run(self.reader.name, self.display, self.options, *self._holes.notes())


READER = JsonlReader()
