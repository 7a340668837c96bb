"""Shared machinery that turns rows of named values into a `Run`, used by every reader.

Three layers, each used by several readers so no format repeats another's parsing:

- `Table` / `NumericColumn`: dense per-row numeric columns with a "present" mask, built
  either from a CSV (`read_csv_table`, used by the csv, lightning and wandb readers) or from
  JSON objects (`RecordTableBuilder`, used by the jsonl and hf readers).
- `table_to_run`: picks the step column (the rule below), drops rows without a step, maps
  names through `names.normalize` and hands the columns to `RunBuilder`.
- `RunBuilder`: resolves name collisions, builds each `Series` (sorted, duplicate steps
  resolved by `Series.build`'s last-wins rule; an exact repeat of a point, same step and
  same value, is collapsed first and not counted, since Lightning writes `epoch` on every
  row of a step) and records the reader facts in `Run.meta`: `duplicate_steps`,
  `skipped_cells`, `backward_steps` ({metric: count}, always present), `step_column` and
  human-readable notes.

Cell rules, the same for CSV and JSON: an empty cell (or JSON null) means "not logged at
that step", so the point is absent from that metric; `nan`, `inf`, `-inf`, `Infinity` and
friends are values and are kept (a NaN loss is evidence). Anything else that is not a number
is a skipped cell, counted per metric; a column where non-numbers outnumber numbers is text
(a run name, a date) and is ignored with a note.

Step column rule: the column named (case-insensitively) `step`, else `global_step`,
`trainer/global_step`, `train/global_step`, `_step`, `iteration`, `iter`, in that order.
Without one, an `epoch` column is the step (Keras' CSVLogger, hand-written epoch tables)
and is then not also a metric. Without either, or when the chosen column holds fractional
or non-finite values, the row number is the step, with a note (a fractional `epoch` then
stays a metric; an unusable step column does not). Rows with values but an empty step cell
are skipped and counted in `meta["rows_without_step"]`.

CSV parsing uses pandas' C parser: it reads a million-row, six-column log in about half a
second, three times faster than the csv module and with half its memory (DESIGN.md).
"""

from __future__ import annotations

import csv
import enum
import io
import math
import re
import warnings
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from trainspotter.errors import InputError
from trainspotter.model import FloatArray, IntArray, Run, Series
from trainspotter.names import normalize
from trainspotter.readers._files import BINARY_PROBE_BYTES, check_line_lengths, decode_head

BoolArray = npt.NDArray[np.bool_]

STEP_COLUMN_NAMES = (
    "step",
    "global_step",
    "trainer/global_step",
    "train/global_step",
    "_step",
    "iteration",
    "iter",
)
"""Lower-cased column names taken as the step, in order of preference."""

EPOCH_COLUMN_NAMES = ("epoch",)
"""Lower-cased column names taken as the step when no step column exists."""

NAN_TOKENS = frozenset({"nan", "+nan", "-nan"})
"""Lower-cased spellings of NaN kept as values (infinities parse as numbers already)."""

# int64 range as floats: steps outside it cannot be stored and are treated as garbage.
_STEP_LIMIT = float(2**63 - 1024)

UNNAMED = "unnamed"
"""The metric name given to a column or key whose name is empty."""

# How many names a note lists before "...".
_NOTE_NAMES = 6


def canonical_name(
    raw_name: str,
    aliases: Mapping[str, str],
    spelling: Callable[[str], str] | None = None,
) -> str:
    """The canonical metric name for a raw column/key name.

    A user alias for the raw name wins; otherwise the format's own `spelling` rewrite
    (e.g. HF's `eval_loss` -> `eval/loss`) is applied and the result normalised.
    """
    if raw_name in aliases:
        return aliases[raw_name]
    return normalize(spelling(raw_name) if spelling else raw_name, aliases)


def list_names(counts: Mapping[str, int] | Iterable[str]) -> str:
    """`a 2, b 1` (or `a, b`) for a note, cut after a few names."""
    if isinstance(counts, Mapping):
        parts = [f"{name} {count}" for name, count in counts.items()]
    else:
        parts = list(counts)
    shown = ", ".join(parts[:_NOTE_NAMES])
    return shown + (", ..." if len(parts) > _NOTE_NAMES else "")


