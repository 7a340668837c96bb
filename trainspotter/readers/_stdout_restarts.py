"""A printed step counter that restarts every epoch, laid end to end (`readers/stdout.py`).

Many training loops print the position within the epoch as their step: `[E1] step 0 loss
9.2` ... `[E1] step 14990 loss 1.0`, `Epoch 1 avg-loss 1.02`, then `[E2] step 0 ...`;
`epoch 3 iter 200 loss ...`; a Keras-like `Epoch 2/10` header then `iter 100 loss ...`; a
bare tqdm bar per epoch (`200/938 [..., loss=0.3]`). Read as steps, the epochs land on one
another and the last one printed overwrites the others. This module follows the printed
counter (the step taken from the line, or a bare bar's position) as *stretches*: a new
stretch starts where the counter falls back to or below the first value of the current
one (a restart; a counter that goes back less far, a run resumed from a checkpoint, stays
in its stretch and the last write wins, as before).

Rule: a restart is an epoch boundary, and the stretches on either side of it are laid end
to end, when
- **epoch markers**: the epoch printed on the counter's lines (`[E2]`, `epoch 2`, a
  `Epoch 2/10` header before them) or, when they carry none, on the epoch-only lines
  printed during the stretch (a summary such as `Epoch 1 avg-loss 1.02`) is known on both
  sides and every epoch after the restart is above every epoch before it; or
- **same length**: no stretch carries an epoch, the counter restarted at least twice,
  every stretch but the last reaches the same maximum (within one logging interval or 5%)
  and starts from the same value (within one interval), the last reaches no further, and
  the main training loss does not go back to where the log started (below).
Nothing is glued unless every stretch but the last holds two or more counter lines (a
lone line is no stretch to measure) and every step of the log came from the counter, an
epoch-only line or a count after them (a log that mixes in epoch-and-batch steps, which
are global already, is left as it is). The global step is the stretch's offset plus the
printed step; the offset is the sum of the previous stretches' lengths, each the printed
counter's own period: its highest value minus the counter's base (the lowest first value
of any stretch) plus its logging interval (the smallest step between two of its lines),
so `step 0` ... `step 14990` every 10 is 15000 long. A line that carries an epoch and no
step (a summary) goes to the end of its stretch. A restart that is not glued starts the
offsets again from 0, so a second run appended to the file keeps today's treatment
(`readers/_appended.py` cuts the file into runs; each run's epochs are still laid end to
end).

The fresh-start check (same-length rule only): a second run appended to the same file by
the same script reaches the same maximum too. Its loss goes back to the level the log
started at, where a new epoch continues from the level the previous one ended at; a
restart whose loss (median of the first few points after it) is nearer the log's start
than the previous stretch's end, after a drop of 10% or more, is not glued.

False-positive modes: several runs of one script appended to one file whose loss never
fell (or with no loss printed) and without epochs on their lines are read as one run of
several epochs; a counter that restarts for another reason exactly when a printed epoch
advances (a restarted process that resumes at the next epoch) is glued, which is right
when no step was lost. Missed (today's treatment kept): per-epoch counters printed once
per epoch, epochs of very different lengths without epoch markers, epoch markers that do
not advance at every restart (that restart only).
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from trainspotter.names import is_loss_like
from trainspotter.readers._tabular import RunBuilder

MAX_STRETCHES = 10_000
"""More restarts than this is not a per-epoch counter (two counters interleaved): the
clock stops following and nothing is glued."""
MIN_RESTARTS_WITHOUT_EPOCH = 2
LENGTH_TOLERANCE = 0.05
FRESH_START_DROP = 0.1
FRESH_START_POINTS = 5
COUNTER_SOURCES = ("line", "batch counter")
"""The step sources (`stdout.py`) that are the printed counter."""
GLUED_SOURCES = frozenset({*COUNTER_SOURCES, "epoch", "counted"})
"""A glue only moves the counter's steps, an epoch-only line's, and counts after them."""
EPOCH_MARKERS = "epoch markers"
SAME_MAXIMUM = "same maximum"


@dataclass(slots=True)
class Stretch:
    """One stretch of the printed counter between two restarts."""

    first: int
    last: int
    top: int
    lines: int = 1
    interval: int = 0
    """Smallest positive step between two consecutive lines; 0 while none seen."""
    epoch_low: float | None = None
    epoch_high: float | None = None
    after_low: float | None = None
    """Epochs of epoch-only lines printed during the stretch (summaries)."""
    after_high: float | None = None

    def epochs(self) -> tuple[float, float] | None:
        """The epochs the stretch belongs to (low, high), from its lines, else from the
        epoch-only lines printed during it."""
        if self.epoch_low is not None and self.epoch_high is not None:
            return self.epoch_low, self.epoch_high
        if self.after_low is not None and self.after_high is not None:
            return self.after_low, self.after_high
        return None


@dataclass(slots=True)
class Marks:
    """Where one metric's points change stretch, and which are epoch-only points."""

    starts: list[tuple[int, int]] = field(default_factory=list)
    """(position in the metric's arrays, stretch) where a stretch's points begin."""
    ends: list[int] = field(default_factory=list)
    """Positions of points from epoch-only lines (placed at the end of their stretch)."""
    stretch: int = -1

    def add(self, position: int, stretch: int, at_end: bool = False) -> None:
        """A point at `position` of the metric's arrays, in `stretch`."""
        if stretch != self.stretch:
            self.starts.append((position, stretch))
            self.stretch = stretch
        if at_end:
            self.ends.append(position)


