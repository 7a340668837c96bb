"""Printed lines parsed by shape: a training loop prints the same line a million times with
other numbers, so the full parse (`_stdout_line.parse_progress`, a dozen regexes) runs
once per *shape* and every later line of that shape costs two C-level regex passes.

A line's shape is its text with each digit run replaced by `1` (`iter 1234: loss 2.0456`
-> `iter 1: loss 1.1`). Every regex of the full parse looks at characters by class (digit,
letter, `.`, ...) and takes digit runs whole, so two lines of one shape parse alike: the
same keys, units and counters, from the same numbers in the same places. The one place
where digits themselves matter is a dict: `007` is not a Python int literal, so a dict line
holding such a number is parsed in full. The
first line of a shape is parsed in full; its `Progress.spans` say which number on the
line (by position among the `_NUMBER` matches) gave each value and counter, and that plan
reads the later lines. A shape is parsed in full every time (never planned) when a number
used is not one plain number on the line (`-x` in a dict, `nan`, a non-ASCII dict) or a
key holds a digit (`eval_rouge-1`: the digit is part of the name, not a value); a line
whose number overflows to infinity is parsed in full too, so both ways agree on every
line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from trainspotter.readers._stdout_line import Progress, as_step, parse_progress

MAX_SHAPES = 20_000
"""Plans kept; a log of unrepeated lines (prose, prompts) starts the table over."""
MAX_PLANNED_CHARS = 4_000
"""Longer lines are parsed in full (a dict's size limit must see the real length)."""

# ASCII digits only: a shape abstracts the digits every line of it writes alike. Another
# script's digit (`٣`) stays literal in the shape, so such a line is parsed in full, where
# a dict's literal_eval refuses it and a plain line's number may still be read.
_DIGIT_RUN = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_ANY_DIGIT = re.compile(r"\d")
CONTROL = ("\r", "\x1b", "\x08")
"""Characters that split a line into several printed pieces (see `stdout.clean`)."""


@dataclass(frozen=True, eq=False)
class Plan:
    """How to read a line of one shape: which number gives what."""

    values: tuple[tuple[str, int], ...]
    units: dict[str, str]
    is_dict: bool
    step: int
    """Index of the step's number, -1 when the shape has none; likewise below."""
    total: int
    epoch: int
    epoch_counted_from_one: bool
    batch: int
    batches: int
    bar: bool
    batch_only: int

    def read(self, numbers: list[str]) -> Progress | None:
        """The line's Progress, or None when a value overflowed or a dict holds a leading
        zero (parse it in full)."""
        if self.is_dict and _leading_zero(numbers):
            return None
        values = {}
        for key, index in self.values:
            value = float(numbers[index])
            if value - value != 0.0:
                return None
            values[key] = value
        # The units are shared by every line of the shape (read, never changed).
        progress = Progress(values, self.units, is_dict=self.is_dict, bar=self.bar)
        if self.step >= 0:
            text = numbers[self.step]
            progress.step = int(text) if text.isdigit() and len(text) < 18 else as_step(float(text))
        if self.total >= 0 and progress.step is not None:
            progress.step_total = int(numbers[self.total])
        if self.epoch >= 0:
            progress.epoch = float(numbers[self.epoch])
            progress.epoch_counted_from_one = self.epoch_counted_from_one
        if self.batch >= 0 and self.batches >= 0:
            progress.batch = (int(numbers[self.batch]), int(numbers[self.batches]))
        if self.batch_only >= 0:
            progress.batch_only = as_step(float(numbers[self.batch_only]))
        return progress


def _leading_zero(numbers: list[str]) -> bool:
    """A whole number written with a leading zero (`007`): a SyntaxError in a dict."""
    return any(n[:1] == "0" and n.isdecimal() and n.strip("0") for n in numbers)


_NOT_PROGRESS = "not progress"
_UNPLANNED = "unplanned"


def _plan(line: str, progress: Progress) -> Plan | None:
    """The plan that reads `line`'s shape as `progress` was read, or None if there is none."""
    if not progress.exact or any(_ANY_DIGIT.search(key) for key in progress.values):
        return None
    where = {match.span(): i for i, match in enumerate(_NUMBER.finditer(line))}
    index: dict[str, int] = {}
    for name, span in progress.spans.items():
        found = where.get(span)
        if found is None:
            return None
        index[name] = found
    if set(progress.values) - set(index):
        return None
    return Plan(
        values=tuple((key, index[key]) for key in progress.values),
        units=dict(progress.units),
        is_dict=progress.is_dict,
        # A counter's number is planned even when this line's value was refused (`step
        # 1.5`, not a whole number): the value decides, line by line, as in the full parse.
        step=index.get("@step", -1),
        total=index.get("@total", -1),
        epoch=index.get("@epoch", -1),
        epoch_counted_from_one=progress.epoch_counted_from_one,
        batch=index.get("@batch", -1),
        batches=index.get("@batches", -1),
        bar=progress.bar,
        batch_only=index.get("@batch_only", -1),
    )


class ShapeParser:
    """`parse_progress` with a plan per line shape (see the module docstring)."""

    def __init__(self) -> None:
        self._plans: dict[str, Plan | str] = {}

    def parse(self, line: str) -> Progress | None:
        if len(line) > MAX_PLANNED_CHARS:
            return parse_progress(line)
        shape = _DIGIT_RUN.sub("1", line)
        plan = self._plans.get(shape)
        if isinstance(plan, Plan):
            progress = plan.read(_NUMBER.findall(line))
            if progress is not None:
                return progress
        elif plan == _NOT_PROGRESS:
            return None
        progress = parse_progress(line)
        # A dict refused for a leading zero (then read as pairs, or not at all) says
        # nothing of the other lines of its shape.
        if plan is None and ("{" not in line or not _leading_zero(_NUMBER.findall(line))):
            if len(self._plans) >= MAX_SHAPES:
                self._plans.clear()
            if progress is None:
                self._plans[shape] = _NOT_PROGRESS
            else:
                self._plans[shape] = _plan(line, progress) or _UNPLANNED
        return progress

    def plan(self, line: str) -> Plan | None:
        """The plan of `line`'s shape, if its shape was planned."""
        found = self._plans.get(_DIGIT_RUN.sub("1", line))
        return found if isinstance(found, Plan) else None


_ONE = str.maketrans("0123456789", "1111111111")


def layouts(text: str) -> list[str]:
    """Each line of `text` ("\\n"-separated) with every digit turned into `1`: lines of
    one layout have their numbers at the same places, and are of one shape."""
    return text.translate(_ONE).split("\n")


@dataclass
class Columns:
    """Lines of one layout read at once (`read_columns`)."""

    steps: list[str] | None
    """The step counter's text per line, or None when the shape has none."""
    values: dict[str, list[float]]
    counters: dict[str, list[str]]
    """The text per line of the shape's `epoch`, `batch` and `batches` numbers."""


def read_columns(plan: Plan, lines: list[str]) -> Columns | None:
    """Lines of one layout (`layouts`) and planned shape, read column by column: each
    number is cut from where it stands in the first line. None when a value overflowed
    or a dict holds a leading zero (read those lines one by one)."""
    spans = [match.span() for match in _NUMBER.finditer(lines[0])]
    if plan.is_dict and any(
        _leading_zero([line[start:end] for line in lines]) for start, end in spans
    ):
        return None
    values = {}
    for key, index in plan.values:
        start, end = spans[index]
        column = [float(line[start:end]) for line in lines]
        if any(map(math.isinf, column)):
            return None
        values[key] = column
    found = {"step": plan.step, "epoch": plan.epoch, "batch": plan.batch}
    found["batches"] = plan.batches
    counters = {}
    for name, index in found.items():
        if index >= 0:
            start, end = spans[index]
            counters[name] = [line[start:end] for line in lines]
    return Columns(counters.pop("step", None), values, counters)
