"""The plateau detector's "stuck on most evaluations" check: an accuracy-like eval metric
that returns to one value (to float32 round-off) at most of its evaluations, at the low
end of what it reached, while it is not a constant tail (that is `stuck.stuck_finding`'s).

**What it finds.** A bounded higher-is-better eval metric (accuracy, F1, IoU, dice, ...:
`eval_noise.bounded_top`) whose most frequent value, to float32 round-off, covers at least
half of its evaluations although other evaluations differ: a Keras binary classifier whose
val_accuracy is the majority-class share (74 of 90) at 45 of its 60 epochs while val_loss
falls, or a segmentation model whose val_mean_io_u is the all-background value at 32 of 40
epochs with isolated jumps away and back. A practitioner reads both as: the model's
predictions (their argmax or threshold) did not change at those evaluations; if the value
is the majority share (the empty mask's score), it predicts one class (all background)
there. The message says so conditionally: the rule sees the metric, not the labels.
`stuck` reports only a value repeated at the END of the run and `eval_stall` only a
metric that never improved, so both were silent on it.

**Algorithm.**
1. Cluster the values to `tolerance` (the plateau's `constant_tolerance`, 1e-6 of the
   value: float32 round-off, as Keras' reductions differ in the 7th digit from epoch to
   epoch) and take the value with the most evaluations within it, the lowest on a tie.
2. Report it when it covers at least `MIN_SHARE` (half) of the evaluations and at least
   `MIN_COUNT` (6) of them; shows `stuck.MIN_DIGITS` (3) significant digits as logged
   or is a unit fraction 1/k (`stuck.chance_share`: one class of a balanced k-class set);
   at most `MAX_BELOW_SHARE` (10%) of the evaluations are below it; the best evaluation
   sits materially above it: at least `MIN_RISE_FRACTION` (2%) of the value higher and,
   when the values lie on an eval-set lattice k/n (`eval_lattice.sample_lattice`, an
   accuracy-type metric; read here from as few as 2 distinct values, since the eval set's
   size is a multiple of the n found and a gap of k steps of 1/n is then at least k
   samples), at least `MIN_RISE_SAMPLES` (4) samples higher; and it is not all but
   `stuck.NEAR_PERFECT_MISSES` (1-3) examples right of an eval set of
   `stuck.SMALL_EVAL_SET` (200) or fewer (`stuck.small_eval_set_score`).
3. Only while the loss fell over the same stretch (first to last evaluation at the
   value; `eval/loss`, or the train loss without one): a significant or near-monotone
   downward trend (`stats.change_over`), or on fewer than `TREND_POINTS` (8) points a
   fall at every point. The model's outputs changed while their argmax or threshold did
   not: the metric is recomputed, not a stale value, and the model is not merely
   converged. The message quotes the loss's half medians and its raw values at both
   ends, the repeated value to 7 digits (the same in title and message, called the same
   value to float32 round-off, not exact), each other evaluation at its step (up to
   `LISTED_OTHERS`, 8, of them; more as their range and median, so the message stays
   readable) and the best with how many samples above the value it is when a lattice is
   known.

**Defaults and why.** Half (`MIN_SHARE`): a healthy small eval set repeats lattice values
(k of n right, `eval_lattice`), but its accuracy wanders among several of them. If each
evaluation drew its examples afresh, the largest binomial probability of any one count is
under 0.38 for n = 20-500 and p = 0.05-0.95 (0.18 at n = 20, p = 0.6; 0.12 at n = 47,
p = 0.55). That argument assumes resampling: a fixed eval set scored by a slowly changing
model is not binomial (the same examples keep the same verdicts, so a converged model
repeats its count far more often), so the generated-runs test below, which models exactly
that, is the evidence, not the binomial figure. 6 evaluations (`MIN_COUNT`): on fewer,
"most" is 3 or 4 points, which the first epochs of a healthy imbalanced run (the majority
share until the weights grow) give. 10% below (`MAX_BELOW_SHARE`): an untrained model's
first one or two evaluations may sit below the majority share (random predictions before
the output bias learns the prior); a model converged at a value wanders both ways around
it, and one stuck at its best is converged, not stuck (as `stuck` says of a constant tail
at its best). 3 digits and the 1-3 misses exception are `stuck`'s, for the same reasons
(0.86 or 0.5 repeat by rounding; 35 of 36 right repeats on a converged model). 4 samples
(`MIN_RISE_SAMPLES`, one more than `stuck.NEAR_PERFECT_MISSES`): a converged model's 1-3
borderline examples flip between evaluations, so its best is 1-3 samples above its usual
count (277 of 300 at 14 of 20 evaluations, at most 279, while a low-LR fine-tune's loss
creeps down is such a model); a model that stopped predicting one class gets more than a
handful of the other class right. 2% of the value (`MIN_RISE_FRACTION`): on a large eval
set 4 samples are a fraction of a percent, and a metric with no lattice (F1, IoU, a
weighted accuracy) has no sample count at all; the bundled segmentation run's best is
4.0% above its repeated value, the majority run's 9.5%. A falling loss over the stretch
(step 3): without it a converged model whose predictions barely change is reported
whenever it leaves its value only upwards (1.4% of the generated converged runs read as
a metric with no lattice, below, instead of 0.18%; as accuracies the 4-sample rule alone
keeps it to 1 of 20000). `TREND_POINTS` (8) is `stats.trend_test`'s minimum.

Measured on generated healthy small-eval-set accuracies
(`tests/detectors/test_stuck_mode.py`: k/n, n = 20-500, a fixed eval set whose per-example
verdicts flip only near the decision boundary, 2000 seeds each): 0 alarms on models that
improve and 0 on models converged from their first evaluation; the same values read as a
metric with no lattice (`mean_io_u`, judged by the 2% margin alone): 3 (0.15%) and 4
(0.2%). Once with 20000 seeds: 3 (0.015%) and 0 as accuracies, 30 (0.15%) and 35 (0.18%)
with no lattice; with 3 samples instead of 4, 7 and 1 as accuracies; without the 2%
margin, 162 (0.81%) converged runs with no lattice; at a share of 40% instead of half, 4
and 0 as accuracies.

**False-positive modes.** A model on a small eval set (about 100 or fewer) that improves
slowly with predictions so stable that it sits at one count for half of its evaluations
before rising 4 or more samples, while its loss falls, is reported (0.015% of the generated
improving runs). A metric with no lattice (F1, IoU, dice, an accuracy averaged over
batches or on more than `eval_lattice.MAX_SAMPLES`, 2000, examples) is judged by the 2%
margin alone: a converged model on a small eval set whose metric repeats and leaves its
value only upwards while its loss creeps down is reported (0.18% of the generated
converged runs read so). A run whose loss is not logged at the
metric's steps, or does not fall there, is not judged: a stuck model whose loss is flat (a
dead model whose metric still moves now and then) is missed. An eval set of 50 or 100
gives accuracies with 2 significant digits (0.86), which the digit rule ignores: such a
run is missed, not misreported. A run stuck for less than half of its evaluations (the
majority class for 27 of 60 epochs, then learning) is not reported: how long a
majority-class start may last is not judged here. A model stuck at a majority share
above 98% (2% of the value is then the whole room to 1) cannot show the margin and is
missed.

**Example.** `examples/keras_majority_then_learns/training.log`: val_accuracy 0.8222222
(74/90, the majority share) at 45 of 60 epochs, steps 1-45, where a callback counted no
positive prediction, while val_loss falls at every epoch; its best, 0.9 at step 57, is 7
samples of 90 above. `examples/keras_seg_all_background/training.log`: val_mean_io_u
0.4698568 (no foreground pixel predicted) at 32 of 40 epochs, steps 6-37.
`examples/keras_imbalanced_healthy/training.log` (the majority share at its first 8 of
30 epochs, then learning) is silent.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from trainspotter import names
from trainspotter.detectors import stats, stuck
from trainspotter.detectors.eval_lattice import is_count_fraction, sample_lattice
from trainspotter.detectors.eval_noise import higher_is_better
from trainspotter.model import Finding, FloatArray, Run, Severity

MIN_SHARE = 0.5
"""The value must be logged at least at this share of the evaluations ("most")..."""
MIN_COUNT = 6
"""...and at least this many of them."""
MAX_BELOW_SHARE = 0.1
"""At most this share of the evaluations may be below the value (its low end)."""
MIN_RISE_SAMPLES = stuck.NEAR_PERFECT_MISSES + 1
"""On an eval-set lattice (an accuracy k/n, `eval_lattice.sample_lattice`), the best
evaluation must be at least this many samples (steps of 1/n) above the value: more than
the 1-3 borderline examples a converged model flips between evaluations..."""
MIN_RISE_FRACTION = 0.02
"""...and, lattice or not, at least this fraction of the value above it: a handful of
examples of a large set, or a pixel metric's drift, is a converged model's wobble."""
TREND_POINTS = 8
"""`stats.trend_test`'s minimum: on fewer loss points, "fell" means fell at every point."""
LISTED_OTHERS = 8
"""Up to this many other values are listed one by one in the message, more as a range."""


