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
`meta["skipped_lines"]`. A file in which no line is a JSON object is an InputError.

Python's json module is used: it is the reference parser, reads the NaN/Infinity tokens
training code writes, and per-line parsing is the cost floor for this format anyway.

`find_in_folder`: a folder holding exactly one `*.jsonl` / `*.ndjson` file directly.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._files import display_name, first_line, read_text, single_file_with_suffix
from trainspotter.readers._tabular import (
    RecordTableBuilder,
    RunBuilder,
    canonical_name,
    table_to_run,
)
from trainspotter.readers.base import ReadOptions

SUFFIXES = (".jsonl", ".ndjson")
SCORE_OBJECT_LINE = 70
SCORE_NAME = 40


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


class JsonlReader:
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
        display = display_name(path, options.display_path)
        lines = read_text(path, display).splitlines()
        last_content = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        records = RecordTableBuilder()
        builder = RunBuilder(self.name, display)
        skipped: list[tuple[int, str]] = []
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                value = parse_json(line)
            except ValueError as exc:
                if index == last_content and records.row_count:
                    builder.note(f"skipped a half-written last line (line {index + 1})")
                    builder.meta["partial_last_line"] = True
                else:
                    skipped.append((index + 1, _describe(exc)))
                continue
            if isinstance(value, dict):
                records.add(value)
            else:
                skipped.append((index + 1, f"a JSON {type(value).__name__}, not an object"))
        if records.row_count == 0:
            if skipped:
                line_number, problem = skipped[0]
                raise InputError(
                    display, f"no line is a JSON object (line {line_number}: {problem})"
                )
            raise InputError(display, "no line is a JSON object")
        if skipped:
            builder.meta["skipped_lines"] = len(skipped)
            line_number, problem = skipped[0]
            builder.note(
                f"skipped {len(skipped)} line(s) that are not JSON objects "
                f"(first: line {line_number}: {problem})"
            )
        return table_to_run(
            records.table(display),
            builder,
            name_for=lambda raw: canonical_name(raw, options.aliases),
        )


READER = JsonlReader()