@dataclass(frozen=True)
class Glue:
    """Offsets per stretch (see the module docstring) and what the note says."""

    offsets: tuple[int, ...]
    tops: tuple[int, ...]
    glued: int
    kept: int
    lengths: tuple[int, ...]
    evidence: str

    def apply(self, steps: np.ndarray, marks: Marks) -> None:
        """Turn a metric's printed steps (file order) into global steps, in place."""
        bounds = [position for position, _ in marks.starts] + [steps.shape[0]]
        for (position, stretch), end in zip(marks.starts, bounds[1:], strict=True):
            if stretch >= 0:
                steps[position:end] += self.offsets[stretch]
        if marks.ends:
            starts = np.array([position for position, _ in marks.starts], dtype=np.int64)
            for position in marks.ends:
                stretch = marks.starts[int(np.searchsorted(starts, position, "right")) - 1][1]
                if stretch >= 0:
                    steps[position] = self.offsets[stretch] + self.tops[stretch]

    def meta(self) -> dict[str, object]:
        return {
            "restarts": self.glued + self.kept,
            "glued": self.glued,
            "period": self.period(),
            "evidence": self.evidence,
        }

    def period(self) -> int:
        """The epochs' length (median of the glued ones)."""
        return int(statistics.median(self.lengths)) if self.lengths else 0

    def note(self) -> str:
        why = {
            EPOCH_MARKERS: "the epoch printed with the steps or after them advances at each",
            SAME_MAXIMUM: "each epoch's counter reaches the same highest value",
        }[self.evidence]
        kept = (
            f"; {self.kept} other restart(s) do not look like a new epoch and are kept as they are"
            if self.kept
            else ""
        )
        return (
            f"the printed step counter starts again every epoch ({self.glued} restart(s) in "
            f"this file; {why}): the epochs are laid end to end, step = the epoch's offset "
            f"+ the printed step, each epoch {self.period()} steps (the counter's highest "
            f"value - its lowest + its logging interval, median of {len(self.lengths)}){kept}"
        )


