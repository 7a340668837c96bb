"""Runs from data already in memory: a pandas DataFrame, a list of dict records, or metric
columns collected point by point (the Python API and `Monitor`).

Not a file format (no registry entry): the same rules as the file readers, through the
same code (`_tabular`), so a table gives the Run its CSV or JSON Lines file would give:
names go through the config's aliases and `names.normalize` (`loss` -> `train/loss`), the
step is the step column rule's (`step`, `global_step`, `trainer/global_step`, `_step`,
`time/total_timesteps`, `iteration`, `iter`, then `epoch`), duplicate steps keep the value
given last, exact repeats collapse.

Cells:
- records follow the JSON cell rules: a missing key or None is "not logged"; a float NaN
  or infinity is a value and kept (a NaN loss is evidence); numpy and torch scalars count
  as numbers; other values are skipped cells, counted.
- a DataFrame follows pandas' meaning of NaN: NaN, None and pd.NA are "not logged" (a
  frame built from records with different keys, or W&B's `run.history()`, fills every gap
  with NaN, so a NaN cell cannot be told from a gap); +/-inf is a value. To keep a NaN
  loss as evidence, pass records or log through `Monitor`. Without a step-named column,
  an index the user set is the step, else an `epoch` column, else the row number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from trainspotter.errors import InputError
from trainspotter.model import FloatArray, IntArray, Run
from trainspotter.readers._csv import numeric_column
from trainspotter.readers._records import RecordTableBuilder
from trainspotter.readers._tabular import (
    STEP_COLUMN_NAMES,
    Column,
    NumericColumn,
    RunBuilder,
    StepChoice,
    Table,
    canonical_name,
    find_step_column,
    table_to_run,
)

if TYPE_CHECKING:  # a DataFrame comes with pandas loaded; other paths never need it
    import pandas as pd

FRAME_FORMAT = "dataframe"
RECORDS_FORMAT = "records"
INDEX_STEP = "step"
"""The name the index takes as the step column when it has no name."""


def as_number(value: object) -> float | None:
    """A number as a float (int, float, a numpy scalar, a one-element torch tensor), else
    None (strings, booleans, lists and larger arrays are not numbers here)."""
    if isinstance(value, bool | str):
        return None
    if isinstance(value, int | float):
        return float(value)
    size = getattr(value, "size", 1)
    numel = getattr(value, "numel", None)
    if callable(numel):
        size = numel()
    if size != 1 or not hasattr(value, "__float__"):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _plain(value: object) -> object:
    """A record value as the JSON cell rules expect it: numpy/torch scalars as floats."""
    if value is None or isinstance(value, str | bool | dict):
        return value
    number = as_number(value)
    return value if number is None else number


def run_from_records(
    records: Iterable[object], display: str, aliases: Mapping[str, str] | None = None
) -> Run:
    """The Run of a list of dicts, one per logged row (see the module docstring)."""
    table = RecordTableBuilder()
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InputError(
                display, f"record {index} is a {type(record).__name__}, not a dict of metrics"
            )
        table.add({str(key): _plain(value) for key, value in record.items()})
    if table.row_count == 0:
        raise InputError(display, "no records")
    built = table.table(display)
    if find_step_column(built.columns).column is None:
        raise InputError(
            display,
            f"no step key in the records (looked for {', '.join(STEP_COLUMN_NAMES)}, epoch)",
        )
    return table_to_run(
        built,
        RunBuilder(RECORDS_FORMAT, display),
        name_for=lambda raw: canonical_name(raw, aliases or {}),
    )


def run_from_frame(
    frame: pd.DataFrame, display: str, aliases: Mapping[str, str] | None = None
) -> Run:
    """The Run of a DataFrame: a step column (or the index) and metric columns."""
    import pandas as pd

    columns: dict[str, NumericColumn] = {}
    for position in range(frame.shape[1]):
        name = str(frame.columns[position]).strip()
        if name in columns:
            raise InputError(display, f"two columns are named {name!r}")
        columns[name] = numeric_column(frame.iloc[:, position])
    step = find_step_column(columns)
    # A step-named column wins; else an index the user set (not the default row numbers)
    # is the step, before an epoch column.
    user_index = frame.index.name is not None or not isinstance(frame.index, pd.RangeIndex)
    if step.column is None or (step.is_epoch and user_index):
        index_name = str(frame.index.name).strip() if frame.index.name is not None else ""
        index_name = index_name or INDEX_STEP
        if index_name in columns:
            raise InputError(display, f"the index and a column are both named {index_name!r}")
        columns[index_name] = numeric_column(frame.index.to_series())
        step = StepChoice(index_name)
    table = Table(columns, int(frame.shape[0]))
    return table_to_run(
        table,
        RunBuilder(FRAME_FORMAT, display),
        name_for=lambda raw: canonical_name(raw, aliases or {}),
        step=step,
    )


def run_from_columns(
    columns: Iterable[tuple[str, str, IntArray, FloatArray, FloatArray]],
    source_format: str,
    display: str,
    meta: Mapping[str, Any] | None = None,
) -> Run:
    """The Run of metric columns collected point by point, each (raw name, canonical
    name, steps, values, wall times) in the order logged (`Monitor`)."""
    builder = RunBuilder(source_format, display)
    builder.meta.update(meta or {})
    builder.meta["step_column"] = INDEX_STEP
    for raw, name, steps, values, wall in columns:
        builder.add(Column(raw, name, steps, values, wall))
    return builder.build()


__all__ = ["as_number", "run_from_columns", "run_from_frame", "run_from_records"]
