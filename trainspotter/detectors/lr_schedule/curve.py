"""One LR curve cut into its rises once: the state every lr_schedule case reads.

The warmup (the first rise, when it is one) decides both the endless-warmup case and which
later rises are re-rises or restarts; the peak and the span scale every threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.lr_schedule.params import LrScheduleParams
from trainspotter.model import FloatArray, Run


@dataclass(frozen=True)
class Rise:
    """One rise of the LR: from the trough point `low` to the top point `high`."""

    low: int
    high: int
    biggest_move: int
    """Index of the point ending the largest single up-move inside the rise."""
    biggest_ratio: float


class Curve:
    """The finite, non-negative LR points of one run, its peak, span and rises."""

    def __init__(self, run: Run, x: FloatArray, lr: FloatArray, params: LrScheduleParams) -> None:
        self.run = run
        self.x = x
        self.lr = lr
        self.params = params
        self.peak = float(lr.max())
        self.span = float(x[-1] - x[0])
        moves = np.diff(lr)
        # Float noise only: a per-step cosine changes the LR by ~1e-4 of itself per step.
        tolerance = 1e-6 * lr[:-1] + 1e-12 * self.peak
        self.direction = np.where(moves > tolerance, 1, np.where(moves < -tolerance, -1, 0))
        self.rises = self._rises()

    def _rises(self) -> list[Rise]:
        """Maximal runs of up-moves (flat moves ignored) that multiply the LR enough."""
        moving = np.flatnonzero(self.direction)
        if moving.size == 0:
            return []
        signs = self.direction[moving]
        # A phase ends where the direction changes, or at a long flat stretch (a constant
        # LR): a staircase warmup's short flats do not split it.
        max_flat = max(5, self.lr.size // 50)
        breaks = np.flatnonzero((np.diff(signs) != 0) | (np.diff(moving) > max_flat + 1))
        firsts = moving[np.concatenate(([0], breaks + 1))]
        lasts = moving[np.concatenate((breaks, [moving.size - 1]))]
        ups = signs[np.concatenate(([0], breaks + 1))] > 0
        low, high = firsts[ups], lasts[ups] + 1
        with np.errstate(all="ignore"):
            factor = self.lr[high] / self.lr[low]
        big = (self.lr[low] <= 0) | (factor >= self.params.min_rise_factor)
        with np.errstate(all="ignore"):
            step_ratio = self.lr[1:] / self.lr[:-1]
        step_ratio = np.where(self.direction > 0, step_ratio, 0.0)
        rises = []
        for a, b in zip(low[big], high[big], strict=True):
            inside = step_ratio[a:b]
            best = int(np.argmax(inside))
            rises.append(Rise(int(a), int(b), int(a + best + 1), float(inside[best])))
        return rises

    def warmup(self) -> Rise | None:
        """The first rise, if it is a warmup: from the start (or from ~0), rising first."""
        if not self.rises:
            return None
        first = self.rises[0]
        before = self.lr[: first.low + 1]
        if float(before.max()) > self.lr[first.low] * (1 + 1e-3) + 1e-12 * self.peak:
            return None  # the LR fell before this rise: it is a re-rise
        early = self.x[first.low] - self.x[0] <= self.params.warmup_start_fraction * self.span
        from_zero = float(before.max()) < self.params.near_zero_fraction * self.peak
        return first if early or from_zero else None

    def loss_after(self, start: int, end: int) -> str:
        """What the train loss did right after an LR change (evidence, not a condition)."""
        loss = self.run.metrics.get(names.TRAIN_LOSS)
        if loss is None or len(loss) < 4:
            return ""
        horizon = stats.step_after(loss.steps, end, 10)
        found = stats.excursion(loss.steps, loss.values, start, horizon, 20)
        if found is None:
            return ""
        if found.nonfinite_step is not None:
            return f"{names.TRAIN_LOSS} turned non-finite at step {found.nonfinite_step}."
        # The same bar as a blow-up after a gradient explosion: 6 sigma and +50%.
        if found.first_step_above(found.threshold(6.0, 0.5)) is not None:
            return (
                f"{names.TRAIN_LOSS} then rose from {found.baseline:.4g} to {found.peak:.4g} "
                f"(step {found.peak_step})."
            )
        return ""
