"""One metric per quantity in a Lightning `metrics.csv`: which `_step`/`_epoch` columns to keep.

A key logged with `on_step=True, on_epoch=True` becomes two columns, `X_step` (one value per
logged step) and `X_epoch` (the epoch's mean, one per epoch). Analysing both reports every
incident twice. And a validation key logged per step is worse: Lightning writes the
*validation batch index* (counted across validation runs) in its `step` cell, so its steps
restart or fall behind the training steps around them, and each point is one batch, not an
evaluation. The rules, applied before the table becomes a Run:

1. **Per-batch columns.** An `X_step` column at least half of whose rows carry a
   step below the highest step already logged by the other columns earlier in the file is a
   per-validation-batch column: dropped, with a note. Its `X_epoch` twin (the mean over the
   validation run, at the training step) is the evaluation curve; without a twin the
   quantity has no evaluation curve in this log and the note says so. A resumed run that
   re-logs some steps does not trip this: only a minority of its rows fall behind. (Rows of
   the first validation run can precede every training row, so with two validation runs
   only half fall behind: hence "at least half".)
2. **Twins.** For each remaining pair `X_step` / `X_epoch` one column is kept, named `X`
   (then normalised: `val_loss` -> `eval/loss`): for an evaluation key (`names.is_eval`) the
   epoch aggregate, which is what an evaluation is; for a training key the per-step curve,
   which shows what happens inside an epoch, unless it has fewer points than the epoch
   curve (`log_every_n_steps` larger than an epoch), then the epoch curve. The other is
   dropped with a note, so each quantity gives one metric and one finding.

A lone `X_step` or `X_epoch` column (no twin) is kept under the reader's usual spelling.
This module only decides; `lightning_csv.py` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainspotter.names import is_eval
from trainspotter.readers._tabular import Table, list_names

STEP_SUFFIX = "_step"
EPOCH_SUFFIX = "_epoch"
BEHIND_FRACTION = 0.5
"""At least this share of a column's rows behind the steps already logged: per-batch."""


@dataclass
class ColumnChoice:
    """Which raw columns to drop, and the base name each kept twin is read as."""

    dropped: set[str] = field(default_factory=set)
    renamed: dict[str, str] = field(default_factory=dict)
    """Raw name of a kept twin -> its name without the suffix."""
    notes: list[str] = field(default_factory=list)


def _base(raw: str, suffix: str) -> str | None:
    if raw.lower().endswith(suffix) and len(raw) > len(suffix):
        return raw[: -len(suffix)]
    return None


def falls_behind(table: Table, step_column: str, raw: str) -> bool:
    """Whether most of `raw`'s rows carry a step below the highest step the other columns
    logged in earlier rows (a counter of its own: validation batch indices)."""
    steps_col = table.columns[step_column]
    column = table.columns[raw]
    has_step = steps_col.present & np.isfinite(steps_col.values)
    mine = column.present & has_step
    if not bool(mine.any()):
        return False
    others = has_step & ~column.present
    logged = np.where(others, steps_col.values, -np.inf)
    highest_before = np.concatenate(([-np.inf], np.maximum.accumulate(logged)[:-1]))
    behind = steps_col.values[mine] < highest_before[mine]
    return float(np.mean(behind)) >= BEHIND_FRACTION


def choose_columns(table: Table, step_column: str | None) -> ColumnChoice:
    """Apply the module's two rules to a parsed metrics.csv."""
    choice = ColumnChoice()
    step_twins = {b: raw for raw in table.columns if (b := _base(raw, STEP_SUFFIX)) is not None}
    epoch_twins = {b: raw for raw in table.columns if (b := _base(raw, EPOCH_SUFFIX)) is not None}
    per_batch: list[str] = []
    if step_column is not None:
        per_batch = [
            raw
            for raw in step_twins.values()
            if raw != step_column and falls_behind(table, step_column, raw)
        ]
    choice.dropped.update(per_batch)
    if per_batch:
        twinned = [
            epoch_twins[b] for b, raw in step_twins.items() if raw in per_batch and b in epoch_twins
        ]
        lone = [raw for b, raw in step_twins.items() if raw in per_batch and b not in epoch_twins]
        note = (
            f"dropped per-validation-batch columns {list_names(per_batch)}: their steps are "
            "batch indices that fall behind the training steps, not evaluations"
        )
        if twinned:
            note += f"; the evaluation curves are their _epoch twins {list_names(twinned)}"
        if lone:
            note += f"; {list_names(lone)} had no _epoch twin, so no evaluation curve for it"
        choice.notes.append(note)
    dropped_twins: list[str] = []
    for base, step_raw in sorted(step_twins.items()):
        epoch_raw = epoch_twins.get(base)
        if epoch_raw is None:
            continue
        if step_raw in per_batch or is_eval(base):
            keep, drop = epoch_raw, step_raw
        else:
            per_step = table.columns[step_raw].numeric_cells
            per_epoch = table.columns[epoch_raw].numeric_cells
            keep, drop = (epoch_raw, step_raw) if per_step < per_epoch else (step_raw, epoch_raw)
        choice.renamed[keep] = base
        if drop not in choice.dropped:
            choice.dropped.add(drop)
            dropped_twins.append(f"{drop} (kept {keep})")
    if dropped_twins:
        choice.notes.append(
            "one metric per quantity logged both per step and per epoch: dropped "
            + ", ".join(dropped_twins)
        )
    return choice
