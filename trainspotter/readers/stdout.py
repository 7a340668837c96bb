"""Training output as printed (`python train.py > train.log 2>&1`): the lines a training
loop writes to the terminal, read back into metrics.

This module is over ~500 lines on purpose: a fifth of it is this docstring, the reference
for every printed shape and step rule, and the code is one state machine over lines
(`StdoutLines`) whose methods share its per-line state; the shapes, steps, stamps, sniffing
and restarts it uses are in the `_stdout_*` modules.

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
  fairseq/Megatron (`| loss 2.31 | lr 3e-4 |`, `iteration 100/ 5000 | lm loss: 2.3E+00`),
  Python `logging` lines after any prefix (`2024-01-01 12:00:00,123 - INFO - Epoch 1/35,
  Train Loss: 0.1234, Val Acc: 59.86%`, `INFO:root:Epoch [6/6], Step [10/1549], Loss:
  0.049`). A key may be up to three words before `:` or `=` (`Train Loss:` ->
  `Train_Loss`), two before a bare number (`train loss 1.9`); a unit after the value
  (`ms`, `s`, `%`, `it/s`) is dropped from the value and kept in `meta["units"]`;
- `step word value`, the `log.txt` Karpathy's build-nanogpt writes: `{step} train X`
  (`train/loss`), `{step} val X` (`eval/loss`), `{step} hella X` (its HellaSwag accuracy,
  `eval/hellaswag_acc`); only those three words, and nothing else on the line.

The step of a progress line, first rule that applies: a step counter on the line (`step`,
`iter`, `iteration`, `global_step`, `num_updates`, ..., also as `iteration 100/5000` or
`Step [10/1549]`); an epoch and a batch counter (`Epoch 2: ... 32/64`, Keras' `Epoch 3/10`
line followed by `32/32 ...`, and a step counter with a total beside an epoch, `Epoch 2 |
Step 10/6501`, which restarts each epoch): completed epochs x batches per epoch + batch
(an epoch written `N/M` counts from 1, a bare one from 0, as Keras and Lightning print
them); a batch counter alone (a plain tqdm bar over steps); a batch number without a
total (`ep: 0, batch: 20`): it continues from the previous epoch's last step when the
epoch changes; an epoch alone: after epoch-and-batch lines, the end of that epoch on their
scale (`Epoch [3] Validation Loss: ...`), else the epoch number; else the progress lines
are counted, each the step after the one before it (an evaluation-only line, such as HF's
`{'eval_loss': ...}`, shares the step of the line before it unless that step already has
its metrics: two evaluations in a row are two points). A line whose only value is a
learning rate and that has no step (`learning_rate: 0.001` in a dumped config) is not a
point. A counter that starts again every epoch (`[E2] step 0`, `epoch 2 iter 0`, `Epoch
2/10` then `iter 0`, a bare tqdm bar per epoch) is laid end to end when the epoch printed
with it advances or every epoch has one length, else left to the appended-run split
(`_stdout_restarts.py`, `meta["step_restarts"]`); DCGAN's `[2/5][0/938]` is an epoch and
a batch, and once an epoch `N/M` is 0 such epochs count from 0. Which rules were used is
in `meta["step_source"]`. False reads: a `Step n/N` counter beside an epoch that does not
restart each epoch (a global step with the run's total) is read as a batch, which
multiplies the steps by the epoch; a bare number in parentheses (`(512570/2466133)`) is
never a counter.

A progress bar repeats an evaluation result in every refresh until the next evaluation
(Lightning's `val_loss=` postfix), so on a line whose batch counter is mid-epoch (`5/12`)
an eval metric's value equal to its previous value is not a new point (a new value is; at
an epoch's end, `12/12`, a repeat is kept: two evaluations can agree). Steps logged twice
(bar refreshes at one step) follow the shared last-write-wins rule (`Series.build`); a bar
at `0/N` has done nothing yet and shows values left from before, so it is skipped. Lines
that are not progress lines (warnings, model summaries, bars without metrics) are skipped
and counted in `meta["skipped_lines"]`; a log with no progress line is an InputError
naming what was looked for. A head of a few long lines with no progress line (a prompt or
config dump printed first) is sniffed further, up to 1 MiB. A log truncated under its writer
(`: > train.log`) starts with NUL bytes; they and a cut line after them are skipped (`_holes`).

Wall-clock time: when every progress line starts with a dated timestamp in one known
format (`logging`'s `%(asctime)s`, ISO 8601; `_stdout_stamps.py` lists them and says when
they are dropped), it is the wall time of the line's points, with a reader note.

What is printed is what is read: Keras' `verbose=1` bar shows the running mean of the
epoch so far (it restarts each epoch), a tqdm postfix the value at the last refresh.

The file is read in pieces (`read_text_lines`) and each metric kept in compact typed
arrays, so memory follows the number of values, not the size of the text. Lines are
parsed in full once per shape (`_stdout_shapes.py`); consecutive lines of one layout whose
step is on the line or counted are read column by column, the same values and steps as
line by line (a property test holds the two to that). `watch` follows
a log still being printed to (`StdoutTail`): each poll parses only the new complete lines.
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.names import LR, is_eval
from trainspotter.readers._appended import EPOCH_METRIC
from trainspotter.readers._files import read_text_lines
from trainspotter.readers._holes import NulHoles
from trainspotter.readers._stdout_line import (
    EPOCH_KEYS,
    SEGMENTS,
    STEP_LIMIT,
    Progress,
    as_step,
    clean,
    parse_dict,
    parse_progress,
    spelling,
)
from trainspotter.readers._stdout_restarts import Marks, StepClock, glue_printed, glued_steps
from trainspotter.readers._stdout_shapes import (
    CONTROL,
    MAX_PLANNED_CHARS,
    Columns,
    Plan,
    ShapeParser,
    layouts,
    read_columns,
)
from trainspotter.readers._stdout_sniff import sniff_printed_output
from trainspotter.readers._stdout_stamps import LineStamps
from trainspotter.readers._stdout_tail import StdoutTail
from trainspotter.readers._tabular import Column, RunBuilder, canonical_name, list_names
from trainspotter.readers.base import Reader, ReadOptions, Tail
from trainspotter.readers.hf import is_summary_entry
from trainspotter.readers.incremental import file_to_follow

__all__ = ["READER", "StdoutLines", "StdoutReader", "parse_dict", "parse_progress"]

MIN_RUN = 4
"""Consecutive lines of one layout read by columns; shorter runs line by line."""
# A line that is only an epoch header: Keras' `Epoch 3/10`, `epoch   1`, `Epoch [2/5]:`.
_EPOCH_HEADER = re.compile(
    r"^\s*epoch\s*[:\[(]?\s*(\d+)\s*(?:/\s*(\d+)\s*)?[\])]?\s*:?\s*$", re.IGNORECASE
)


class _Metric:
    __slots__ = ("is_eval", "last", "marks", "steps", "values", "walls")

    def __init__(self, evaluation: bool) -> None:
        self.steps: array[int] = array("q")
        self.values: array[float] = array("d")
        self.walls: array[float] = array("d")
        """Each point's wall time while every progress line so far carried a timestamp
        (`StdoutLines.stamps`), else empty."""
        self.last: float | None = None
        self.is_eval = evaluation
        self.marks = Marks()  # its points' stretches of a restarting step counter


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
        self._parser = ShapeParser()
        self._sinks: dict[tuple[str, str | None], _Metric] = {}
        self._epoch_header: tuple[int, bool] | None = None
        """The epoch of the last header line, and whether it counts from 1 (`N/M`)."""
        self._epoch_scale: tuple[int, bool] | None = None
        """Batches per epoch and epoch counting of the last epoch-and-batch line."""
        self._batch_epoch: int | None = None
        self._epoch_zero = False
        """An epoch written `N/M` was 0: epochs so written count from 0 from then on."""
        self._batch_offset = 0
        self._counted = -1
        self._clock = StepClock()
        self._source = ""
        self.stamps = LineStamps()
        """The wall times of the progress lines' leading timestamps (`_stdout_stamps.py`)."""
        self.last_step = 0
        """The step of the last progress line."""

    def add(self, lines: Iterable[str]) -> None:
        """Parse the next physical lines (without line endings) of the log, in order.

        Consecutive lines of one shape whose step is on the line or counted are read
        column by column (`read_columns`): the same values and steps as line by line."""
        block = lines if isinstance(lines, list) else list(lines)
        found = layouts("\n".join(block))
        start = 0
        while start < len(block):
            layout, end = found[start], start + 1
            while end < len(block) and found[end] == layout:
                end += 1
            self._add_run(block[start:end], layout)
            start = end

    def _add_run(self, run: list[str], layout: str) -> None:
        """Lines of one layout: by columns when they can be, else one by one."""
        short = len(run) < MIN_RUN or len(layout) > MAX_PLANNED_CHARS
        if short or any(c in layout for c in CONTROL):
            self._add_lines(run)
            return
        if self._parser.plan(run[0]) is None:
            self._add_lines(run[:1])  # parsed in full once: the shape's plan, if it has one
            run = run[1:]
            if self._parser.plan(run[0]) is None:
                self._add_lines(run)
                return
        plan = self._parser.plan(run[0])
        source = None if plan is None else self._columnar_source(plan)
        columns = None if plan is None or source is None else read_columns(plan, run)
        if plan is None or source is None or columns is None:
            self._add_lines(run)
            return
        stretches = [(0, self._clock.current)]
        if source == "epoch and batch":
            found = self._epoch_and_batch_steps(columns, plan.epoch_counted_from_one)
            if found is None:
                self._add_lines(run)  # an epoch that is not a whole number, a huge step
                return
            steps = found
        elif columns.steps is not None:
            if not all(t.isdecimal() and len(t) < 19 for t in columns.steps):
                self._add_lines(run)  # a step that is not a plain whole number
                return
            steps = array("q", map(int, columns.steps))
            stretches = self._clock.observe_block(steps, columns.counters.get("epoch"))
        else:
            first = max(self._counted, self.last_step if self.records else -1) + 1
            steps = array("q", range(first, first + len(run)))
            self._counted = steps[-1]
        walls = self.stamps.column(run, self.line_count + 1, self.metrics.values())
        for raw, column in columns.values.items():
            unit = plan.units.get(raw)
            metric = self._sinks.get((raw, unit)) or self._sink(raw, unit)
            for index, stretch in stretches:
                metric.marks.add(len(metric.steps) + index, stretch)
            metric.steps.extend(steps)
            metric.values.extend(array("d", column))
            if walls is not None:
                metric.walls.frombytes(walls)
            metric.last = column[-1]
        self.line_count += len(run)
        self.records += len(run)
        self.step_source[source] = self.step_source.get(source, 0) + len(run)
        self.last_step = steps[-1]

    def _epoch_and_batch_steps(self, columns: Columns, from_one: bool) -> array[int] | None:
        epochs = [as_step(float(text)) for text in columns.counters["epoch"]]
        batches = [int(text) for text in columns.counters["batch"]]
        totals = [int(text) for text in columns.counters["batches"]]
        steps = []
        zero = self._epoch_zero
        for epoch, batch, total in zip(epochs, batches, totals, strict=True):
            if epoch is None:
                return None
            zero = zero or (from_one and epoch == 0)
            steps.append(max(epoch - 1 if from_one and not zero else epoch, 0) * total + batch)
        if not 0 <= min(steps) <= max(steps) < STEP_LIMIT:
            return None
        self._epoch_zero = zero
        self._epoch_scale = (totals[-1], from_one and not zero)
        return array("q", steps)

    def _columnar_source(self, plan: Plan) -> str | None:
        """The step source of every line of a planned shape when it is the same for all
        of them whatever came before ("line", "counted", or "epoch and batch" from keyed
        counters), else None."""
        if (self._epoch_header is not None and plan.epoch < 0) or plan.batch_only >= 0:
            return None
        values = dict.fromkeys((key for key, _ in plan.values), 0.0)
        if plan.is_dict and is_summary_entry(values):
            return None
        if plan.step >= 0:
            return "line"
        keys = tuple(values)
        if plan.batch >= 0:
            # Not a bar (its 0/N refresh is skipped) nor an eval value (a bar repeats it).
            keyed = plan.epoch >= 0 and not plan.bar and not plan.is_dict
            evals = any(is_eval(spelling(key, plan.units.get(key))) for key in keys)
            return "epoch and batch" if keyed and not evals else None
        if plan.epoch >= 0 and not plan.is_dict:
            return None
        if not [k for k in keys if k.lower() not in EPOCH_KEYS] or _eval_only(keys):
            return None
        return None if _only_lr(keys) else "counted"

    def _add_lines(self, lines: list[str]) -> None:
        for line in lines:
            self.line_count += 1
            if "\r" in line or "\x1b" in line or "\x08" in line:
                for segment in SEGMENTS.split(clean(line)):
                    if segment and not segment.isspace():
                        self._add_segment(segment)
            elif line and not line.isspace():
                self._add_segment(line)

    def _add_segment(self, segment: str) -> None:
        header = _EPOCH_HEADER.match(segment) if "poch" in segment or "POCH" in segment else None
        if header is not None:
            self._epoch_header = (int(header.group(1)), header.group(2) is not None)
            return
        progress = self._parser.parse(segment)
        if progress is not None and progress.bar and progress.batch and progress.batch[0] == 0:
            progress = None  # a bar at 0/N shows what it showed before it (re)started
        if progress is not None and progress.is_dict and is_summary_entry(progress.values):
            self.summary.update(progress.values)
            return
        if progress is not None and progress.epoch is None and self._epoch_header is not None:
            progress.epoch = float(self._epoch_header[0])
            progress.epoch_counted_from_one = self._epoch_header[1]
            progress.values.setdefault("epoch", progress.epoch)
        step = None if progress is None else self._step(progress)
        if progress is None or step is None:
            self.skipped += 1
            if self.first_skipped is None:
                self.first_skipped = self.line_count
            return
        self.records += 1
        wall = self.stamps.line(segment, self.line_count, self.metrics.values())
        stretch, at_end = self._clock.observe_line(self._source, step, progress.epoch)
        mid_epoch = progress.batch is not None and progress.batch[0] < progress.batch[1]
        units = progress.units
        for raw, value in progress.values.items():
            metric = self._sinks.get((raw, units.get(raw) if units else None))
            if metric is None:
                metric = self._sink(raw, units.get(raw))
            repeated = metric.last is not None and _same(metric.last, value)
            if mid_epoch and metric.is_eval and repeated:
                continue  # an eval result a progress bar keeps showing: not a new point
            metric.marks.add(len(metric.steps), stretch, at_end)
            metric.steps.append(step)
            metric.values.append(value)
            metric.last = value
            if wall is not None:
                metric.walls.append(wall)

    def _sink(self, raw: str, unit: str | None) -> _Metric:
        """The metric a printed key (with its unit) goes to, looked up once per key."""
        name = spelling(raw, unit)
        metric = self.metrics.get(name)
        if metric is None:
            metric = self.metrics[name] = _Metric(is_eval(name))
        if unit and name not in self.units:
            self.units[name] = unit
        self._sinks[raw, unit] = metric
        return metric

    def _step(self, progress: Progress) -> int | None:
        """The line's step (see the module docstring), or None when it is out of range."""
        source, step = "line", progress.step
        # A dict's epoch is HF's fractional progress (0.5, 1.0, 1.5): never a step.
        whole = None if progress.epoch is None or progress.is_dict else progress.epoch
        epoch = None if whole is None else as_step(whole)
        if step is None and progress.batch is not None and epoch is not None:
            per_epoch, from_one = progress.batch[1], progress.epoch_counted_from_one
            self._epoch_zero |= from_one and epoch == 0  # DCGAN's `[0/25][0/1563]`
            from_one = from_one and not self._epoch_zero
            done = epoch - 1 if from_one else epoch
            source, step = "epoch and batch", max(done, 0) * per_epoch + progress.batch[0]
            self._epoch_scale = (per_epoch, from_one)
        elif step is None and progress.batch is not None:
            source, step = "batch counter", progress.batch[0]
        elif step is None and progress.batch_only is not None:
            source, step = "batch number", self._batch_step(progress.batch_only, epoch)
        elif step is None and epoch is not None and self._epoch_scale is not None:
            # `Epoch [3] Validation Loss: ...` after `Epoch [3/5], Step [n/N]` lines: the
            # end of that epoch, on the scale of the batch steps.
            per_epoch, from_one = self._epoch_scale
            done = epoch - 1 if from_one else epoch
            source, step = "epoch end", (max(done, 0) + 1) * per_epoch
        elif step is None and epoch is not None:
            source, step = "epoch", epoch
        elif step is None and _only_lr(tuple(progress.values)):
            return None  # `learning_rate: 0.001` in a dumped config, not a point of a curve
        elif step is None:
            source, step = "counted", self._counted_step(progress)
        if step is None or not 0 <= step < STEP_LIMIT:
            return None
        self.step_source[source] = self.step_source.get(source, 0) + 1
        self.last_step, self._source = step, source
        return step

    def _batch_step(self, batch: int, epoch: int | None) -> int:
        """A batch number without a total: it restarts each epoch, so each epoch starts
        where the previous one's last line was."""
        if epoch is not None and epoch != self._batch_epoch:
            later = self._batch_epoch is not None and epoch > self._batch_epoch
            self._batch_offset = self.last_step if later else 0
            self._batch_epoch = epoch
        return self._batch_offset + batch

    def _counted_step(self, progress: Progress) -> int:
        """The next count; an evaluation-only line (HF's `{'eval_loss': ...}`) takes the
        step of the line before it, unless its metrics already have a point there (two
        evaluations in a row are two points, not one overwriting the other)."""
        names = _eval_only(tuple(progress.values))
        if self.records and names:
            taken = any(
                (metric := self.metrics.get(name)) is not None
                and len(metric.steps)
                and metric.steps[-1] == self.last_step
                for name in names
            )
            if not taken:
                return self.last_step
        self._counted = max(self._counted, self.last_step if self.records else -1) + 1
        return self._counted

    def run(self, source_format: str, display: str, options: ReadOptions, *notes: str) -> Run:
        """The Run (the file's `notes` first); InputError when no line was a progress line."""
        if self.records == 0:
            raise InputError(
                display,
                "no training progress lines found (looked for Hugging Face Trainer dicts "
                "{'loss': ...}, nanoGPT 'iter N: loss X', Keras 'Epoch N/M' and "
                "'- loss: X', logging lines like 'Epoch 1/10, Train Loss: X', and "
                "key=value / key: value pairs naming a loss, lr, grad norm or accuracy)",
            )
        builder = RunBuilder(source_format, display, appended_runs=True, run_name=options.run_name)
        builder.note(*notes)
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
                "(warnings, bars without metrics, a learning rate alone without a step; "
                "each refresh of a bar redrawn with \\r "
                f"counts as a line; first in line {self.first_skipped} of the file)"
            )
        if "counted" in self.step_source:
            builder.note(
                f"{self.step_source['counted']} progress line(s) carry no step counter: each "
                "takes the next count after the step before it (an evaluation-only line "
                "takes the step of the line before it unless it already has those metrics)"
            )
        note = self.stamps.note()
        if note:
            builder.note(note)
        glue = glue_printed(self._clock, self.metrics, self.step_source, builder)
        names = self._names(builder, options)
        for raw, metric in self.metrics.items():
            builder.add(
                Column(
                    raw_name=raw,
                    name=names[raw],
                    steps=glued_steps(glue, metric.steps, metric.marks),
                    values=np.frombuffer(metric.values, dtype=np.float64).copy(),
                    wall_time=(
                        np.frombuffer(metric.walls, dtype=np.float64).copy()
                        if self.stamps.read
                        else None
                    ),
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


@functools.lru_cache(maxsize=1024)
def _only_lr(keys: tuple[str, ...]) -> bool:
    """A line whose only values are a learning rate (and maybe an epoch)."""
    names = [canonical_name(spelling(k, None), {}) for k in keys]
    return all(name in (LR, EPOCH_METRIC) for name in names)


@functools.lru_cache(maxsize=1024)
def _eval_only(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The metric names of a line's keys (its epoch aside) when all are evaluation
    results (HF's `{'eval_loss': ...}`), else none."""
    names = tuple(spelling(k, None) for k in keys if k.lower() not in EPOCH_KEYS)
    return names if names and all(is_eval(name) for name in names) else ()


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


class StdoutReader(Reader):
    """Printed training output (see the module docstring)."""

    name = "stdout"
    description = "training output as printed (HF Trainer dicts, nanoGPT, Keras, tqdm bars)"

    def sniff(self, path: Path, head: str) -> int:
        return sniff_printed_output(path, head)

    def find_in_folder(self, folder: Path) -> Path | None:
        return None  # a folder of printed logs has no layout to recognise

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = options.display_for(path)
        lines = StdoutLines()
        holes = NulHoles()  # a truncation's NUL hole, skipped and noted
        for pieces in read_text_lines(path, display, holes=holes):
            lines.add(pieces)  # "\r" is split per segment
        return lines.run(self.name, display, options, *holes.notes())

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        file = file_to_follow(self, target, display)
        return StdoutTail(self, file, display, options, StdoutLines)


READER = StdoutReader()