def _mode(y: FloatArray, tolerance: float) -> tuple[float, npt.NDArray[np.bool_]]:
    """The value of `y` with the most values within `tolerance` of its magnitude (the
    lowest on a tie), and the mask of those values."""
    ordered = np.sort(y)
    reach = tolerance * np.abs(ordered)
    counts = np.searchsorted(ordered, ordered + reach, side="right") - np.searchsorted(
        ordered, ordered - reach, side="left"
    )
    value = float(ordered[int(np.argmax(counts))])
    return value, np.abs(y - value) <= tolerance * abs(value)


def _rise(metric: str, y: FloatArray, value: float) -> tuple[bool, str]:
    """Whether the best of `y` sits materially above `value` (`MIN_RISE_FRACTION` of it,
    and `MIN_RISE_SAMPLES` eval samples when the values lie on a lattice k/n), and the
    rise in samples for the message ("" without a lattice). The lattice is read from as
    few as 2 distinct values: the eval set's size is a multiple of the n found, so the
    count of samples is a lower bound however few values there are."""
    rise = float(y.max()) - value
    if rise < MIN_RISE_FRACTION * abs(value):
        return False, ""
    lattice = sample_lattice(metric, y, min_distinct=2)
    if lattice is None:
        return True, ""
    samples = round(rise / lattice.step)
    if samples < MIN_RISE_SAMPLES:
        return False, ""
    unit = "1" if lattice.scale == 1 else f"{lattice.scale:g}"
    return True, (
        f", at least {samples} more eval samples right than at the repeated value, its "
        f"values being multiples of {unit}/{lattice.samples}"
    )