class StepClock:
    """The printed step counter followed across the log, stretch by stretch."""

    def __init__(self) -> None:
        self.stretches: list[Stretch] = []
        self.current = -1
        """Index of the stretch the last counter line fell in; -1 before any."""
        self.gave_up = False

    def observe(self, step: int, epoch: float | None) -> None:
        """One line's printed step (and the epoch printed with it, if any)."""
        if self.gave_up:
            return
        stretch = self.stretches[-1] if self.stretches else None
        if stretch is None or (step < stretch.last and step <= stretch.first):
            if self._start(step) is None:
                return
        else:
            if step > stretch.last:
                gap = step - stretch.last
                stretch.interval = gap if not stretch.interval else min(stretch.interval, gap)
            stretch.last, stretch.top = step, max(stretch.top, step)
            stretch.lines += 1
        if epoch is not None:
            self._extend_epochs((epoch,))

    def observe_line(self, source: str, step: int, epoch: float | None) -> tuple[int, bool]:
        """A progress line with its step source (`stdout.py`): the stretch its points go
        to, and whether they go to its end (an epoch-only line, such as a summary)."""
        if source in COUNTER_SOURCES:
            self.observe(step, epoch)
        elif source == "epoch":
            self.observe_epoch(epoch)
        return self.current, source == "epoch"

    def observe_block(
        self, steps: array[int], epoch_texts: Sequence[str] | None
    ) -> list[tuple[int, int]]:
        """Consecutive lines' printed steps (and epochs, as printed) at once, as `observe`
        line by line would take them: where in the block each stretch begins, [(index,
        stretch)], the first at index 0."""
        epochs = None if epoch_texts is None else [float(text) for text in epoch_texts]
        printed = np.frombuffer(steps, dtype=np.int64)
        count = printed.shape[0]
        if self.gave_up or count == 0:
            return [(0, self.current)]
        # Only where the counter goes down can a stretch start (rare: a loop per drop).
        drops = (np.flatnonzero(printed[1:] < printed[:-1]) + 1).tolist()
        if not self.stretches or printed[0] < self.stretches[-1].last:
            drops.insert(0, 0)
        found: list[tuple[int, int]] = []
        start = 0
        for end in [*drops, count]:
            if end > start:
                self._extend(printed[start:end], None if epochs is None else epochs[start:end])
            if end == count or self.gave_up:
                break
            stretch = self.stretches[-1] if self.stretches else None
            value = int(printed[end])
            if stretch is None or (value < stretch.last and value <= stretch.first):
                if self._start(value) is None:
                    break
                self._extend_epochs(None if epochs is None else epochs[end : end + 1])
                found.append((end, self.current))
                start = end + 1
            else:
                start = end
        if not found or found[0][0] != 0:
            found.insert(0, (0, self._stretch_at_start(found)))
        return found

    def _stretch_at_start(self, found: list[tuple[int, int]]) -> int:
        """The stretch a block's first line fell in when it started none."""
        return found[0][1] - 1 if found else self.current

    def _extend(self, printed: np.ndarray, epochs: Sequence[float] | None) -> None:
        """Lines that stay in the current stretch (no restart among them)."""
        stretch = self.stretches[-1]
        gaps = np.diff(printed, prepend=stretch.last)
        rising = gaps[gaps > 0]
        if rising.shape[0]:
            gap = int(rising.min())
            stretch.interval = gap if not stretch.interval else min(stretch.interval, gap)
        stretch.last = int(printed[-1])
        stretch.top = max(stretch.top, int(printed.max()))
        stretch.lines += printed.shape[0]
        self._extend_epochs(epochs)

    def _extend_epochs(self, epochs: Sequence[float] | None) -> None:
        known = [e for e in epochs if e == e] if epochs is not None else []
        if known:
            stretch = self.stretches[-1]
            low, high = min(known), max(known)
            stretch.epoch_low = low if stretch.epoch_low is None else min(stretch.epoch_low, low)
            stretch.epoch_high = (
                high if stretch.epoch_high is None else max(stretch.epoch_high, high)
            )

    def observe_epoch(self, epoch: float | None) -> None:
        """An epoch-only line (no step): an epoch marker for the current stretch."""
        if epoch is None or epoch != epoch or self.current < 0 or self.gave_up:
            return
        stretch = self.stretches[self.current]
        low, high = stretch.after_low, stretch.after_high
        stretch.after_low = epoch if low is None else min(low, epoch)
        stretch.after_high = epoch if high is None else max(high, epoch)

    def _start(self, step: int) -> Stretch | None:
        if len(self.stretches) >= MAX_STRETCHES:
            self.gave_up = True
            return None
        stretch = Stretch(first=step, last=step, top=step)
        self.stretches.append(stretch)
        self.current = len(self.stretches) - 1
        return stretch

    def glue(self, loss: tuple[np.ndarray, Marks] | None) -> Glue | None:
        """The offsets when some restart is an epoch boundary, else None (module rule).
        `loss`: the main training loss's values (file order) and marks, for the
        fresh-start check."""
        stretches = self.stretches
        if self.gave_up or len(stretches) < 2:
            return None
        if any(s.lines < 2 for s in stretches[:-1]):
            return None
        restarts = range(1, len(stretches))
        if any(s.epochs() is not None for s in stretches):
            glued = [False, *(_epoch_advanced(stretches[k - 1], stretches[k]) for k in restarts)]
            evidence = EPOCH_MARKERS
        elif self._same_length():
            fresh = _fresh_starts(loss, len(stretches))
            glued = [False, *(not fresh[k] for k in restarts)]
            evidence = SAME_MAXIMUM
        else:
            return None
        count = sum(glued)
        if count == 0:
            return None
        base = min(s.first for s in stretches)
        lengths = [s.top - base + max(s.interval, 1) for s in stretches]
        offsets = [0]
        for k in restarts:
            offsets.append(offsets[-1] + lengths[k - 1] if glued[k] else 0)
        used = [lengths[k - 1] for k in restarts if glued[k]]
        return Glue(
            offsets=tuple(offsets),
            tops=tuple(s.top for s in stretches),
            glued=count,
            kept=len(stretches) - 1 - count,
            lengths=tuple(used),
            evidence=evidence,
        )

    def _same_length(self) -> bool:
        stretches = self.stretches
        if len(stretches) - 1 < MIN_RESTARTS_WITHOUT_EPOCH:
            return False
        interval = max(min((s.interval for s in stretches if s.interval), default=1), 1)
        full = [s.top for s in stretches[:-1]]
        tolerance = max(interval, LENGTH_TOLERANCE * max(full))
        if max(full) - min(full) > tolerance or stretches[-1].top > max(full) + tolerance:
            return False
        firsts = [s.first for s in stretches[1:]]
        return max(firsts) - min(firsts) <= interval