# --- columns to a Run ------------------------------------------------------------------


@dataclass
class Column:
    """One metric as read from the source, in file order, before sorting."""

    raw_name: str
    """The name as written in the log."""
    name: str
    """The canonical name it maps to."""
    steps: IntArray
    values: FloatArray
    wall_time: FloatArray | None = None
    skipped_cells: int = 0
    """Cells of this column that held something that is not a number."""


def _not_repeated(steps: IntArray, values: FloatArray) -> BoolArray:
    """Mask that drops exact repeats: a point whose step and value (NaN equal to NaN) are
    logged again later. A repeat is no conflict (Lightning writes `epoch` on every row of a
    step), so it is collapsed here and not counted as a duplicate step."""
    keep = np.ones(steps.shape[0], dtype=bool)
    if steps.shape[0] < 2 or bool(np.all(steps[1:] > steps[:-1])):
        return keep
    order = np.argsort(steps, kind="stable")
    sorted_steps, sorted_values = steps[order], values[order]
    same_value = (sorted_values[1:] == sorted_values[:-1]) | (
        np.isnan(sorted_values[1:]) & np.isnan(sorted_values[:-1])
    )
    repeated = (sorted_steps[1:] == sorted_steps[:-1]) & same_value
    keep[order[:-1][repeated]] = False
    return keep


class RunBuilder:
    """Collects columns, notes and meta for one Run and builds it once."""

    def __init__(self, source_format: str, source_path: str) -> None:
        self.source_format = source_format
        self.source_path = source_path
        self.meta: dict[str, Any] = {}
        self._notes: list[str] = []
        self._columns: list[Column] = []

    def note(self, text: str) -> None:
        """Add a reader note (shown in every report)."""
        self._notes.append(text)

    def add(self, column: Column) -> None:
        """Add a metric column; collisions are resolved in `build`."""
        if not column.name.strip():
            column.name = UNNAMED
        self._columns.append(column)

    def _final_names(self) -> list[tuple[Column, str]]:
        """Give every column a unique metric name.

        When several columns map to one canonical name, the column already spelled that way
        (e.g. `train/loss` beside `loss`) keeps it, else the first in file order does; the
        others keep their raw name, with a note.
        """
        groups: dict[str, list[Column]] = {}
        for column in self._columns:
            groups.setdefault(column.name, []).append(column)
        taken = set(groups)
        named: list[tuple[Column, str]] = []
        for name, group in groups.items():
            winner = next(
                (c for c in group if c.raw_name.strip().lower() == name.lower()), group[0]
            )
            named.append((winner, name))
            for other in group:
                if other is winner:
                    continue
                fallback = other.raw_name.strip() or UNNAMED
                candidate, counter = fallback, 2
                while candidate in taken:
                    candidate, counter = f"{fallback} ({counter})", counter + 1
                taken.add(candidate)
                named.append((other, candidate))
                self.note(
                    f"{other.raw_name!r} and {winner.raw_name!r} both mean {name!r}: "
                    f"{winner.raw_name!r} is read as {name!r}, {other.raw_name!r} "
                    f"kept as {candidate!r}"
                )
        order = {id(column): index for index, column in enumerate(self._columns)}
        named.sort(key=lambda pair: order[id(pair[0])])
        return named

    def build(self) -> Run:
        """The Run: one Series per non-empty column, meta counts and notes filled in."""
        metrics: dict[str, Series] = {}
        duplicates: dict[str, int] = {}
        skipped: dict[str, int] = {}
        backwards: dict[str, int] = {}
        empty: list[str] = []
        for column, name in self._final_names():
            if column.skipped_cells:
                skipped[name] = column.skipped_cells
            if column.steps.shape[0] == 0:
                empty.append(column.raw_name)
                continue
            went_back = int(np.count_nonzero(np.diff(column.steps) < 0))
            if went_back:
                backwards[name] = went_back
            keep = _not_repeated(column.steps, column.values)
            series, dropped = Series.build(
                column.steps[keep],
                column.values[keep],
                None if column.wall_time is None else column.wall_time[keep],
            )
            if dropped:
                duplicates[name] = dropped
            metrics[name] = series
        if empty:
            self.note(f"ignored column(s) with no values: {list_names(empty)}")
        if skipped:
            self.note(f"skipped cells that are not numbers: {list_names(skipped)}")
        if backwards:
            self.note(
                "steps go backwards in file order (a resumed or restarted run, or a step "
                f"counter that resets): {list_names(backwards)}"
            )
        if duplicates:
            self.note(
                "dropped points whose step was logged again (the value logged last wins): "
                f"{list_names(duplicates)}"
            )
        meta = dict(self.meta)
        meta["duplicate_steps"] = duplicates
        meta["skipped_cells"] = skipped
        meta["backward_steps"] = backwards
        if self._notes:
            meta["notes"] = [*meta.get("notes", []), *self._notes]
        return Run(metrics, self.source_format, self.source_path, meta)


