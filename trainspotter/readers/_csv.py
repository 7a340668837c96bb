"""CSV to a `Table` (the csv, lightning and wandb readers, and `watch`'s `CsvTail`), with
`_tabular`'s cell rules.

Parsing uses pandas' C parser: it reads a million-row, six-column log in about half a
second, three times faster than the csv module and with half its memory (DESIGN.md).
The layout (delimiter, a junk first line before the header) is sniffed from the head.
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trainspotter.errors import InputError
from trainspotter.readers._files import BINARY_PROBE_BYTES, check_line_lengths, decode_head
from trainspotter.readers._tabular import (
    NAN_TOKENS,
    NumericColumn,
    Table,
)

if TYPE_CHECKING:  # pandas is imported where a CSV is parsed: other logs never load it
    import pandas as pd

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


def sniffed_header_cells(head: str) -> list[str]:
    """The header cells a reader's `sniff` judges a CSV head by; none for a binary head
    (a NUL byte) or one without a text line."""
    if "\x00" in head:
        return []
    layout = sniff_csv_layout(head)
    return header_cells(layout) if layout is not None else []


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
    import pandas as pd

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
    import pandas as pd

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
    import pandas as pd

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