def _at(x: FloatArray, y: FloatArray, i: int) -> str:
    return f"{y[i]:.6g} at step {int(x[i])}"


def _others_text(x: FloatArray, y: FloatArray, same: npt.NDArray[np.bool_]) -> str:
    """The evaluations not at the repeated value: each one when few, else their range."""
    rest = np.flatnonzero(~same)
    if rest.size <= LISTED_OTHERS:
        return ", ".join(_at(x, y, int(i)) for i in rest)
    low, high = int(rest[np.argmin(y[rest])]), int(rest[np.argmax(y[rest])])
    median = float(np.median(y[rest]))
    return f"from {_at(x, y, low)} to {_at(x, y, high)} (median {median:.4g})"


def _falling_loss(run: Run, first: int, last: int) -> tuple[str, str] | None:
    """The loss over steps `first`-`last` (`eval/loss`, else the train loss) when it fell
    there: a significant or near-monotone downward trend (`stats.change_over`), or, on
    fewer than 8 points where no trend test runs, a fall at every point."""
    name = names.EVAL_LOSS if names.EVAL_LOSS in run.metrics else names.TRAIN_LOSS
    series = run.metrics.get(name)
    if series is None:
        return None
    x, y = stats.finite_xy(series.steps, series.values)
    inside = (x >= first) & (x <= last)
    x, y = x[inside], y[inside]
    change = stats.change_over(x, y, first, last)
    if change is None or not change.falling():
        return None
    if change.n < TREND_POINTS and not bool(np.all(np.diff(y) < 0)):
        return None
    half = change.n // 2
    return name, (
        f"{name} fell over the same steps: median {change.start_level:.4g} over its first "
        f"{half} points there, {change.end_level:.4g} over its last {change.n - half} "
        f"({_at(x, y, 0)}, {_at(x, y, -1)})"
    )


