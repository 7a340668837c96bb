"""Shared machinery that turns rows of named values into a `Run`, used by every reader.

Three layers, each used by several readers so no format repeats another's parsing:

- `Table` / `NumericColumn`: dense per-row numeric columns with a "present" mask, built
  either from a CSV (`_csv.read_csv_table`, used by the csv, lightning and wandb readers)
  or from JSON objects (`_records.RecordTableBuilder`, used by the jsonl and hf readers).
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
`trainer/global_step`, `train/global_step`, `_step`, `time/total_timesteps`, `iteration`,
`iter`, in that order. `time/total_timesteps` is Stable-Baselines3's x-axis (environment
steps so far; its TensorBoard writer uses it as the step): its `progress.csv` and
`progress.json` have no other step column, and `time/iterations` counts rollouts.
Without one, an `epoch` column is the step (Keras' CSVLogger, hand-written epoch tables)
and is then not also a metric. Without either, or when the chosen column holds fractional
or non-finite values, the row number is the step, with a note (a fractional `epoch` then
stays a metric; an unusable step column does not). Rows with values but an empty step cell
are skipped and counted in `meta["rows_without_step"]`.

Tables are built from CSV in `readers/_csv.py` and from JSON objects in
`readers/_records.py`; both follow the cell rules above.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from trainspotter.errors import InputError
from trainspotter.model import FloatArray, IntArray, Run, Series
from trainspotter.names import normalize
from trainspotter.readers._appended import EPOCH_METRIC, find_runs
from trainspotter.readers._epoch_steps import steps_across_epochs

BoolArray = npt.NDArray[np.bool_]

STEP_COLUMN_NAMES = (
    "step",
    "global_step",
    "trainer/global_step",
    "train/global_step",
    "_step",
    "time/total_timesteps",
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

    def __init__(
        self,
        source_format: str,
        source_path: str,
        *,
        appended_runs: bool = False,
        run_name: str | None = None,
    ) -> None:
        self.source_format = source_format
        self.source_path = source_path
        self.appended_runs = appended_runs
        """Look for several runs appended in one file and cut it into them (`_appended`)."""
        self.run_name = run_name
        """Which of the appended runs to build ("1", "2", ...; `--run`); None: the latest."""
        self.meta: dict[str, Any] = {}
        self._notes: list[str] = []
        self._columns: list[Column] = []

    def note(self, *texts: str) -> None:
        """Add reader notes (shown in every report), in order."""
        self._notes.extend(texts)

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

    def _one_run(self, named: list[tuple[Column, str]]) -> list[tuple[Column, str]]:
        """The columns cut to one of several appended runs (the one asked for, else the
        latest), with a note naming it and the others in `meta` (or as given)."""
        epoch = next((c.values for c, name in named if name == EPOCH_METRIC), None)
        found = find_runs([n for _, n in named], [c.steps for c, _ in named], epoch)
        if found is None:
            return named
        names = [str(i + 1) for i in range(found.runs)]
        chosen = self.run_name if self.run_name is not None else names[-1]
        if chosen not in names:
            raise InputError(
                self.source_path,
                f"no run {chosen!r} in this log: it holds {found.runs} runs appended one "
                f"after another, read with --run 1 to --run {found.runs}",
            )
        run = names.index(chosen)
        kept: list[tuple[Column, str]] = []
        for index, (column, name) in enumerate(named):
            keep = found.keep(index, column.steps, run)
            if column.steps.shape[0] and not bool(np.any(keep)):
                continue  # logged only by another run
            column.steps, column.values = column.steps[keep], column.values[keep]
            if column.wall_time is not None:
                column.wall_time = column.wall_time[keep]
            kept.append((column, name))
        steps = [c.steps for c, _ in kept if c.steps.shape[0]]
        first = min(int(s.min()) for s in steps) if steps else 0
        final = max(int(s.max()) for s in steps) if steps else 0
        self.meta["appended_runs"] = found.runs
        self.meta["run_name"] = chosen
        if self.run_name is None:
            self.meta["other_runs"] = names[:-1]
        clock = "step counter" if found.starts is not None else "epoch"
        latest = " (the latest)" if run == found.runs - 1 else ""
        self.note(
            f"this log holds {found.runs} runs appended one after another (the {clock} "
            f"starts again): this is run {chosen} of {found.runs}{latest}, steps "
            f"{first}-{final}; each run is checked as its own log (--run N reads one)"
        )
        return kept

    def build(self) -> Run:
        """The Run: one Series per non-empty column, meta counts and notes filled in."""
        metrics: dict[str, Series] = {}
        duplicates: dict[str, int] = {}
        skipped: dict[str, int] = {}
        backwards: dict[str, int] = {}
        empty: list[str] = []
        named = self._final_names()
        if self.appended_runs:
            named = self._one_run(named)
        for column, name in named:
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
            _count_across_epochs(table, step_column, steps, has_step, builder)
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


def _count_across_epochs(
    table: Table, step_column: str, steps: IntArray, has_step: BoolArray, builder: RunBuilder
) -> None:
    """Rewrite `steps` in place when the step column starts again at every epoch
    (`_epoch_steps.py`), with a note saying how they were counted."""
    epoch_column = next(
        (raw for raw in table.columns if raw.strip().lower() in EPOCH_COLUMN_NAMES), None
    )
    if epoch_column is None or epoch_column == step_column:
        return
    epoch = table.columns[epoch_column]
    counted = steps_across_epochs(steps, has_step, epoch.values, epoch.present)
    if counted is None:
        return
    steps[:], length = counted
    builder.meta["steps_per_epoch"] = length
    builder.note(
        f"{step_column!r} starts again at every new {epoch_column!r}: steps are counted "
        f"across epochs as ({epoch_column} - first {epoch_column}) x {length} + {step_column}"
    )
