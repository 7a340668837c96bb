"""Hugging Face `Trainer` state: `trainer_state.json` and its `log_history`.

Every `log_history` entry is a row at `entry["step"]`:

- training entries (`loss`, `grad_norm`, `learning_rate`, `epoch`, and any other numeric
  key such as TRL's `rewards/chosen`) become metrics through `names.normalize`
  (`loss` -> `train/loss`, `learning_rate` -> `lr`);
- evaluation entries (keys `eval_*`) become `eval/*` (`eval_loss` -> `eval/loss`,
  `eval_wer` -> `eval/wer`); their `epoch` is used only at steps with no training entry, so
  the two kinds of entry at one step do not count as a duplicate;
- the final run-summary entry (`train_runtime`, and the run-average `train_loss`) goes to
  `meta["summary"]` and never into `train/loss`: it is one average, not a point on the
  curve.

Values follow the shared cell rules (`_tabular`): Python's json reads the `NaN` and
`Infinity` tokens the Trainer writes and they are kept (a NaN `grad_norm` is an fp16
overflow skip); non-numeric values are skipped and counted. Scalar top-level facts
(`global_step`, `max_steps`, `logging_steps`, `best_metric`, ...) go to
`meta["trainer_state"]`. An empty `log_history`, or one holding only the summary, is a Run
without metrics and a note, not an error: the Trainer writes such files when
`logging_steps` exceeds the run's length.

A folder is accepted when it holds `trainer_state.json` (the final state written by
`Trainer.save_state()`) or `checkpoint-N/trainer_state.json` folders: then the highest N is
read, with a note. The weights, `training_args.bin` and `config.json` are not read.

Python's json module is the format's reference parser (the Trainer writes with it, NaN
tokens included); a large file is read faster and in less memory by
`_trainer_state_chunks.py` (the `log_history` array cut into checked chunks, each parsed
by orjson and turned into columns by `_trainer_state_fast.py`, or decoded by msgspec into
typed columns by `_trainer_state_typed.py`, so the entries never all exist as dicts), which
falls back to json per chunk and to the whole-document path and the
entry loop below whenever its result could differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._files import (
    decode_text,
    first_line,
    latest_numbered_file,
    read_bytes,
    read_text,
)
from trainspotter.readers._folder_log import FolderLogReader
from trainspotter.readers._records import RecordTableBuilder
from trainspotter.readers._tabular import (
    RunBuilder,
    StepChoice,
    Table,
    canonical_name,
    table_to_run,
)
from trainspotter.readers._trainer_state_chunks import read_history
from trainspotter.readers._trainer_state_fast import history_table, parse_state
from trainspotter.readers.base import FollowedLog, Growth, ReadOptions, Tail
from trainspotter.readers.incremental import LOG_DELETED
from trainspotter.readers.jsonl import parse_json

STATE_FILE = "trainer_state.json"
CHECKPOINT_PREFIX = "checkpoint-"
EVAL_PREFIX = "eval_"
STEP_KEY = "step"
EPOCH_KEY = "epoch"
SUMMARY_MARKER = "train_runtime"
_SUMMARY_KEYS = (SUMMARY_MARKER, "total_flos", "loss")  # as is_summary_entry reads them

SCORE_LOG_HISTORY = 95
# Above a JSON-lines sniff (70): a minified trainer_state.json is one object on one line.
SCORE_FILE_NAME = 75
# A pretty-printed JSON document that is not JSON Lines: only this reader can say clearly
# what is wrong with it ("no log_history").
SCORE_JSON_DOCUMENT = 20

# Top-level keys worth keeping for reports (scalars only).
STATE_FACTS = (
    "global_step",
    "max_steps",
    "num_train_epochs",
    "epoch",
    "logging_steps",
    "eval_steps",
    "save_steps",
    "train_batch_size",
    "best_metric",
    "best_global_step",
    "best_model_checkpoint",
    "total_flos",
)


def hf_spelling(raw_name: str) -> str:
    """`eval_loss` -> `eval/loss` (then normalised); other keys unchanged."""
    if raw_name.startswith(EVAL_PREFIX):
        return "eval/" + raw_name[len(EVAL_PREFIX) :]
    return raw_name


def is_summary_entry(entry: dict[str, Any]) -> bool:
    """The entry `Trainer.train()` appends at the end: runtime and the run-average loss.

    Old transformers wrote a summary with only `total_flos` (no loss, no eval keys).
    """
    if SUMMARY_MARKER in entry:
        return True
    return (
        "total_flos" in entry
        and "loss" not in entry
        and not any(key.startswith(EVAL_PREFIX) for key in entry)
    )


def _entry_step(entry: dict[str, Any]) -> int | None:
    step = entry.get(STEP_KEY)
    if isinstance(step, bool):
        return None
    if isinstance(step, int):
        return step
    if isinstance(step, float) and step.is_integer() and abs(step) < 2**62:
        return int(step)
    return None


def _scalar_facts(state: dict[str, Any]) -> dict[str, Any]:
    return {
        key: state[key]
        for key in STATE_FACTS
        if key in state and (state[key] is None or isinstance(state[key], str | int | float))
    }


class HfTrainerStateReader(FolderLogReader):
    """Hugging Face trainer_state.json (see the module docstring)."""

    name = "hf"
    description = "Hugging Face Trainer trainer_state.json (or an output/checkpoint folder)"
    log_name = STATE_FILE
    missing = f"no {STATE_FILE} or {CHECKPOINT_PREFIX}*/{STATE_FILE} in this folder"

    def sniff(self, path: Path, head: str) -> int:
        if '"log_history"' in head:
            return SCORE_LOG_HISTORY
        if path.name.lower().endswith(STATE_FILE):
            return SCORE_FILE_NAME
        if head.lstrip("\ufeff \t\r\n").startswith("{"):
            try:
                parse_json(first_line(head))
            except ValueError:
                return SCORE_JSON_DOCUMENT
        return 0

    def pick(self, folder: Path) -> tuple[Path, str] | None:
        found = latest_numbered_file(folder, CHECKPOINT_PREFIX, STATE_FILE)
        if found is None:
            return None
        file, count = found
        note = f"read {file.parent.name}/{STATE_FILE}"
        if count > 1:
            note += f", the latest of {count} checkpoints"
        return file, note

    def run_from_file(self, file: Path, builder: RunBuilder, options: ReadOptions) -> Run:
        display = builder.source_path
        data = read_bytes(file, display)
        read = read_history(
            data, STEP_KEY, (EPOCH_KEY, EVAL_PREFIX, _SUMMARY_KEYS), (SUMMARY_MARKER, "total_flos")
        )
        if read is not None:  # the log_history read in chunks, straight into columns
            del data  # the text is no longer needed: the columns are built without it
            state, columns = read
            found = columns.table(EPOCH_KEY, EVAL_PREFIX, _SUMMARY_KEYS)
            if found is not None:
                self._state_meta(state, builder)
                return self._finish(found[0], found[1], 0, builder, options)
            data = read_bytes(file, display)  # no entries, or too many cells: read whole
        text = decode_text(data, display)
        del data
        return self.run_from_state(self.state_from_text(text, display), builder, options)

    def copy_rank(self, file: Path) -> tuple[Path, tuple[int, int]] | None:
        """Each `checkpoint-N/trainer_state.json` holds the log up to step N: the copies
        of one output folder are one log. The top-level file ranks highest (the Trainer
        writes it at the end), then the highest N."""
        if file.name != STATE_FILE:
            return None
        match = re.fullmatch(re.escape(CHECKPOINT_PREFIX) + r"(\d+)", file.parent.name)
        if match is None:
            return file.parent, (1, 0)
        return file.parent.parent, (0, int(match.group(1)))

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        return HfTail(self, target, display, options)

    def run_from_state(
        self, state: dict[str, Any], builder: RunBuilder, options: ReadOptions
    ) -> Run:
        """The Run from a loaded trainer state (also used by `watch`)."""
        display = builder.source_path
        history = state["log_history"]
        self._state_meta(state, builder)

        entries = [entry for entry in history if isinstance(entry, dict)]
        skipped_entries = len(history) - len(entries)
        fast = history_table(entries, STEP_KEY, EPOCH_KEY, EVAL_PREFIX, _SUMMARY_KEYS)
        if fast is not None and not skipped_entries:
            return self._finish(fast[0], fast[1], 0, builder, options)
        summaries: list[dict[str, Any]] = []
        rows: list[tuple[int, bool, dict[str, Any]]] = []  # (step, is_eval, entry), file order
        for entry in entries:
            step = _entry_step(entry)
            if step is None:
                skipped_entries += 1
            elif is_summary_entry(entry):
                summaries.append(entry)
            else:
                rows.append((step, any(key.startswith(EVAL_PREFIX) for key in entry), entry))
        train_steps = {step for step, is_eval, _ in rows if not is_eval}

        records = RecordTableBuilder()
        for step, is_eval, entry in rows:
            row = dict(entry)
            row[STEP_KEY] = step
            if is_eval and step in train_steps:
                row.pop(EPOCH_KEY, None)
            records.add(row)
        return self._finish(
            records.table(display) if records.row_count else None,
            summaries,
            skipped_entries,
            builder,
            options,
        )

    def _state_meta(self, state: dict[str, Any], builder: RunBuilder) -> None:
        """The top-level facts of a trainer state, into `builder.meta`."""
        builder.meta["trainer_state"] = _scalar_facts(state)
        planned = state.get("max_steps")
        if isinstance(planned, int) and not isinstance(planned, bool) and planned > 0:
            # The planned length: lets detectors tell "still in warmup" from "never ends".
            builder.meta["max_steps"] = planned

    def _finish(
        self,
        table: Table | None,
        summaries: list[dict[str, Any]],
        skipped_entries: int,
        builder: RunBuilder,
        options: ReadOptions,
    ) -> Run:
        """The Run from the log_history's table (None or empty: no curve), its summary
        entries and the count of entries skipped."""

        if skipped_entries:
            builder.meta["skipped_entries"] = skipped_entries
            builder.note(f"skipped {skipped_entries} log_history entries without a whole step")
        if summaries:
            builder.meta["summary"] = summaries[-1]
            if len(summaries) > 1:
                builder.note(
                    f"log_history holds {len(summaries)} run summaries (a resumed run); "
                    "the last is kept as the summary"
                )
        if table is None or table.row_count == 0:
            facts = builder.meta["trainer_state"]
            context = ", ".join(
                f"{key} {facts[key]}" for key in ("logging_steps", "global_step") if key in facts
            )
            what = "only the run summary" if summaries else "no entries"
            builder.note(
                f"log_history holds {what}: no curve to analyse"
                + (f" ({context})" if context else "")
                + _summary_loss(summaries)
            )
            builder.meta["step_column"] = STEP_KEY
            return builder.build()
        return table_to_run(
            table,
            builder,
            name_for=lambda raw: canonical_name(raw, options.aliases, hf_spelling),
            step=StepChoice(STEP_KEY),
            require_metrics=False,
        )

    def state_from_text(self, text: str, display: str) -> dict[str, Any]:
        """The parsed trainer state; InputError for invalid JSON or a wrong shape."""
        try:
            state = parse_state(text, parse_json, STEP_KEY, (SUMMARY_MARKER, "total_flos"))
        except ValueError as exc:
            if hasattr(exc, "lineno") and hasattr(exc, "colno") and hasattr(exc, "msg"):
                raise InputError(
                    display,
                    f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                ) from None
            raise InputError(display, f"invalid JSON: {exc}") from None
        if not isinstance(state, dict):
            raise InputError(display, "not a trainer_state.json: the top level is not an object")
        if "log_history" not in state:
            raise InputError(display, "not a trainer_state.json: no log_history")
        if not isinstance(state["log_history"], list):
            raise InputError(display, "not a trainer_state.json: log_history is not a list")
        return state


@dataclass(eq=False)
class HfTail(FollowedLog[HfTrainerStateReader]):
    """A `trainer_state.json` that the Trainer rewrites whole at every save (see
    `readers/incremental.py`)."""

    _seen: tuple[int, int, int] | None = field(default=None, init=False)
    _state: dict[str, Any] | None = field(default=None, init=False)
    _file: Path | None = field(default=None, init=False)

    def poll(self, final: bool = False) -> Growth:
        growth = Growth()
        try:
            file, _ = self.reader.prepare(self.target, self.display)
            stat = file.stat()
        except (InputError, FileNotFoundError):
            if final and self._state is None:
                raise
            if self._state is not None and not self.target.exists():
                raise InputError(self.display, LOG_DELETED) from None
            return growth
        key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if key == self._seen and file == self._file:
            return growth
        try:
            state = self.reader.state_from_text(read_text(file, self.display), self.display)
        except InputError:
            # Half-written (the Trainer is saving): keep the last good state, try again.
            if final:
                raise
            return growth
        self._seen = key
        old = self._state["log_history"] if self._state is not None else []
        new = state["log_history"]
        if file != self._file or len(new) < len(old) or (old and new[len(old) - 1] != old[-1]):
            growth.restarted = self._state is not None
            fresh_entries = new
        else:
            fresh_entries = new[len(old) :]
        self._file = file
        self._state = state
        self.points = len(new)
        growth.points = len(fresh_entries)
        collected: dict[str, list[float]] = {}
        for entry in fresh_entries:
            if not isinstance(entry, dict) or is_summary_entry(entry):
                continue
            step = entry.get(STEP_KEY)
            if isinstance(step, int) and not isinstance(step, bool):
                growth.last_step = step
            for key, value in entry.items():
                if key in (STEP_KEY, EPOCH_KEY) or isinstance(value, bool):
                    continue
                if isinstance(value, int | float):
                    name = canonical_name(key, self.options.aliases, hf_spelling)
                    collected.setdefault(name, []).append(float(value))
        growth.fresh = {name: np.asarray(v, dtype=np.float64) for name, v in collected.items()}
        return growth

    def run(self) -> Run | None:
        if self._state is None:
            return None
        _, builder = self.reader.prepare(self.target, self.display)
        return self.reader.run_from_state(self._state, builder, self.options)


READER = HfTrainerStateReader()


def _summary_loss(summaries: list[dict[str, Any]]) -> str:
    """The run summary's train_loss, in words that say what it is (the Trainer's mean of
    the loss over the whole run), for a log whose only trace of the loss it is: the one
    number that still shows a run that blew up (1.8e+11) or never learned."""
    loss = summaries[-1].get("train_loss") if summaries else None
    if isinstance(loss, bool) or not isinstance(loss, int | float):
        return ""
    return f"; its summary's train_loss (the mean over the whole run) is {loss:.4g}"
