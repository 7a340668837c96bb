"""The absolute sense of a loss incident, shared by spikes, divergence and grad_norm.

Relative tests (a ratio, a robust z) alone call a jump from 1e-8 to 6e-4 a 60,000x spike,
and a jump from 2e-4 to 0.3 a 1,500x one; a practitioner looking at the run on a linear
scale sees nothing, or one hard batch once the model has memorised its data. Three rules
put the absolute sense back, each stated where a detector uses it:

- `undoes_progress`: a rise is an incident only when it undoes at least `share` of the
  progress the curve had made: (peak - level) >= share x (reference - level), where the
  reference is the highest level the curve held so far (`reference_level`). On a curve
  that has not fallen (flat, or rising), the reference is close to the level and any
  clear relative rise passes.
- `near_zero`: below `fraction` of its reference the curve is in the memorisation regime,
  where a batch loss is ~0 except for the occasional hard example, which gives a one-log
  jump of orders of magnitude. There a jump that comes back within a few points is the
  loss's own heavy tail, not an incident, unless it climbs above the reference itself.
- `total_loss`: when a run logs a total loss and its terms (PINN residuals, GAN parts,
  `*_loss` columns beside `train/loss` or `mean_loss`), the total is the quantity trained:
  one incident is reported once, on the total, naming the terms that moved with it.

Plus `eval_after`, what the eval loss did after an episode that a train loss came back
from (a train loss that recovered is not "the run recovered" when eval did not).
"""

from __future__ import annotations

import math
import re

import numpy as np

from trainspotter.detectors import stats
from trainspotter.model import FloatArray, Run
from trainspotter.names import EVAL_LOSS, TRAIN_LOSS, is_eval, is_loss_like

REFERENCE_POINTS = 5
"""The reference level is the highest median of this many consecutive points: robust to a
single outlier (the spike itself, an early blip)."""

_TOTAL = re.compile(
    r"^(train[_/ ]?)?"
    r"((mean|total|overall|sum|combined|full)[_/ ]?loss|loss[_/ ]?(mean|total|sum))$",
    re.IGNORECASE,
)


def reference_level(values: FloatArray, upto: int) -> float:
    """The highest level the curve held before index `upto` (raw units): the largest
    median of `REFERENCE_POINTS` consecutive points (fewer when fewer exist); NaN when no
    point precedes."""
    before = values[:upto]
    before = before[np.isfinite(before)]
    if before.size == 0:
        return math.nan
    width = min(REFERENCE_POINTS, before.size)
    return float(np.max(stats.rolling_median(before, width)[width - 1 :]))


def undoes_progress(peak: float, level: float, reference: float, share: float) -> bool:
    """Whether a rise from `level` to `peak` undoes at least `share` of the progress from
    `reference` down to `level`. True when the curve made no progress (reference <= level),
    where only the relative tests apply."""
    progress = reference - level
    if not math.isfinite(progress) or progress <= 0:
        return True
    return peak - level >= share * progress


def near_zero(level: float, reference: float, fraction: float) -> bool:
    """Whether a positive curve sits below `fraction` of its reference (memorisation)."""
    return (
        math.isfinite(reference) and reference > 0 and level >= 0 and level < fraction * reference
    )


def total_loss(run: Run) -> str | None:
    """The run's total training loss when it also logs terms of it: `train/loss`, or a
    `mean_loss`/`total_loss`-like name; None when there is no total or no other term."""
    train = [n for n in run.metrics if is_loss_like(n) and not is_eval(n)]
    if TRAIN_LOSS in run.metrics:
        total = TRAIN_LOSS
    else:
        named = sorted(n for n in train if _TOTAL.match(n.strip()))
        if not named:
            return None
        total = named[0]
    return total if len(train) > 1 else None


def components(run: Run, total: str) -> list[str]:
    """The other training losses beside `total` (its terms, or its epoch aggregate)."""
    return sorted(n for n in run.metrics if is_loss_like(n) and not is_eval(n) and n != total)


def eval_after(run: Run, start_step: int, end_step: int) -> str | None:
    """A sentence on what `eval/loss` did after an episode (from `start_step`, back by
    `end_step`) when it did not come back to within 10% of its best up to `start_step`;
    None when it came back or there is no eval loss with evaluations on both sides."""
    series = run.metrics.get(EVAL_LOSS)
    if series is None:
        return None
    x, y = stats.finite_xy(series.steps, series.values)
    before, after = x <= start_step, x > end_step
    if not before.any() or not after.any():
        return None
    best = int(np.argmin(np.where(before, y, np.inf)))
    best_value = float(y[best])
    after_y, after_x = y[after], x[after]
    if best_value <= 0 or float(np.min(after_y)) <= 1.1 * best_value:
        return None
    last = float(after_y[-1])
    lowest = int(np.argmin(after_y))
    return (
        f"{EVAL_LOSS} did not come back: its best before the episode was "
        f"{best_value:.4g} at step {int(x[best])}; after it the lowest was "
        f"{float(after_y[lowest]):.4g} at step {int(after_x[lowest])} and the last "
        f"{last:.4g} at step {int(after_x[-1])} ({last / best_value:.3g}x the best)."
    )
