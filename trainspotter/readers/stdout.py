"""Training output as printed (`python train.py > train.log 2>&1`): the lines a training
loop writes to the terminal, read back into metrics.

A line (each piece between `\\r` or `\\n`: a tqdm bar rewritten with `\\r` is one line per
refresh; ANSI colour codes and backspaces are removed first) is a *progress line* when it
holds a metric with a loss, learning-rate, grad-norm, accuracy or perplexity name, in one
of these shapes:

- a Python dict as Hugging Face `Trainer` prints it: `{'loss': 2.1, 'grad_norm': 1.3,
  'learning_rate': 5e-05, 'epoch': 0.5}`, `{'eval_loss': ...}`, values possibly quoted
  (`'2.1'`) or bare `nan`/`inf`; parsed with `ast.parse` (never evaluated). The final
  `{'train_runtime': ...}` summary goes to `meta["summary"]`, never into the curve;
- `key value`, `key: value` and `key=value` pairs separated by `,`, `|`, ` - `, `;` or
  spaces: nanoGPT (`iter 100: loss 2.3456, time 12.34ms, mfu 3.2%`,
  `step 250: train loss 1.9, val loss 2.0`), Keras (`Epoch 3/10` then `... - loss: 0.4512
  - val_loss: 0.51`), tqdm and Lightning postfixes (`[00:01, 25.0it/s, train_loss=2.31]`),
  fairseq/Megatron (`| loss 2.31 | lr 3e-4 |`, `iteration 100/ 5000 | lm loss: 2.3E+00`).
  A key may be two words (`train loss` -> `train_loss`); a unit after the value
  (`ms`, `s`, `%`, `it/s`) is dropped from the value and kept in `meta["units"]`.

The step of a progress line, first rule that applies: a step counter on the line (`step`,
`iter`, `iteration`, `global_step`, `num_updates`, ..., also as `iteration 100/5000`); an
epoch and a batch counter (`Epoch 2: ... 32/64`, Keras' `Epoch 3/10` line followed by
`32/32 ...`): completed epochs x batches per epoch + batch (an epoch written `N/M` counts
from 1, a bare one from 0, as Keras and Lightning print them); a batch counter alone (a
plain tqdm bar over steps); a whole epoch number alone; else the progress lines are counted
(an evaluation-only line, such as HF's `{'eval_loss': ...}`, shares the step of the line
before it). Which rules were used is in `meta["step_source"]`.

A progress bar repeats an evaluation result in every refresh until the next evaluation
(Lightning's `val_loss=` postfix), so on a line whose batch counter is mid-epoch (`5/12`)
an eval metric's value equal to its previous value is not a new point (a new value is; at
an epoch's end, `12/12`, a repeat is kept: two evaluations can agree). Steps logged twice
(bar refreshes at one step) follow the shared last-write-wins rule (`Series.build`); a bar
at `0/N` has done nothing yet and shows values left from before, so it is skipped. Lines
that are not progress lines (warnings, model summaries, bars without metrics) are skipped
and counted in `meta["skipped_lines"]`; a log with no progress line is an InputError
naming what was looked for.

What is printed is what is read: Keras' `verbose=1` bar shows the running mean of the
epoch so far (it restarts each epoch), a tqdm postfix the value at the last refresh.

The file is read in pieces (`read_text_lines`) and each metric kept in compact typed
arrays, so memory follows the number of values, not the size of the text. `watch` follows
a log still being printed to (`StdoutTail`): each poll parses only the new complete lines.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.names import GRAD_NORM, LR, is_eval, is_loss_like
from trainspotter.readers._files import first_line, read_text_lines
from trainspotter.readers._records import json_cell
from trainspotter.readers._stdout_tail import StdoutTail
from trainspotter.readers._tabular import (
    Column,
    RunBuilder,
    canonical_name,
    list_names,
)
from trainspotter.readers.base import Reader, ReadOptions, Tail
from trainspotter.readers.hf import hf_spelling, is_summary_entry
from trainspotter.readers.incremental import file_to_follow

SCORE = 60
"""Above the generic CSV sniff (30: a nanoGPT line has commas) and a non-JSON `{` document
(20: an HF dict line starts with `{`), below every structured format (JSON Lines 70 and up),
so a file another reader can parse is never taken."""

SNIFF_LINES = 400
MAX_DICT_CHARS = 20_000
"""A longer `{...}` line is not a metrics dict (and `ast.parse` cost grows with it)."""

STEP_KEYS = frozenset(
    {
        "step",
        "steps",
        "global_step",
        "global step",
        "iter",
        "iters",
        "iter_num",
        "iteration",
        "it",
        "num_updates",
        "update",
        "updates",
        "trainer/global_step",
    }
)
EPOCH_KEYS = frozenset({"epoch", "ep"})
IGNORED_KEYS = frozenset({"v_num"})
"""Lightning's logger version number, shown in every bar: not a metric."""
KEY_WORDS = ("acc", "accuracy", "ppl", "perplexity")
TIME_KEYS = frozenset({"time", "dt", "step time", "time per step"})
TIME_UNITS = frozenset({"ms", "s", "us", "µs", "sec"})

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_SEGMENTS = re.compile(r"[\r\n]+")
_NUMBER = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
_WORD = r"[A-Za-z_][\w.\-/]*"
_PAIR = re.compile(
    rf"(?<![\w.\-/])(?P<key>{_WORD}(?: {_WORD}){{0,1}})['\"]?(?:\s*[:=]\s*|\s+)"
    rf"(?P<value>{_NUMBER})(?P<unit>ms/step|s/step|us/step|it/s|s/it|ms|us|µs|sec|s|%)?"
    r"(?=$|[\s,|;:\]\)}'\"])",
    re.IGNORECASE,
)
_KEYED_COUNTER = re.compile(
    rf"(?<![\w.\-/])(?P<key>{_WORD})\s*[:=]?\s*(?P<n>\d+)\s*/\s*(?P<total>\d+)(?![\w/.])"
)
_COUNTER = re.compile(r"(?<![\w/.:])(?P<n>\d+)\s*/\s*(?P<total>\d+)(?![\w/.:])")
_NUMBER_TOKEN = re.compile(r"\d[\w./%]*")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")
PROSE_WORDS = 4
"""Words a progress line may hold besides its keys (`INFO`, `train_inner`, a bar's name)
before it reads as a sentence: at most this many, or twice its number of values."""
_EPOCH_HEADER = re.compile(r"^\s*epoch\s+(\d+)\s*/\s*(\d+)\s*$", re.IGNORECASE)
_DICT = re.compile(r"\{.*\}")
_NAN_NAMES = {"nan": math.nan, "inf": math.inf, "infinity": math.inf}
_STEP_LIMIT = 2**62