# --- tables: dense numeric columns -----------------------------------------------------


@dataclass
class NumericColumn:
    """One source column, one entry per row."""

    values: FloatArray
    """Float64 per row; meaningless where `present` is False."""
    present: BoolArray
    """True where the row logged a value (a logged NaN counts as present)."""
    garbage: int = 0
    """Non-empty cells that are not numbers."""

    @property
    def numeric_cells(self) -> int:
        return int(np.count_nonzero(self.present))

    @property
    def is_text(self) -> bool:
        """Mostly words, not numbers: a name or date column, not a metric."""
        return self.garbage > self.numeric_cells


@dataclass
class Table:
    """Rows x named numeric columns, in file order."""

    columns: dict[str, NumericColumn]
    row_count: int
    ignored: dict[str, str] = field(default_factory=dict)
    """Raw name -> why the column is not a metric (text, lists, ...)."""
    notes: list[str] = field(default_factory=list)
    """Parsing facts (skipped lines, junk first line) for the Run's notes."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Parsing counts for the Run's meta (e.g. `skipped_rows`)."""


@dataclass(frozen=True)
class StepChoice:
    """Which column is the step."""

    column: str | None
    """Raw column name, or None for the row number."""
    is_epoch: bool = False
    """The column is an epoch counter standing in for a missing step column."""


def find_step_column(names: Iterable[str]) -> StepChoice:
    """Apply the step column rule (module docstring) to a table's column names."""
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.strip().lower(), name)
    for candidate in STEP_COLUMN_NAMES:
        if candidate in by_lower:
            return StepChoice(by_lower[candidate])
    for candidate in EPOCH_COLUMN_NAMES:
        if candidate in by_lower:
            return StepChoice(by_lower[candidate], is_epoch=True)
    return StepChoice(None)


def _integral_steps(column: NumericColumn) -> tuple[IntArray, BoolArray] | None:
    """Integer steps and the rows that have one, or None if a logged step is fractional,
    non-finite, out of range or never a number (then the column cannot be the step)."""
    has_step = column.present.copy()
    logged = column.values[has_step]
    if column.is_text or (logged.size == 0 and has_step.size) or not np.isfinite(logged).all():
        return None
    if logged.size and (
        bool(np.any(np.abs(logged) > _STEP_LIMIT)) or bool(np.any(logged != np.floor(logged)))
    ):
        return None
    steps = np.zeros(column.values.shape[0], dtype=np.int64)
    steps[has_step] = logged.astype(np.int64)
    return steps, has_step