def _epoch_advanced(before: Stretch, after: Stretch) -> bool:
    a, b = before.epochs(), after.epochs()
    return a is not None and b is not None and b[0] > a[1]


def _fresh_starts(loss: tuple[np.ndarray, Marks] | None, count: int) -> list[bool]:
    """Per stretch: its loss starts back where the log started rather than where the
    previous stretch ended (a new run appended, not a new epoch). False when unknown."""
    fresh = [False] * count
    if loss is None:
        return fresh
    values, marks = loss
    pieces: dict[int, np.ndarray] = {}
    bounds = [position for position, _ in marks.starts] + [values.shape[0]]
    for (position, stretch), end in zip(marks.starts, bounds[1:], strict=True):
        if stretch >= 0:
            piece = values[position:end]
            pieces[stretch] = piece[np.isfinite(piece)]
    first = pieces.get(0)
    if first is None or first.shape[0] == 0:
        return fresh
    start = float(np.median(first[:FRESH_START_POINTS]))
    for k in range(1, count):
        before, after = pieces.get(k - 1), pieces.get(k)
        if before is None or after is None or not before.shape[0] or not after.shape[0]:
            continue
        ended = float(np.median(before[-FRESH_START_POINTS:]))
        began = float(np.median(after[:FRESH_START_POINTS]))
        dropped = start - ended > FRESH_START_DROP * abs(start)
        fresh[k] = dropped and abs(began - start) < abs(began - ended)
    return fresh


class PrintedMetric(Protocol):
    """What the glue needs of one of `stdout.StdoutLines`' metrics."""

    @property
    def is_eval(self) -> bool: ...

    @property
    def values(self) -> array[float]: ...

    @property
    def marks(self) -> Marks: ...


def glue_printed(
    clock: StepClock,
    metrics: Mapping[str, PrintedMetric],
    sources: Iterable[str],
    builder: RunBuilder,
) -> Glue | None:
    """The glue of a printed log (its note and meta added to `builder`), or None; only when
    every step came from the counter, an epoch-only line or a count after them."""
    if not set(sources) <= GLUED_SOURCES:
        return None
    losses = [m for n, m in metrics.items() if is_loss_like(n) and not m.is_eval]
    loss = max(losses, key=lambda metric: len(metric.values), default=None)
    values = None if loss is None else np.frombuffer(loss.values, dtype=np.float64)
    glue = clock.glue(None if loss is None or values is None else (values, loss.marks))
    if glue is not None:
        builder.meta["step_restarts"] = glue.meta()
        builder.note(glue.note())
    return glue


def glued_steps(glue: Glue | None, printed: array[int], marks: Marks) -> np.ndarray:
    """A metric's steps as an array: the printed ones, laid end to end by `glue`."""
    steps = np.frombuffer(printed, dtype=np.int64).copy()
    if glue is not None:
        glue.apply(steps, marks)
    return steps