@dataclass
class Progress:
    """What one progress line says."""

    values: dict[str, float]
    """Raw key -> value (keys as printed, multi-word keys joined with `_`)."""
    units: dict[str, str] = field(default_factory=dict)
    step: int | None = None
    epoch: float | None = None
    epoch_counted_from_one: bool = False
    batch: tuple[int, int] | None = None
    is_dict: bool = False
    prose_words: int = 0
    """Words on the line that are neither a key nor a unit."""


def clean(text: str) -> str:
    """Remove ANSI escape sequences and backspaces (terminal control, not content)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.replace("\x08", "") if "\x08" in text else text


def _literal_number(node: ast.expr) -> float | None:
    """A number from one dict value node: a constant, `-x`, or a bare `nan`/`inf` name."""
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
        node = node.operand
    if isinstance(node, ast.Name) and node.id.lower() in _NAN_NAMES:
        return sign * _NAN_NAMES[node.id.lower()]
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str):
        cell = json_cell(node.value)
        return sign * cell if isinstance(cell, float) else None
    return None


def parse_dict(text: str) -> dict[str, float] | None:
    """The numeric entries of a printed Python dict (`{'loss': 2.1, ...}`), or None when
    `text` holds no dict literal with string keys. Never evaluates anything."""
    match = _DICT.search(text)
    if match is None or len(match.group()) > MAX_DICT_CHARS or "'" not in match.group():
        return None
    try:
        tree = ast.parse(match.group(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(tree.body, ast.Dict):
        return None
    values: dict[str, float] = {}
    for key, value in zip(tree.body.keys, tree.body.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        number = _literal_number(value)
        if number is not None:
            values[key.value] = number
    return values


def _as_step(value: float) -> int | None:
    if math.isfinite(value) and value == math.floor(value) and 0 <= value < _STEP_LIMIT:
        return int(value)
    return None


@functools.lru_cache(maxsize=4096)
def _is_key_metric(raw: str) -> bool:
    """A name that makes a line a progress line (the rest of a line's pairs ride along)."""
    name = canonical_name(_spelling(raw, None), {})
    lowered = raw.lower()
    return (
        is_loss_like(name)
        or name in (LR, GRAD_NORM)
        or lowered.endswith(KEY_WORDS)
        or "loss" in lowered
    )


def parse_progress(line: str) -> Progress | None:
    """The metrics on one line (already cleaned), or None when it is not a progress line."""
    values = parse_dict(line) if "{" in line else None
    if values is not None:
        progress = Progress({k: v for k, v in values.items() if k not in IGNORED_KEYS})
        progress.is_dict = True
        for key in list(progress.values):
            if key.lower() in STEP_KEYS:
                progress.step = _as_step(progress.values.pop(key))
    else:
        progress = _parse_pairs(line)
    if not any(_is_key_metric(key) for key in progress.values):
        return None
    if progress.prose_words > max(PROSE_WORDS, 2 * len(progress.values)):
        return None  # a sentence that mentions a loss (docs, messages), not a progress line
    epoch = next((v for k, v in progress.values.items() if k.lower() in EPOCH_KEYS), None)
    if epoch is not None and progress.epoch is None:
        progress.epoch = epoch
    return progress


def _parse_pairs(line: str) -> Progress:
    progress = Progress({})
    rest = line
    for match in _KEYED_COUNTER.finditer(line):
        key, n = match.group("key").lower(), int(match.group("n"))
        if key in STEP_KEYS and progress.step is None:
            progress.step = n
        elif key in EPOCH_KEYS and progress.epoch is None:
            progress.epoch, progress.epoch_counted_from_one = float(n), True
        else:
            continue
        rest = rest.replace(match.group(), " ", 1)
    counter = _COUNTER.search(rest)
    if counter is not None:
        progress.batch = (int(counter["n"]), int(counter["total"]))
        rest = rest[: counter.start()] + " " + rest[counter.end() :]
    matches = list(_PAIR.finditer(rest))
    outside, start = [], 0
    for match in matches:
        outside.append(rest[start : match.start()])
        start = match.end()
    outside.append(rest[start:])
    progress.prose_words = len(_PROSE_WORD.findall(_NUMBER_TOKEN.sub(" ", " ".join(outside))))
    for match in matches:
        key = " ".join(match.group("key").split()).strip("'\"")
        lowered = key.lower()
        if lowered in IGNORED_KEYS:
            continue
        value = float(match.group("value"))
        if lowered in STEP_KEYS:
            if progress.step is None:
                progress.step = _as_step(value)
            continue
        raw = key.replace(" ", "_")
        progress.values[raw] = value
        if match.group("unit"):
            progress.units[raw] = match.group("unit")
    return progress


@functools.lru_cache(maxsize=4096)
def _spelling(raw: str, unit: str | None) -> str:
    """HF's `eval_x` -> `eval/x`; a per-step time printed in ms or s -> `step_time`."""
    if raw.lower().replace("_", " ") in TIME_KEYS and unit in TIME_UNITS:
        return "step_time"
    return hf_spelling(raw)


class _Metric:
    __slots__ = ("last", "steps", "values")

    def __init__(self) -> None:
        self.steps: array[int] = array("q")
        self.values: array[float] = array("d")
        self.last: float | None = None


class StdoutLines:
    """Printed training output parsed line by line; lines can be added as a log grows."""

    def __init__(self) -> None:
        self.metrics: dict[str, _Metric] = {}
        self.units: dict[str, str] = {}
        self.line_count = 0
        self.records = 0
        self.skipped = 0
        self.first_skipped: int | None = None
        self.summary: dict[str, float] = {}
        self.step_source: dict[str, int] = {}
        self._epoch_header: tuple[int, int] | None = None
        self._counted = -1
        self.last_step = 0
        """The step of the last progress line."""

    def add(self, lines: Iterable[str]) -> None:
        """Parse the next physical lines (without line endings) of the log, in order."""
        for line in lines:
            self.line_count += 1
            for segment in _SEGMENTS.split(clean(line)):
                if segment.strip():
                    self._add_segment(segment)

    def _add_segment(self, segment: str) -> None:
        header = _EPOCH_HEADER.match(segment)
        if header is not None:
            self._epoch_header = (int(header.group(1)), int(header.group(2)))
            return
        progress = parse_progress(segment)
        if progress is not None and progress.batch is not None and progress.batch[0] == 0:
            progress = None  # a bar at 0/N shows what it showed before it (re)started
        if progress is None:
            self.skipped += 1
            if self.first_skipped is None:
                self.first_skipped = self.line_count
            return
        if progress.is_dict and is_summary_entry(progress.values):
            self.summary.update(progress.values)
            return
        if progress.epoch is None and self._epoch_header is not None:
            progress.epoch, progress.epoch_counted_from_one = float(self._epoch_header[0]), True
            progress.values.setdefault("epoch", progress.epoch)
        self.records += 1
        step = self._step(progress)
        mid_epoch = progress.batch is not None and progress.batch[0] < progress.batch[1]
        for raw, value in progress.values.items():
            unit = progress.units.get(raw)
            name = _spelling(raw, unit)
            metric = self.metrics.get(name)
            if metric is None:
                metric = self.metrics[name] = _Metric()
            if (
                mid_epoch
                and is_eval(name)
                and metric.last is not None
                and _same(metric.last, value)
            ):
                continue  # an eval result a progress bar keeps showing: not a new point
            metric.steps.append(step)
            metric.values.append(value)
            metric.last = value
            if unit and name not in self.units:
                self.units[name] = unit

    def _step(self, progress: Progress) -> int:
        source, step = "line", progress.step
        # A dict's epoch is HF's fractional progress (0.5, 1.0, 1.5): never a step.
        whole = None if progress.epoch is None or progress.is_dict else progress.epoch
        epoch = None if whole is None else _as_step(whole)
        if step is None and progress.batch is not None and epoch is not None:
            done = epoch - 1 if progress.epoch_counted_from_one else epoch
            source, step = "epoch and batch", max(done, 0) * progress.batch[1] + progress.batch[0]
        elif step is None and progress.batch is not None:
            source, step = "batch counter", progress.batch[0]
        elif step is None and epoch is not None:
            source, step = "epoch", epoch
        elif step is None:
            source = "counted"
            names = [key for key in progress.values if key.lower() not in EPOCH_KEYS]
            if self.records > 1 and all(is_eval(_spelling(key, None)) for key in names):
                step = self.last_step  # evaluation results belong to the step just logged
            else:
                self._counted += 1
                step = self._counted
        self.step_source[source] = self.step_source.get(source, 0) + 1
        self.last_step = step
        return step

    def run(self, source_format: str, display: str, options: ReadOptions) -> Run:
        """The Run from every line added; InputError when no line was a progress line."""
        if self.records == 0:
            raise InputError(
                display,
                "no training progress lines found (looked for Hugging Face Trainer dicts "
                "{'loss': ...}, nanoGPT 'iter N: loss X', Keras 'Epoch N/M' and "
                "'- loss: X', and key=value / key: value pairs naming a loss, lr, "
                "grad norm or accuracy)",
            )
        builder = RunBuilder(source_format, display, appended_runs=True)
        builder.meta["step_source"] = dict(self.step_source)
        builder.meta["progress_lines"] = self.records
        builder.meta["skipped_lines"] = self.skipped
        if self.units:
            builder.meta["units"] = dict(self.units)
        if self.summary:
            builder.meta["summary"] = dict(self.summary)
        if self.skipped:
            builder.note(
                f"skipped {self.skipped} line(s) that are not training progress lines "
                f"(warnings, bars without metrics; first: line {self.first_skipped})"
            )
        if "counted" in self.step_source:
            builder.note(
                f"{self.step_source['counted']} progress line(s) carry no step counter: "
                "their step is their position among the progress lines"
            )
        names = self._names(builder, options)
        for raw, metric in self.metrics.items():
            builder.add(
                Column(
                    raw_name=raw,
                    name=names[raw],
                    steps=np.frombuffer(metric.steps, dtype=np.int64).copy(),
                    values=np.frombuffer(metric.values, dtype=np.float64).copy(),
                )
            )
        return builder.build()

    def _names(self, builder: RunBuilder, options: ReadOptions) -> dict[str, str]:
        """Canonical names; when two printed keys mean one metric, the one printed most
        often takes it (nanoGPT prints `loss` every iteration and an estimated
        `train loss` every eval: the per-iteration curve is the train loss)."""
        names = {raw: canonical_name(raw, options.aliases) for raw in self.metrics}
        by_name: dict[str, list[str]] = {}
        for raw, name in names.items():
            by_name.setdefault(name, []).append(raw)
        for name, raws in by_name.items():
            if len(raws) < 2:
                continue
            raws.sort(key=lambda raw: -len(self.metrics[raw].values))
            for other in raws[1:]:
                names[other] = other
            builder.note(
                f"{list_names(raws)} all mean {name!r}: the most frequent, "
                f"{raws[0]!r}, is read as {name!r}; the others keep their printed names"
            )
        return names


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def sniff_text(head: str) -> int:
    """SCORE when the head of a file holds a progress line and is not JSON, else 0."""
    if "\x00" in head:
        return 0
    start = first_line(head).strip("\ufeff \t\r")
    if start in ("{", "[") or start.startswith(('{"', "[{", '["', "[[")):
        return 0  # JSON (Lines) and JSON documents belong to their own readers
    lines = head.split("\n")
    if len(lines) > 1:
        lines = lines[:-1]  # the head's last line may be cut
    # Two progress lines, or one in a tiny file: a document that mentions a loss once in
    # a sentence (a README, a report) is not a training log.
    found = seen = 0
    for line in lines[:SNIFF_LINES]:
        for segment in _SEGMENTS.split(clean(line)):
            if segment.strip():
                seen += 1
                found += parse_progress(segment) is not None
            if found >= 2:
                return SCORE
    return SCORE if found and seen <= 2 else 0


class StdoutReader(Reader):
    """Printed training output (see the module docstring)."""

    name = "stdout"
    description = "training output as printed (HF Trainer dicts, nanoGPT, Keras, tqdm bars)"

    def sniff(self, path: Path, head: str) -> int:
        return sniff_text(head)

    def find_in_folder(self, folder: Path) -> Path | None:
        return None  # a folder of printed logs has no layout to recognise

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = options.display_for(path)
        lines = StdoutLines()
        for pieces in read_text_lines(path, display):
            lines.add(pieces)  # "\r" is split per segment
        return lines.run(self.name, display, options)

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        file = file_to_follow(self, target, display)
        return StdoutTail(StdoutLines, self.name, file, display, options)


READER = StdoutReader()