def table_to_run(
    table: Table,
    builder: RunBuilder,
    *,
    name_for: Callable[[str], str],
    step: StepChoice | None = None,
    wall_time_column: str | None = None,
    exclude: Iterable[str] = (),
    require_metrics: bool = True,
) -> Run:
    """Turn a table into a Run through `builder` (which may already hold meta and notes).

    `step` forces the step column (default: the step column rule); `wall_time_column`
    supplies wall times; `exclude` names columns that are neither step nor metric. With
    `require_metrics`, a table with rows but no numeric metric column is an InputError.
    """
    for text in table.notes:
        builder.note(text)
    builder.meta.update(table.meta)
    choice = step if step is not None else find_step_column(table.columns)
    row_count = table.row_count
    steps: IntArray = np.arange(row_count, dtype=np.int64)
    has_step: BoolArray = np.ones(row_count, dtype=bool)
    step_column = choice.column
    # An unusable step column is still not a metric, unless it is an epoch counter.
    unusable_step = None if choice.is_epoch else step_column
    if step_column is not None:
        resolved = _integral_steps(table.columns[step_column])
        if resolved is None:
            builder.note(
                f"step column {step_column!r} holds values that are not whole numbers "
                "(fractions, NaN or text): "
                "using the row number as the step"
            )
            step_column = None
            choice = StepChoice(None)
        else:
            steps, has_step = resolved
    elif row_count:
        builder.note(
            "no step column (looked for "
            f"{', '.join(STEP_COLUMN_NAMES + EPOCH_COLUMN_NAMES)}): "
            "using the row number as the step"
        )
    builder.meta["step_column"] = step_column
    if choice.is_epoch and step_column is not None:
        builder.note(f"no step column: using {step_column!r} as the step")

    wall_time: FloatArray | None = None
    if wall_time_column is not None and wall_time_column in table.columns:
        source = table.columns[wall_time_column]
        wall_time = np.where(source.present, source.values, np.nan)

    skip = {*exclude, *(c for c in (step_column, unusable_step, wall_time_column) if c)}
    metric_columns = [
        (raw, column)
        for raw, column in table.columns.items()
        if raw not in skip and not column.is_text
    ]
    text_columns = [
        raw for raw, column in table.columns.items() if column.is_text and raw not in skip
    ]
    ignored = {**table.ignored, **dict.fromkeys(text_columns, "text")}
    if ignored:
        builder.note(f"ignored columns that are not numbers: {list_names(ignored)}")

    if require_metrics and row_count and not metric_columns:
        raise InputError(builder.source_path, "no numeric column")

    rows_without_step = 0
    if step_column is not None and not bool(np.all(has_step)):
        logged_anything = np.zeros(row_count, dtype=bool)
        for _, column in metric_columns:
            logged_anything |= column.present
        rows_without_step = int(np.count_nonzero(logged_anything & ~has_step))
    if rows_without_step:
        builder.meta["rows_without_step"] = rows_without_step
        builder.note(f"skipped {rows_without_step} row(s) with values but no {step_column!r}")

    for raw, column in metric_columns:
        keep = column.present & has_step
        builder.add(
            Column(
                raw_name=raw,
                name=name_for(raw),
                steps=steps[keep],
                values=column.values[keep],
                wall_time=None if wall_time is None else wall_time[keep],
                skipped_cells=column.garbage,
            )
        )
    return builder.build()


# --- JSON objects to a table -------------------------------------------------------------


class Cell(enum.Enum):
    """What a JSON value is, when it is not a number."""

    ABSENT = "absent"
    """null or "": not logged."""
    GARBAGE = "garbage"
    """A string or boolean that is not a number."""
    NOT_SCALAR = "not scalar"
    """A list (or other container) where a number was expected."""


def parse_number_text(text: str) -> float | None:
    """A number from text (`"0.5"`, `"nan"`, `"-Infinity"`, `" 1e3 "`), or None."""
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        return None


def json_cell(value: object) -> float | Cell:
    """Classify one JSON value (json.loads output) as a float or a `Cell` kind."""
    if value is None:
        return Cell.ABSENT
    if isinstance(value, bool):
        return Cell.GARBAGE
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return Cell.GARBAGE
    if isinstance(value, str):
        if not value.strip():
            return Cell.ABSENT
        number = parse_number_text(value)
        return Cell.GARBAGE if number is None else number
    return Cell.NOT_SCALAR