def mode_finding(
    detector: str, run: Run, metric: str, x: FloatArray, y: FloatArray, tolerance: float
) -> Finding | None:
    """A warning when the bounded accuracy-like eval metric `metric` (steps `x`, values
    `y`, finite) sits at one value on most of its evaluations at the low end of its range
    (the module docstring gives the rule); None otherwise."""
    if not names.is_eval(metric) or higher_is_better(metric) is not True:
        return None
    ceiling = stuck.bounded_ceiling(metric, y)
    if ceiling is None or y.size < MIN_COUNT:
        return None
    value, same = _mode(y, tolerance)
    count = int(same.sum())
    below = int(np.sum(~same & (y < value)))
    above = y.size - count - below
    if count < max(MIN_COUNT, MIN_SHARE * y.size) or above == 0:
        return None
    if below > MAX_BELOW_SHARE * y.size:
        return None
    # Few digits repeat by rounding, except a unit fraction 1/k: one class of a balanced
    # k-class set (0.5 on a balanced binary set), as `stuck` reads it.
    unit_fraction = stuck.chance_share(metric, y[same]) is not None
    if stuck.significant_digits(value) < stuck.MIN_DIGITS and not unit_fraction:
        return None
    material, rise_text = _rise(metric, y, value)
    if not material:
        return None  # a few borderline examples flipping now and then: a converged model
    score = None if unit_fraction else stuck.small_eval_set_score(value, ceiling)
    if score is not None and score[1] - score[0] <= stuck.NEAR_PERFECT_MISSES:
        return None  # all but 1-3 of a tiny eval set right: a converged model repeats that
    where = np.flatnonzero(same)
    first, last = int(x[where[0]]), int(x[where[-1]])
    loss = _falling_loss(run, first, last)
    if loss is None:
        return None  # a loss that did not fall there: a converged model's stable predictions
    loss_name, loss_text = loss
    best = int(np.argmax(y))  # the first evaluation at the best value
    few = f" This rests on {y.size} evaluations." if y.size < 2 * MIN_COUNT else ""
    shown = f"{value:.7g}"
    if is_count_fraction(metric):
        meaning = (
            f"If {shown} is the share of the eval set's most frequent class, the model "
            "predicts that class for every example at those evaluations (any other "
            "predictions would need their hits on the other classes to cancel their misses "
            "on that one, at each of those evaluations)."
        )
    else:
        meaning = (
            f"If {shown} is the score of predicting one class everywhere (for an IoU or "
            "dice, of an all-background mask), the model predicts that at those evaluations."
        )
    message = (
        f"{metric} is {shown} (the same value to float32 round-off) at {count} of its "
        f"{y.size} evaluations (steps {first}-{last}); the other {y.size - count}: "
        f"{_others_text(x, y, same)}. {loss_text}: the model's outputs changed, but at "
        "those evaluations their argmax or threshold scored the same, at the low end of "
        f"what the metric reached (its best: {_at(x, y, best)}{rise_text}). {meaning}{few}"
    )
    return Finding(
        detector=detector,
        title=f"{metric} sits at {shown} on {count} of {y.size} evaluations",
        severity=Severity.WARNING,
        metric=metric,
        step_start=first,
        step_end=last,
        message=message,
        evidence={
            "repeated_value": value,
            "repeated_points": count,
            "logged_points": int(y.size),
            "points_below": below,
            "points_above": above,
            "best_value": float(y[best]),
            "best_step": int(x[best]),
            "falling_loss": loss_name,
        },
        fixes=(
            f"Compare {shown} with the share of the most frequent class in the eval set "
            "(or the score of an all-background mask): equal means the model most likely predicts "
            "that class everywhere there. Weight the loss by class (Keras class_weight, PyTorch "
            "pos_weight / weight) or resample the training data.",
            "If the loss falls while the metric stays put, the outputs move but do not "
            "cross the decision threshold: raise the learning rate (with a warmup), and "
            "check the threshold or argmax against the label encoding.",
            "Check the output layer: saturated sigmoid/softmax pre-activations or dead ReLU "
            "units before it give the same prediction for every input (its activation, "
            "initialisation and the scale of its inputs).",
        ),
    )
