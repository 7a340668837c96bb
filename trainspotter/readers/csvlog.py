"""Generic CSV training logs: a header row, then one row per logged step or epoch.

Reads Keras' CSVLogger files (`epoch,loss,val_loss,...`, including the `;` separator, the
`\\r\\r\\n` Windows double-CR and a junk title line before the header), hand-written epoch
tables and any CSV whose columns are metrics. The step is chosen by the step column rule in
`_tabular` (`step`, `global_step`, ... then `epoch`, then the row number). Empty cells mean
"not logged"; `nan`/`inf` cells are kept as values; text columns are ignored with a note.

It does not read headerless CSVs (one row per run, values only), nested JSON inside cells,
or W&B and Lightning files: those have their own readers that win the content sniff.

pandas' C parser does the parsing (see `_tabular.read_csv_table`): it is the fastest
well-kept CSV parser available to us and `trainspotter` already depends on pandas.

`find_in_folder`: a folder holding exactly one `*.csv` / `*.tsv` file directly (several
would be a guess, so the user must name the file).
"""

from __future__ import annotations

from pathlib import Path

from trainspotter.model import Run
from trainspotter.readers._csv import count_unquoted, sniff_csv_layout
from trainspotter.readers._csv_tail import TableFileReader
from trainspotter.readers._files import single_file_with_suffix
from trainspotter.readers._tabular import RunBuilder, Table, canonical_name, table_to_run
from trainspotter.readers.base import ReadOptions

# Below every specific CSV-based format (lightning 80, wandb 90), above nothing.
SCORE_DELIMITED = 30
SCORE_CSV_NAME = 20


class CsvReader(TableFileReader):
    """Generic CSV logs (see the module docstring)."""

    name = "csv"
    description = "CSV with a header row (Keras CSVLogger, custom epoch/step tables)"

    def sniff(self, path: Path, head: str) -> int:
        if "\x00" in head or head.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
            return 0
        layout = sniff_csv_layout(head)
        if layout is None:
            return 0
        if count_unquoted(layout.header, layout.delimiter) > 0:
            return SCORE_DELIMITED
        return SCORE_CSV_NAME if path.suffix.lower() in (".csv", ".tsv") else 0

    def find_in_folder(self, folder: Path) -> Path | None:
        return single_file_with_suffix(folder, (".csv", ".tsv"))

    def run_from_table(self, table: Table, display: str, options: ReadOptions) -> Run:
        """The Run from a parsed table (also used by `watch`, which parses incrementally)."""
        builder = RunBuilder(self.name, display, appended_runs=True, run_name=options.run_name)
        return table_to_run(
            table, builder, name_for=lambda raw: canonical_name(raw, options.aliases)
        )


READER = CsvReader()
