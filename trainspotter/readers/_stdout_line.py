"""One printed line read as a progress line (the shapes `readers/stdout.py` lists), kept
apart from the reader so that module stays the log-level rules (steps, epochs, notes).

Besides the values, a parse records where on the line each number it used stands
(`Progress.spans`): `_stdout_shapes.py` uses them to parse every later line of the same
shape (the same text but for its digits) without running these regexes again.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from dataclasses import dataclass, field

from trainspotter.names import GRAD_NORM, LR, is_loss_like
from trainspotter.readers._records import json_cell
from trainspotter.readers._tabular import canonical_name
from trainspotter.readers.hf import hf_spelling

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
BATCH_KEYS = frozenset({"batch", "batch_idx", "batch_id"})
"""A batch number printed without a total (`ep: 0, batch: 20, loss: ...`)."""
IGNORED_KEYS = frozenset({"v_num"})
"""Lightning's logger version number, shown in every bar: not a metric."""
KEY_WORDS = ("acc", "accuracy", "ppl", "perplexity")
TIME_KEYS = frozenset({"time", "dt", "step time", "time per step"})
TIME_UNITS = frozenset({"ms", "s", "us", "µs", "sec"})

SEGMENTS = re.compile(r"[\r\n]+")
"""What splits printed output into lines: a bar redrawn with `\\r` is a line per refresh."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_NUMBER = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
_WORD = r"[A-Za-z_][\w.\-/]*"
_VALUE = (
    rf"(?P<value>{_NUMBER})(?P<unit>ms/step|s/step|us/step|it/s|s/it|ms|us|µs|sec|s|%)?"
    r"(?=$|[\s,|;:\]\)}'\"])"
)
# `key: value` / `key=value` with a key of up to three words (`Val Loss (avg)` is not one,
# `Train Loss:` is); `key value` with at most two (`train loss 1.9`), since a third word
# before a bare number is most often prose.
_PAIR = re.compile(
    rf"(?<![\w.\-/])(?:(?P<key>{_WORD}(?: {_WORD}){{0,2}})['\"]?\s*[:=]\s*"
    rf"|(?P<spaced>{_WORD}(?: {_WORD})?)['\"]?\s+){_VALUE}",
    re.IGNORECASE,
)
# `Epoch 3/10`, `iteration 100/ 5000`, `Step [10/1549]`, `Epoch [6]`, `epoch: (2/5)`: a
# counter with a total, or a bracketed one.
_KEYED_COUNTER = re.compile(
    rf"(?<![\w.\-/])(?P<key>{_WORD})\s*[:=]?\s*(?:(?P<open>[\[(])\s*)?(?P<n>\d+)"
    r"(?:\s*/\s*(?P<total>\d+))?(?(open)\s*[\])])(?![\w/.])"
)
# A bare `n/total` (a tqdm bar, Keras' `32/32`); one in parentheses is a fraction
# (`accuracy: 20.78%, (512570/2466133)`), not a position.
_COUNTER = re.compile(r"(?<![\w/.:(])(?P<n>\d+)\s*/\s*(?P<total>\d+)(?![\w/.:)])")
# An epoch tag, `[E2]` or `[E2/5]`, and the PyTorch DCGAN example's `[1/5][200/938]`: an
# epoch of a total, then a batch of the epoch's batches.
_EPOCH_TAG = re.compile(r"(?<![\w\]])\[\s*E\s*(?P<n>\d+)(?:\s*/\s*(?P<total>\d+))?\s*\]")
_EPOCH_BATCH = re.compile(
    r"(?<![\w\]])\[\s*(?P<n>\d+)\s*/\s*(?P<total>\d+)\s*\]\s*"
    r"\[\s*(?P<batch>\d+)\s*/\s*(?P<batches>\d+)\s*\]"
)
_NUMBER_TOKEN = re.compile(r"\d[\w./%]*")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")
PROSE_WORDS = 4
"""Words a progress line may hold besides its keys (`INFO`, `train_inner`, a bar's name)
before it reads as a sentence: at most this many, or twice its number of values."""
_DICT = re.compile(r"\{.*\}")
# build-nanogpt's log.txt (train_gpt2.py): `{step} train {loss:.6f}`, `{step} val
# {val_loss:.4f}`, `{step} hella {acc_norm:.4f}`: a step, a word naming what the value
# is, the value, and nothing else on the line.
_STEP_WORD_VALUE = re.compile(rf"^\s*(?P<step>\d+)\s+(?P<word>[a-z]+)\s+(?P<value>{_NUMBER})\s*$")
STEP_WORD_METRICS = {"train": "train_loss", "val": "val_loss", "hella": "eval_hellaswag_acc"}
"""The words of `step word value` lines, as the raw keys their values are read under
(spelled as the other shapes' keys are: `train/loss`, `eval/loss`, `eval/hellaswag_acc`)."""
_NAN_NAMES = {"nan": math.nan, "inf": math.inf, "infinity": math.inf}
STEP_LIMIT = 2**62

Span = tuple[int, int]
"""Where a number stands on the line (start, end), for `_stdout_shapes.py`."""


@dataclass(slots=True)
class Progress:
    """What one progress line says."""

    values: dict[str, float]
    """Raw key -> value (keys as printed, multi-word keys joined with `_`)."""
    units: dict[str, str] = field(default_factory=dict)
    step: int | None = None
    step_total: int | None = None
    """The total of a step counter written `n/total` (`Step [10/1549]`)."""
    epoch: float | None = None
    epoch_counted_from_one: bool = False
    batch: tuple[int, int] | None = None
    bar: bool = False
    """The batch counter is a bare `n/total` (a progress bar's), not a keyed one."""
    batch_only: int | None = None
    """A batch number without a total (`batch: 20`)."""
    is_dict: bool = False
    prose_words: int = 0
    """Words on the line that are neither a key nor a unit."""
    spans: dict[str, Span] = field(default_factory=dict)
    """Where each number used stands: value keys, and `@step`, `@total`, `@epoch`,
    `@batch`, `@batches`, `@batch_only`. None of it when `exact` is False."""
    exact: bool = True
    """Every number used is one plain number on the line at its span (see `spans`)."""


def clean(text: str) -> str:
    """Remove ANSI escape sequences and backspaces (terminal control, not content)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.replace("\x08", "") if "\x08" in text else text


def as_step(value: float) -> int | None:
    if math.isfinite(value) and value == math.floor(value) and 0 <= value < STEP_LIMIT:
        return int(value)
    return None


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


def _dict_entries(text: str) -> tuple[dict[str, float], dict[str, Span], bool] | None:
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
    spans: dict[str, Span] = {}
    # ast offsets count UTF-8 bytes: they are character offsets only in ASCII text.
    exact = match.group().isascii()
    for key, value in zip(tree.body.keys, tree.body.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        number = _literal_number(value)
        if number is None:
            continue
        values[key.value] = number
        if exact and isinstance(value, ast.Constant) and value.end_col_offset is not None:
            start, end = match.start() + value.col_offset, match.start() + value.end_col_offset
            if isinstance(value.value, str):
                start, end = start + 1, end - 1  # inside the quotes
            spans[key.value] = (start, end)
        else:
            exact = False
    return values, spans, exact


def parse_dict(text: str) -> dict[str, float] | None:
    """The numeric entries of a printed Python dict (`{'loss': 2.1, ...}`), or None when
    `text` holds no dict literal with string keys. Never evaluates anything."""
    entries = _dict_entries(text)
    return None if entries is None else entries[0]


@functools.lru_cache(maxsize=4096)
def _is_key_metric(raw: str) -> bool:
    """A name that makes a line a progress line (the rest of a line's pairs ride along)."""
    name = canonical_name(spelling(raw, None), {})
    lowered = raw.lower()
    return (
        is_loss_like(name)
        or name in (LR, GRAD_NORM)
        or lowered.endswith(KEY_WORDS)
        or "loss" in lowered
    )


@functools.lru_cache(maxsize=4096)
def spelling(raw: str, unit: str | None) -> str:
    """HF's `eval_x` -> `eval/x`; a per-step time printed in ms or s -> `step_time`."""
    if raw.lower().replace("_", " ") in TIME_KEYS and unit in TIME_UNITS:
        return "step_time"
    return hf_spelling(raw)


def parse_progress(line: str) -> Progress | None:
    """The metrics on one line (already cleaned), or None when it is not a progress line."""
    entries = _dict_entries(line) if "{" in line else None
    if entries is not None:
        values, spans, exact = entries
        progress = Progress({k: v for k, v in values.items() if k not in IGNORED_KEYS})
        progress.is_dict, progress.exact = True, exact
        progress.spans = {k: s for k, s in spans.items() if k in progress.values}
        for key in list(progress.values):
            if key.lower() in STEP_KEYS:
                progress.step = as_step(progress.values.pop(key))
                if key in progress.spans:
                    progress.spans["@step"] = progress.spans.pop(key)
    else:
        progress = _step_word_value(line) or _parse_pairs(line)
    if not any(_is_key_metric(key) for key in progress.values):
        return None
    if progress.prose_words > max(PROSE_WORDS, 2 * len(progress.values)):
        return None  # a sentence that mentions a loss (docs, messages), not a progress line
    epoch_key = next((k for k in progress.values if k.lower() in EPOCH_KEYS), None)
    if epoch_key is not None and progress.epoch is None:
        progress.epoch = progress.values[epoch_key]
        if epoch_key in progress.spans:
            progress.spans["@epoch"] = progress.spans[epoch_key]
    if (
        progress.step is not None
        and progress.step_total is not None
        and progress.epoch is not None
        and progress.batch is None
    ):
        # `Epoch 2 | Step 10/6501`: a step counter with a total beside an epoch restarts
        # each epoch; it is the batch within the epoch.
        progress.batch = (progress.step, progress.step_total)
        progress.step = progress.step_total = None
        progress.spans["@batch"] = progress.spans.pop("@step", (0, 0))
        progress.spans["@batches"] = progress.spans.pop("@total", (0, 0))
    return progress


def _step_word_value(line: str) -> Progress | None:
    """A `step word value` line (`STEP_WORD_METRICS`), or None."""
    match = _STEP_WORD_VALUE.match(line)
    if match is None or match["word"] not in STEP_WORD_METRICS:
        return None
    key = STEP_WORD_METRICS[match["word"]]
    progress = Progress({key: float(match["value"])}, step=as_step(float(match["step"])))
    progress.spans = {"@step": match.span("step"), key: match.span("value")}
    return progress


def _blank(text: str, start: int, end: int) -> str:
    """`text` with [start, end) replaced by as many spaces (offsets stay those of the line)."""
    return text[:start] + " " * (end - start) + text[end:]


def _epoch_tags(progress: Progress, rest: str) -> str:
    """`[E2]` (an epoch) or `[1/5][200/938]` (an epoch and a batch) on the line: read into
    `progress`; the rest of the line is returned with them blanked."""
    tag = _EPOCH_TAG.search(rest)
    if tag is not None:
        progress.epoch = float(tag["n"])
        progress.epoch_counted_from_one = tag["total"] is not None
        progress.spans["@epoch"] = tag.span("n")
        return _blank(rest, *tag.span())
    pair = _EPOCH_BATCH.search(rest)
    if pair is None:
        return rest
    progress.epoch, progress.epoch_counted_from_one = float(pair["n"]), True
    progress.batch = (int(pair["batch"]), int(pair["batches"]))
    spans = progress.spans
    spans["@epoch"], spans["@batch"], spans["@batches"] = (
        pair.span("n"),
        pair.span("batch"),
        pair.span("batches"),
    )
    return _blank(rest, *pair.span())


def _parse_pairs(line: str) -> Progress:
    progress = Progress({})
    spans = progress.spans
    rest = line
    for match in _KEYED_COUNTER.finditer(line):
        key, n = match.group("key").lower(), int(match.group("n"))
        total = match.group("total")
        if total is None and match.group("open") is None:
            continue  # `step 5`: a plain pair, read below
        if key in STEP_KEYS and progress.step is None and "@step" not in spans:
            progress.step = as_step(float(n))
            spans["@step"] = match.span("n")
            if total is not None and progress.step is not None:
                progress.step_total = int(total)
                spans["@total"] = match.span("total")
        elif key in EPOCH_KEYS and progress.epoch is None:
            progress.epoch = float(n)
            progress.epoch_counted_from_one = total is not None
            spans["@epoch"] = match.span("n")
        else:
            continue
        rest = _blank(rest, *match.span())
    if progress.epoch is None:
        rest = _epoch_tags(progress, rest)
    counter = None if progress.batch is not None else _COUNTER.search(rest)
    if counter is not None:
        progress.batch, progress.bar = (int(counter["n"]), int(counter["total"])), True
        spans["@batch"], spans["@batches"] = counter.span("n"), counter.span("total")
        rest = _blank(rest, *counter.span())
    matches = list(_PAIR.finditer(rest))
    outside, start = [], 0
    for match in matches:
        outside.append(rest[start : match.start()])
        start = match.end()
    outside.append(rest[start:])
    progress.prose_words = len(_PROSE_WORD.findall(_NUMBER_TOKEN.sub(" ", " ".join(outside))))
    for match in matches:
        printed = match.group("key") or match.group("spaced")
        key = " ".join(printed.split()).strip("'\"")
        lowered = key.lower()
        if lowered in IGNORED_KEYS:
            continue
        value = float(match.group("value"))
        if lowered in STEP_KEYS:
            if progress.step is None and "@step" not in spans:
                progress.step = as_step(value)
                spans["@step"] = match.span("value")
            continue
        if lowered in BATCH_KEYS and progress.batch is None and progress.batch_only is None:
            progress.batch_only = as_step(value)
            spans["@batch_only"] = match.span("value")
            continue
        raw = key.replace(" ", "_")
        progress.values[raw] = value
        spans[raw] = match.span("value")
        if match.group("unit"):
            progress.units[raw] = match.group("unit")
    return progress