def flatten_object(record: dict[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """`{"eval": {"loss": 1}}` -> `("eval/loss", 1)`; non-dict values pass through.

    Iterative, so a deeply nested object cannot exhaust the interpreter's stack.
    """
    stack: list[tuple[str, Iterator[tuple[str, object]]]] = [(prefix, iter(record.items()))]
    while stack:
        prefix, items = stack[-1]
        for key, value in items:
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                stack.append((name + "/", iter(value.items())))
                break
            yield name, value
        else:
            stack.pop()


MAX_RECORD_CELLS = 100_000_000
"""Keys x rows above which JSON records are refused (about 900 MB as dense columns)."""


class RecordTableBuilder:
    """Accumulates JSON objects (one per row) into a `Table`; keys are flattened with `/`.

    Cells are kept in compact typed arrays (8 bytes a cell, not a Python float object and a
    list slot), so a million-row log costs tens of MB here, not hundreds. Rows can be added
    at any time, also after `table()` (`trainspotter watch` appends as a log grows)."""

    def __init__(self) -> None:
        self._cells: dict[str, tuple[array[int], array[float]]] = {}
        self._garbage: Counter[str] = Counter()
        self._not_scalar: Counter[str] = Counter()
        self.row_count = 0

    def add(self, record: dict[str, object]) -> None:
        """Add one row. Plain floats (nearly every cell of a real log) take a fast path:
        this loop is most of the cost of reading a large JSON Lines file."""
        row = self.row_count
        self.row_count += 1
        cells = self._cells
        for name, value in record.items():
            if type(value) is float:
                entry = cells.get(name)
                if entry is None:
                    entry = cells[name] = (array("q"), array("d"))
                entry[0].append(row)
                entry[1].append(value)
            elif isinstance(value, dict):
                for nested_name, nested_value in flatten_object(value, name + "/"):
                    self._add_cell(row, nested_name, nested_value)
            else:
                self._add_cell(row, name, value)

    def _add_cell(self, row: int, name: str, value: object) -> None:
        cell = json_cell(value)
        if isinstance(cell, float):
            entry = self._cells.get(name)
            if entry is None:
                entry = self._cells[name] = (array("q"), array("d"))
            entry[0].append(row)
            entry[1].append(cell)
        elif cell is Cell.GARBAGE:
            if name not in self._cells:
                self._cells[name] = (array("q"), array("d"))
            self._garbage[name] += 1
        elif cell is Cell.NOT_SCALAR:
            self._not_scalar[name] += 1

    def marks(self) -> dict[str, int]:
        """How many values each key holds now (for `values_since`)."""
        return {name: len(entry[1]) for name, entry in self._cells.items()}

    def values_since(self, marks: dict[str, int]) -> dict[str, FloatArray]:
        """Per key, the numeric values added after `marks` was taken, in row order."""
        out: dict[str, FloatArray] = {}
        for name, (_, values) in self._cells.items():
            start = marks.get(name, 0)
            if len(values) > start:
                out[name] = np.frombuffer(values, dtype=np.float64)[start:].copy()
        return out

    def table(self, display: str) -> Table:
        """The accumulated rows as a dense Table; InputError when keys x rows is too large
        for a metrics log (a key per sample, say) to be held densely."""
        if len(self._cells) * self.row_count > MAX_RECORD_CELLS:
            raise InputError(
                display,
                f"{len(self._cells)} distinct keys over {self.row_count} rows is too many "
                "for a metrics log",
            )
        columns: dict[str, NumericColumn] = {}
        for name, (rows, values) in self._cells.items():
            dense = np.full(self.row_count, np.nan, dtype=np.float64)
            present = np.zeros(self.row_count, dtype=bool)
            index = np.frombuffer(rows, dtype=np.int64)
            dense[index] = np.frombuffer(values, dtype=np.float64)
            present[index] = True
            columns[name] = NumericColumn(dense, present, self._garbage[name])
        ignored = {
            name: "lists"
            for name in self._not_scalar
            if name not in columns or columns[name].numeric_cells == 0
        }
        for name in ignored:
            columns.pop(name, None)
        return Table(columns, self.row_count, ignored=ignored)


# --- CSV to a table ----------------------------------------------------------------------

CSV_DELIMITERS = (",", ";", "\t", "|")
MAX_CSV_COLUMNS = 10_000
"""The most columns a CSV header may name: pandas' work grows faster than linearly with
the column count (520,000 columns in a 1 MiB header took minutes), and no training log
logs that many metrics."""


def count_unquoted(line: str, delimiter: str) -> int:
    """How many times `delimiter` occurs outside double quotes in `line`."""
    count, quoted = 0, False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == delimiter and not quoted:
            count += 1
    return count


@dataclass(frozen=True)
class CsvLayout:
    """Where the header is and what separates cells, sniffed from the head of the file."""

    delimiter: str
    header: str
    """The header line (after any junk line)."""
    junk_line: str | None = None
    """A first line that is not the header (Keras `model_history_log`), skipped."""
    skip_lines: int = 0
    """Physical lines before the header, for `read_csv(skiprows=...)`."""


def header_cells(layout: CsvLayout) -> list[str]:
    """The header's cell names, unquoted and stripped."""
    try:
        cells = next(csv.reader([layout.header], delimiter=layout.delimiter), [])
    except csv.Error:
        return []
    return [cell.strip().lstrip("\ufeff") for cell in cells]


def _best_delimiter(line: str) -> tuple[str, int]:
    counts = [(count_unquoted(line, d), -i, d) for i, d in enumerate(CSV_DELIMITERS)]
    count, _, delimiter = max(counts)
    return delimiter, count


def sniff_csv_layout(head: str) -> CsvLayout | None:
    """The header line and delimiter of a CSV head, or None if the head has no text line.

    A first line without any delimiter, followed by a line with one, is junk before the
    header (Keras' CSVLogger writes a `model_history_log` title line in some projects).
    """
    # Split on \n only so that skip_lines counts physical lines the way pandas does for \n
    # and \r\n files; a stray \r (the "\r\r\n" double-CR bug) stays inside the line.
    lines = head.split("\n")
    non_blank = [(i, line.strip("\r\ufeff")) for i, line in enumerate(lines) if line.strip()]
    if not non_blank:
        return None
    first_index, first = non_blank[0]
    delimiter, count = _best_delimiter(first)
    if count == 0 and len(non_blank) > 1:
        second_index, second = non_blank[1]
        second_delimiter, second_count = _best_delimiter(second)
        if second_count > 0:
            return CsvLayout(second_delimiter, second, first.strip(), second_index)
    return CsvLayout(delimiter, first, None, first_index)


def _float_or_nan(cell: Any) -> float:
    try:
        return float(cell)
    except OverflowError:  # a Python int beyond the float range
        return math.inf if cell > 0 else -math.inf
    except (TypeError, ValueError):
        return math.nan


def _text_column_to_numeric(column: pd.Series[Any]) -> NumericColumn:
    """Convert a column pandas left as text: numbers, nan/inf tokens, empties and garbage."""
    absent = column.isna().to_numpy(dtype=bool)
    try:
        numbers = pd.to_numeric(column, errors="coerce")
    except OverflowError:
        # An integer too large for a float (`1` and 400 zeros): pandas raises even with
        # errors="coerce"; Python's float() of the text gives +-inf, which later checks
        # treat as any other non-finite value. Cell by cell, on this rare path only.
        numbers = pd.Series([_float_or_nan(cell) for cell in column], dtype=np.float64)
    values = numbers.to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
    parsed = ~np.isnan(values)
    unparsed = ~parsed & ~absent
    present = parsed.copy()
    garbage = 0
    if bool(np.any(unparsed)):
        tokens = column[unparsed].astype(str).str.strip().str.lower()
        is_nan_token = tokens.isin(NAN_TOKENS).to_numpy(dtype=bool)
        is_blank = (tokens == "").to_numpy(dtype=bool)
        unparsed_rows = np.flatnonzero(unparsed)
        present[unparsed_rows[is_nan_token]] = True
        values[unparsed_rows[is_nan_token]] = np.nan
        garbage = int(np.count_nonzero(~is_nan_token & ~is_blank))
    return NumericColumn(values, present, garbage)


def numeric_column(column: pd.Series[Any]) -> NumericColumn:
    """A parsed CSV column as numbers per row (see the cell rules in the module docstring)."""
    if pd.api.types.is_bool_dtype(column.dtype):
        count = int(column.notna().sum())
        return NumericColumn(
            np.full(len(column), np.nan), np.zeros(len(column), dtype=bool), garbage=count
        )
    if pd.api.types.is_numeric_dtype(column.dtype):
        # With na_values=[""] and no default NA strings, a NaN in a numeric column can only
        # come from an empty cell: "nan" text would have made the column text.
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        return NumericColumn(values, ~np.isnan(values))
    return _text_column_to_numeric(column)


_BAD_LINE = re.compile(r"Skipping line (\d+)")


def _looks_numeric(name: str) -> bool:
    try:
        float(name)
    except ValueError:
        return False
    return True


def read_csv_table(path: Path, display: str, *, layout: CsvLayout | None = None) -> Table:
    """Parse a CSV log into a Table of numeric columns (text columns marked ignored).

    Handles `,` `;` tab and `|` separators, a junk line before the header, blank lines,
    CRLF and `\\r\\r\\n`, a BOM, spaces after separators, quoted cells, a missing final
    newline; rows with more cells than the header are skipped and counted.
    """
    try:
        with path.open("rb") as handle:
            raw_head = handle.read(BINARY_PROBE_BYTES)
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror or exc}") from None
    if not raw_head:
        raise InputError(display, "file is empty")
    head = decode_head(raw_head, display)
    check_line_lengths(path, display)
    layout = layout or sniff_csv_layout(head)
    if layout is None:
        raise InputError(display, "no header line (the file holds only blank lines)")
    columns = count_unquoted(layout.header, layout.delimiter) + 1
    if columns > MAX_CSV_COLUMNS:
        # `head` may hold only the start of a long header: "at least".
        raise InputError(
            display,
            f"the header names at least {columns:,} columns (the limit is {MAX_CSV_COLUMNS:,})",
        )

    frame, bad_lines = parse_csv_frame(
        path, display, layout, skiprows=layout.skip_lines, encoding="utf-8-sig"
    )
    table = Table({}, len(frame))
    if bad_lines:
        table.meta["skipped_rows"] = len(bad_lines)
        table.notes.append(bad_lines_note(len(bad_lines), min(bad_lines) + layout.skip_lines))
    if layout.junk_line is not None:
        table.notes.append(f"skipped a first line that is not the header: {layout.junk_line!r}")
    positions, table.ignored = column_positions(list(frame.columns), display)
    for position, name in positions:
        table.columns[name] = numeric_column(frame.iloc[:, position])
    return table


def bad_lines_note(count: int, first_line: int) -> str:
    """The note for rows with more cells than the header."""
    return f"skipped {count} row(s) with more cells than the header (first at line {first_line})"


def parse_csv_frame(
    source: Path | io.BytesIO,
    display: str,
    layout: CsvLayout,
    **options: Any,
) -> tuple[pd.DataFrame, list[int]]:
    """pandas' C parser on `source` with the cell rules (module docstring); returns the
    frame and the (1-based, as pandas counts) line numbers of rows skipped for having more
    cells than the header. `options` adds `read_csv` arguments (skiprows, names, ...)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            frame = pd.read_csv(
                source,
                sep=layout.delimiter,
                keep_default_na=False,
                na_values=[""],
                skipinitialspace=True,
                index_col=False,
                on_bad_lines="warn",
                engine="c",
                **options,
            )
        except UnicodeDecodeError as exc:
            raise InputError(display, f"not UTF-8 text ({exc.reason})") from None
        except pd.errors.EmptyDataError:
            raise InputError(display, "no header line (the file holds only blank lines)") from None
        except Exception as exc:  # pandas' C parser raises several types; all mean bad input
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(display, f"cannot parse as CSV: {message}") from None
    bad_lines = [int(m.group(1)) for w in caught for m in _BAD_LINE.finditer(str(w.message))]
    return frame, bad_lines


def column_positions(
    raw_names: list[Any], display: str
) -> tuple[list[tuple[int, str]], dict[str, str]]:
    """The header's metric columns as (position, unique name), and the ignored ones.

    Raises InputError when the header looks like values (no header row)."""
    names = [str(name).strip().lstrip("\ufeff") for name in raw_names]
    if names and sum(_looks_numeric(name) for name in names) * 2 >= len(names):
        raise InputError(display, "no header row: the first line holds values, not column names")
    positions: list[tuple[int, str]] = []
    ignored: dict[str, str] = {}
    taken: set[str] = set()
    for position, name in enumerate(names):
        if not name or name.startswith("Unnamed: "):
            ignored[f"column {position + 1}"] = "no name"
            continue
        unique, counter = name, 1
        while unique in taken:
            unique, counter = f"{name}.{counter}", counter + 1
        taken.add(unique)
        positions.append((position, unique))
    return positions, ignored
