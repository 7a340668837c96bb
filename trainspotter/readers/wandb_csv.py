"""Weights & Biases CSV exports, both kinds that hold a time series.

- Run-history export (`run.history()` / "Export as CSV" of a run's table): a `_step`
  column plus `_runtime`/`_timestamp`; `_step` is the step, `_timestamp` the wall time,
  other `_`-prefixed system columns are dropped and metric names are normalised.
- Chart-panel export (a line plot's "Download CSV"): the x-axis column (usually `Step`)
  then `"<run> - <metric>"` columns, each with `__MIN`/`__MAX` companions. The companions
  are dropped (they are W&B's bucket bounds; a note says when they differ from the value,
  i.e. W&B sampled the curve), columns are grouped by run, and one run is read:
  `ReadOptions.run_name` picks it (an InputError lists the names when it is absent), else
  the first. `meta["run_name"]` names it and `meta["other_runs"]` lists the rest, which
  `readers.read_runs` (what `analyze` and `gate` call) reads too: every run is checked.

Rejected with a clear InputError: the runs-TABLE export (`Name`, `State`, ... one row per
run, no step), which is a summary of many runs, not a curve. W&B's binary `.wandb` files and
the API are not read.

Parsing is shared with the generic CSV reader (`_tabular.read_csv_table`, pandas' C parser).

`find_in_folder`: a folder holding exactly one `wandb_export*.csv` file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._csv import sniffed_header_cells
from trainspotter.readers._csv_tail import TableFileReader
from trainspotter.readers._tabular import (
    NumericColumn,
    RunBuilder,
    StepChoice,
    Table,
    canonical_name,
    list_names,
    table_to_run,
)
from trainspotter.readers.base import ReadOptions

SCORE = 90
RUN_METRIC_SEPARATOR = " - "
BOUND_SUFFIXES = ("__MIN", "__MAX")
HISTORY_STEP = "_step"
HISTORY_TIME = "_timestamp"
HISTORY_MARKERS = ("_runtime", "_timestamp")
RUNS_TABLE_MARKERS = {"name", "state"}
EXPORT_PREFIX = "wandb_export"


def _is_chart_header(cells: list[str]) -> bool:
    # The first cell names the x axis (`Step`); a digit there is a logger's timestamp
    # (`2024-01-01 12:00:00,123 - INFO - ...` splits at the comma), not a header.
    return (
        len(cells) >= 2
        and not any(c.isdigit() for c in cells[0])
        and all(RUN_METRIC_SEPARATOR in cell for cell in cells[1:])
    )


def _is_history_header(cells: list[str]) -> bool:
    return HISTORY_STEP in cells and any(marker in cells for marker in HISTORY_MARKERS)


def _is_runs_table(cells: list[str]) -> bool:
    lowered = {cell.lower() for cell in cells}
    return lowered >= RUNS_TABLE_MARKERS and HISTORY_STEP not in cells


class WandbReader(TableFileReader):
    """W&B run-history and chart-panel CSV exports (see the module docstring)."""

    name = "wandb"
    description = "W&B CSV export (run history, or a chart panel's CSV)"

    def sniff(self, path: Path, head: str) -> int:
        cells = sniffed_header_cells(head)
        if _is_history_header(cells) or _is_chart_header(cells) or _is_runs_table(cells):
            return SCORE
        return 0

    def find_in_folder(self, folder: Path) -> Path | None:
        try:
            exports = [
                child
                for child in folder.iterdir()
                if child.is_file()
                and child.name.lower().startswith(EXPORT_PREFIX)
                and child.suffix.lower() == ".csv"
            ]
        except OSError:
            return None
        return exports[0] if len(exports) == 1 else None

    def run_from_table(self, table: Table, display: str, options: ReadOptions) -> Run:
        """The Run from a parsed export (also used by `watch`)."""
        names = list(table.columns)
        if _is_history_header(names):
            return self._read_history(table, display, options)
        if names and _is_chart_header(names):
            return self._read_chart(table, display, options)
        if _is_runs_table(names):
            raise InputError(
                display,
                "a W&B runs-table export (one row per run, no step column) is a summary, not "
                "a training curve: export a run's history or a chart panel's CSV instead",
            )
        raise InputError(
            display,
            "not a W&B export: expected a '_step' column (run history) or "
            "'<run> - <metric>' columns (chart panel)",
        )

    def _read_history(self, table: Table, display: str, options: ReadOptions) -> Run:
        builder = RunBuilder(self.name, display)
        system = [name for name in table.columns if name.startswith("_")]
        return table_to_run(
            table,
            builder,
            name_for=lambda raw: canonical_name(raw, options.aliases),
            step=StepChoice(HISTORY_STEP),
            wall_time_column=HISTORY_TIME if HISTORY_TIME in table.columns else None,
            exclude=system,
        )

    def _read_chart(self, table: Table, display: str, options: ReadOptions) -> Run:
        names = list(table.columns)
        x_axis = names[0]
        runs: dict[str, dict[str, str]] = {}
        bounds: dict[str, list[str]] = {}
        for raw in names[1:]:
            base = raw
            for suffix in BOUND_SUFFIXES:
                if raw.endswith(suffix):
                    base = raw[: -len(suffix)]
            run_name, metric = base.rsplit(RUN_METRIC_SEPARATOR, 1)
            if base != raw:
                bounds.setdefault(base, []).append(raw)
            else:
                runs.setdefault(run_name.strip(), {})[metric.strip()] = raw
        if not runs:
            raise InputError(display, "W&B chart export without any '<run> - <metric>' column")
        run_names = list(runs)
        if options.run_name is not None:
            if options.run_name not in runs:
                raise InputError(
                    display,
                    f"no run named {options.run_name!r} in this W&B export "
                    f"(runs: {', '.join(run_names)})",
                )
            chosen = options.run_name
        else:
            chosen = run_names[0]
        others = [name for name in run_names if name != chosen]

        builder = RunBuilder(self.name, display)
        builder.meta["run_name"] = chosen
        builder.meta["other_runs"] = others
        if others:
            builder.note(
                f"this W&B export holds {len(run_names)} runs; this is {chosen!r} "
                f"(--run NAME reads one run only); the others: {list_names(others)}"
            )
        if x_axis.lower() != "step":
            builder.note(f"the chart's x-axis column {x_axis!r} is used as the step")

        columns: dict[str, NumericColumn] = {x_axis: table.columns[x_axis]}
        for metric, raw in runs[chosen].items():
            value = table.columns[raw]
            columns[metric] = value
            if any(_differs(value, table.columns[bound]) for bound in bounds.get(raw, [])):
                builder.note(
                    f"W&B sampled {metric!r} into buckets (__MIN/__MAX differ from the value): "
                    "each point is a bucket's mean"
                )
        chosen_table = Table(columns, table.row_count, notes=table.notes, meta=table.meta)
        return table_to_run(
            chosen_table,
            builder,
            name_for=lambda raw: canonical_name(raw, options.aliases),
            step=StepChoice(x_axis),
        )


def _differs(value: NumericColumn, bound: NumericColumn) -> bool:
    both = value.present & bound.present
    left, right = value.values[both], bound.values[both]
    finite = np.isfinite(left) & np.isfinite(right)
    return bool(np.any(left[finite] != right[finite]))


READER = WandbReader()
