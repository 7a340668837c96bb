"""PyTorch Lightning `CSVLogger` logs: `metrics.csv` in `<save_dir>/<name>/version_N/`.

The file has `epoch` and `step` columns plus one column per logged key, and each row holds
only the keys logged together (step-level rows, epoch-level rows, validation rows), so the
columns are sparse: an empty cell is "not logged at this step". Names follow Lightning's
conventions: `X_step` / `X_epoch` are the per-step and per-epoch halves of a key logged with
`on_step=True, on_epoch=True`: one quantity, so one of the two is kept
(`_lightning_columns.py`: the per-step curve for training keys, `train_loss_step` ->
`train/loss`; the per-epoch value for validation keys, `val_loss_epoch` -> `eval/loss`) and
the other dropped with a note. A validation key logged per step carries the *validation
batch index* in the `step` column (seen in the wild): such a column, recognised by steps
that fall behind the training steps around it, is dropped with a note. `lr-<Optimizer>` from
`LearningRateMonitor` becomes `lr`. Steps that go backwards are counted in
`meta["backward_steps"]` and resolved by `Series.build`'s last-wins rule.

A folder is accepted when it is a `version_N/` folder (holding `metrics.csv`), or holds
`version_N/` folders, or a `lightning_logs/` folder of them: the highest N is read, with a
note. `hparams.yaml` beside it is not read.

Parsing is shared with the generic CSV reader (`_tabular.read_csv_table`, pandas' C parser).
"""

from __future__ import annotations

from pathlib import Path

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.names import is_eval
from trainspotter.readers._csv import read_csv_table, sniffed_header_cells
from trainspotter.readers._csv_tail import CsvTail
from trainspotter.readers._files import latest_numbered_file
from trainspotter.readers._folder_log import FolderLogReader
from trainspotter.readers._lightning_columns import choose_columns
from trainspotter.readers._tabular import (
    RunBuilder,
    StepChoice,
    Table,
    canonical_name,
    table_to_run,
)
from trainspotter.readers.base import ReadOptions, Tail

METRICS_FILE = "metrics.csv"
VERSION_PREFIX = "version_"
LOGS_FOLDER = "lightning_logs"
SCORE = 80


def lightning_spelling(raw_name: str) -> str:
    """Drop the `_step`/`_epoch` suffix from the half that is the metric's curve."""
    lowered = raw_name.lower()
    if lowered.endswith("_step") and len(raw_name) > len("_step") and not is_eval(raw_name):
        return raw_name[: -len("_step")]
    if lowered.endswith("_epoch") and len(raw_name) > len("_epoch") and is_eval(raw_name):
        return raw_name[: -len("_epoch")]
    return raw_name


class LightningReader(FolderLogReader):
    """Lightning CSVLogger `metrics.csv` (see the module docstring)."""

    name = "lightning"
    description = "PyTorch Lightning CSVLogger metrics.csv (or a version_N/ folder)"
    log_name = METRICS_FILE
    missing = "no metrics.csv, version_N/metrics.csv or lightning_logs/ here"

    def sniff(self, path: Path, head: str) -> int:
        cells = {cell.lower() for cell in sniffed_header_cells(head)}
        if {"epoch", "step"} <= cells:
            return SCORE
        if path.name.lower() == METRICS_FILE and "step" in cells:
            return SCORE
        return 0

    def pick(self, folder: Path) -> tuple[Path, str] | None:
        """The newest version_N/metrics.csv, in `folder` or its lightning_logs/."""
        for parent in (folder, folder / LOGS_FOLDER):
            found = latest_numbered_file(parent, VERSION_PREFIX, METRICS_FILE)
            if found is not None:
                file, count = found
                relative = file.relative_to(folder).as_posix()
                more = f", the latest of {count} versions" if count > 1 else ""
                return file, f"read {relative}{more}"
        return None

    def run_from_file(self, file: Path, builder: RunBuilder, options: ReadOptions) -> Run:
        return self.run_from_table(read_csv_table(file, builder.source_path), builder, options)

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        if target.is_dir() and self.find_in_folder(target) is None:
            raise InputError(display, f"no {self.name} log in this folder")

        def build(table: Table) -> Run:
            _, builder = self.prepare(target, display)
            return self.run_from_table(table, builder, options)

        return CsvTail(
            display,
            options,
            locate=lambda: self.prepare(target, display)[0],
            build=build,
            spelling=lightning_spelling,
        )

    def run_from_table(self, table: Table, builder: RunBuilder, options: ReadOptions) -> Run:
        """The Run from a parsed metrics.csv (also used by `watch`)."""
        names = {name.lower(): name for name in table.columns}
        step = StepChoice(names["step"]) if "step" in names else None
        choice = choose_columns(table, names.get("step"))
        for note in choice.notes:
            builder.note(note)

        def spelling(raw: str) -> str:
            return choice.renamed.get(raw) or lightning_spelling(raw)

        return table_to_run(
            table,
            builder,
            name_for=lambda raw: canonical_name(raw, options.aliases, spelling),
            step=step,
            exclude=choice.dropped,
        )


READER = LightningReader()
