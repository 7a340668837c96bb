"""JSON objects to a `Table` (the jsonl and hf readers), with `_tabular`'s cell rules:
null is "not logged", non-finite spellings are values, anything else that is not a number
is a skipped cell; nested objects are flattened to `parent/child` names.
"""

from __future__ import annotations

import enum
from array import array
from collections import Counter
from collections.abc import Iterator

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import FloatArray
from trainspotter.readers._tabular import (
    NumericColumn,
    Table,
)


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
