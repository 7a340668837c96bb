"""The plateau detector's constant-value checks: a loss or eval metric that repeats one
exact value (a dead model, or a metric not computed from the model's output), an
accuracy-like eval metric that stays inside a band far narrower than the room it had to
rise (a model whose predictions hardly change), and a loss that fell and then froze to 4+
significant digits (a model collapsed to a constant output).

A separate module because they share nothing with the flat-tail judgement but the detector
id: the stuck check needs 3 points, not 12, and both read repeats, not smoothed levels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.base import fmt
from trainspotter.detectors.eval_noise import bounded_top, higher_is_better
from trainspotter.model import Evidence, Finding, FloatArray, Severity

MIN_DIGITS = 3
"""A repeated value must show at least this many significant digits as logged (0.72414,
0.4874342): a value with fewer (0.0, 1.0, 0.95, a loss rounded to 0.0001) repeats by
rounding or by saturation, not because nothing changed. One exception: an accuracy-like
metric (by its name) at exactly 0 at every logged point, which no rounding explains."""


SMALL_EVAL_SET = 200
"""An exact repeat near the ceiling is read as a tiny eval set's score when some k of n
examples, n up to this, give the value as logged..."""
NEAR_PERFECT_MISSES = 3
"""...with at most this many examples wrong: a converged model keeps getting the same
one to three hard examples of a 36-example set wrong, so 97.22% (35 of 36) repeats."""


def is_train_rate(metric: str) -> bool:
    """A train-side metric named like a rate of right answers (`names.is_rate`: `acc`,
    `train_accuracy`, `train_acc_step_epoch`, `dice`, `mean_io_u`...): plateau checks it
    for an exact repeat, as it does eval metrics, since one that never moves while the
    model trains is computed from something other than the model's output. Whole words
    only (`grad_accum` is no accuracy)."""
    return not names.is_eval(metric) and names.is_rate(metric)


MAX_CLASSES = 100
"""`chance_share` knows chance levels 1/2 ... 1/MAX_CLASSES."""


def chance_share(metric: str, y: FloatArray) -> int | None:
    """k when an accuracy-like metric is exactly 1/k (k from 2 to `MAX_CLASSES`, as logged:
    float32 round-off allowed) at every point: the share of one class in a balanced k-class
    set, which a model scores by predicting that class for everything (0.1 on CIFAR-10,
    0.5 on a balanced binary set). Few digits, yet no rounding artefact: one value, exactly
    a unit fraction, at every evaluation. None otherwise."""
    if higher_is_better(metric) is not True or y.size == 0:
        return None
    value = float(y[0])
    if not 0.0 < value <= 0.5:
        return None
    k = round(1.0 / value)
    exact = np.abs(y - 1.0 / k) <= 1e-6 * (1.0 / k)
    return k if 2 <= k <= MAX_CLASSES and bool(np.all(exact)) else None


def logged_text(value: float) -> str:
    """`value` as it was most likely logged: the shortest text that round-trips, in float32
    when the value is a float32 (TensorBoard, Keras)."""
    with np.errstate(over="ignore"):  # beyond float32's range: not a float32
        single = np.float32(value)
    if float(single) == value:
        return np.format_float_positional(single, unique=True, trim="-")
    return np.format_float_positional(value, unique=True, trim="-")


def significant_digits(value: float) -> int:
    """Significant digits of `value` as it was most likely logged, so 0.95 logged as
    float32 counts 2 digits, not 16."""
    return len(logged_text(value).lstrip("-").replace(".", "").strip("0"))


def small_eval_set_score(value: float, ceiling: float) -> tuple[int, int] | None:
    """(k, n): the fewest examples n (up to `SMALL_EVAL_SET`) and k of them right whose
    share k / n (of `ceiling`: 1 or 100) gives `value` to the digits it was logged with,
    or None when no set that small does (0.977302 as logged needs more than 200)."""
    text = logged_text(value)
    decimals = len(text.split(".")[1]) if "." in text else 0
    half_unit = 0.5 * 10.0**-decimals + 1e-7 * abs(value)  # + float32 round-off
    for n in range(1, SMALL_EVAL_SET + 1):
        k = round(value / ceiling * n)
        if abs(k / n * ceiling - value) <= half_unit:
            return k, n
    return None


def constant_tail(y: FloatArray, tolerance: float) -> int:
    """How many of the last points of `y` equal its last value within `tolerance` of that
    value's magnitude (float32 round-off of one value, not a change)."""
    last = float(y[-1])
    same = np.abs(y - last) <= tolerance * abs(last)
    start = stats.final_run_start(same)
    return 0 if start is None else int(y.size - start)


def _worse_than_best(metric: str, y: FloatArray, value: float) -> bool:
    """Whether `value` is worse than the best logged value of `metric` (by its name's
    direction; False when the name does not say)."""
    higher = higher_is_better(metric)
    if higher is None:
        return False
    return value < float(y.max()) if higher else value > float(y.min())


def stuck_finding(
    detector: str,
    metric: str,
    x: FloatArray,
    y: FloatArray,
    *,
    min_points: int,
    min_fraction: float,
    tolerance: float,
) -> Finding | None:
    """A warning when `metric` ends on an exact repeat of one value over at least
    `min_points` points and `min_fraction` of its points. Another eval metric (an accuracy)
    must also repeat a value worse than its best, or repeat over all its points: on a small
    eval set an accuracy may settle at its best once converged; one that never moved, or
    fell to one value and stayed there, did not measure a learning model. Not an accuracy
    whose value, as logged, is all but `NEAR_PERFECT_MISSES` (3) examples right of a set of
    at most `SMALL_EVAL_SET` (200): 97.22% is 35 of 36, and a converged model on 36
    examples scores that at every evaluation (so does a majority-class predictor on a set
    with 1-3 minority examples, which such a set cannot tell apart)."""
    if y.size < min_points:
        return None
    value = float(y[-1])
    # An accuracy-like metric at exactly 0 at every point is no rounding artefact: not one
    # example was ever right by it (a class that is never predicted scores F1 0).
    never_right = value == 0.0 and higher_is_better(metric) is True and bool(np.all(y == 0.0))
    chance = chance_share(metric, y)
    # The run's train loss at exactly 0 from its first point never drove an update: no
    # converged loss rounds to 0 at the first logged step. (A disabled auxiliary term, an
    # `aug_loss` of 0, is another metric and keeps the digit rule.)
    zero_loss = metric == names.TRAIN_LOSS and bool(np.all(y == 0.0))
    exact_meaning = never_right or zero_loss or chance is not None
    if significant_digits(value) < MIN_DIGITS and not exact_meaning:
        return None
    count = constant_tail(y, tolerance)
    is_loss = names.is_loss_like(metric)
    ceiling = bounded_ceiling(metric, y) if higher_is_better(metric) is True else None
    exact_share = never_right or chance is not None  # not a tiny set's near-perfect score
    score = small_eval_set_score(value, ceiling) if ceiling and not exact_share else None
    if score is not None and score[1] - score[0] <= NEAR_PERFECT_MISSES:
        return None  # all but 1-3 of a tiny eval set right: a converged model repeats that
    if count < max(min_points, int(np.ceil(min_fraction * y.size))):
        return None
    if not is_loss and count < y.size and not _worse_than_best(metric, y, value):
        return None  # an accuracy that settled at its best: converged, not stuck
    since = int(x[y.size - count])
    whole = count == y.size
    where = (
        f"at all {count} logged points (steps {since}-{int(x[-1])})"
        if whole
        else f"at its last {count} of {y.size} logged points (steps {since}-{int(x[-1])})"
    )
    if zero_loss:
        meaning = (
            "a train loss of exactly 0 from the first logged point gives no gradient: "
            "nothing was trained (the loss is not computed, is multiplied by a weight of "
            "0, or the value logged is not the one backpropagated)."
        )
        fixes: tuple[str, ...] = (
            "Print the loss of one batch before backward(): if it is 0, check the loss "
            "weights and what the loss is computed from.",
            "Check that the logged value is the loss that is backpropagated, not a "
            "variable initialised to 0 and never updated.",
        )
    elif never_right:
        meaning = (
            "an accuracy-like metric that is 0 at every point was never right once: the "
            "model predicts one class only (F1, precision or recall of a class it never "
            "predicts is 0) or the metric is not computed from the model's output."
        )
        data = "eval set" if names.is_eval(metric) else "batches it is computed on"
        fixes = (
            f"Count the predictions per class on the {data}: if the class {metric} "
            "measures is never predicted, weight the loss by class (pos_weight, "
            "class_weight) or resample the training data.",
            f"Check what {metric} is computed from: the model's predictions on the {data}, "
            "after the forward pass, with the right argmax/threshold and label encoding "
            "(an integer division, or a comparison of tensors of different shapes, gives 0).",
        )
    elif chance is not None:
        meaning = (
            f"exactly 1/{chance} at every point is what a model scores that predicts one "
            f"class for every example when that class is 1/{chance} of the set (as in a "
            f"balanced {chance}-class set), or {metric} is not computed from the model's "
            "output."
        )
        fixes = (
            "Check that the loss falls and the predictions vary: a classifier that outputs "
            "one class is not learning (an LR too high or too low, labels that do not match "
            "inputs, a final activation that saturates).",
            f"Check what {metric} is computed from: the model's predictions, after the "
            "forward pass, with the right argmax/threshold and label encoding.",
        )
    elif names.is_eval(metric) and not is_loss:
        meaning = (
            "an eval metric that stops moving did not measure a changing model: the model "
            "predicts the same thing for every example (a constant accuracy is often the "
            "majority-class share) or the metric is not computed from the model's output."
        )
        fixes = (
            f"Check what {metric} is computed from: the model's predictions on the eval set, "
            "after the forward pass, with the right argmax/threshold.",
            "Compare it with the class balance of the eval set: a model that predicts the "
            "majority class for everything scores exactly that share.",
            "Check that the loss falls: if it does not either, the model is not learning "
            "(frozen parameters, an LR of 0, labels that do not match inputs).",
        )
    else:
        meaning = (
            "a loss that does not change at all is a dead model: zero gradients (frozen or "
            "disconnected parameters, an LR of 0, saturated units, a loss computed from "
            "constants) or a logger that repeats a stale value."
        )
        fixes = (
            "Check that the optimiser is given the model's parameters, that they require "
            "gradients and that the LR is not 0.",
            "Print the gradient norm for one batch: exactly 0 means the loss does not depend "
            "on the weights (a detached tensor, a constant output, dead ReLUs).",
            "Check that the logged value is recomputed every step, not a stale variable.",
        )
    few = (
        f" This rests on {count} points; an exact repeat is not noise, but a longer log "
        "would show whether it persists."
        if count < 2 * min_points + 1
        else ""
    )
    return Finding(
        detector=detector,
        title=f"{metric} is stuck at exactly {value:.6g}",
        severity=Severity.WARNING,
        metric=metric,
        step_start=since,
        step_end=int(x[-1]),
        message=f"{metric} is {value:.7g} {where}: {meaning}{few}",
        evidence={
            "constant_value": value,
            "constant_points": count,
            "logged_points": int(y.size),
            "constant_since_step": since,
        },
        fixes=fixes,
    )


BAND_MIN_POINTS = 8
"""A band needs this many evaluations (the trend test's minimum): fewer are not a run."""
BAND_FRACTION = 0.02
"""Every value within this fraction of the metric's distance to its ceiling..."""
BAND_LEVEL_FRACTION = 0.5
"""...at a median level at most this fraction of the ceiling (far from it)..."""
BAND_OWN_FRACTION = 0.1
"""...and within this fraction of its own median: near 0 a band that is small next to the
room can still be a large change (a macro-F1 over thousands of labels growing 0.0003 ->
0.0018 grew sixfold; token accuracy 0.0657-0.0667 moved 1.5%)."""


def bounded_ceiling(metric: str, y: FloatArray) -> float | None:
    """1 or 100 for a bounded accuracy-like metric (`eval_noise.bounded_top`), None when
    the scale is ambiguous: values just above 1 with a median under 1 are a fraction gone
    wrong (an F1 of 1.06) as often as a percentage under 1%."""
    top = bounded_top(metric, y)
    return None if top == 100.0 and float(np.median(y)) < 1.0 else top


def _steps_text(count: float) -> str:
    return "1 step" if round(count) == 1 else f"{count:.0f} steps"


def band_finding(detector: str, metric: str, x: FloatArray, y: FloatArray) -> Finding | None:
    """A warning when a bounded accuracy-like eval metric stays, at every one of its
    `BAND_MIN_POINTS` or more points, inside a band no wider than `BAND_FRACTION` of its
    distance to its ceiling, at a median no higher than `BAND_LEVEL_FRACTION` of it, and
    no wider than `BAND_OWN_FRACTION` of that median.

    Exact repeats are `stuck_finding`'s (a band needs two distinct values). The band is
    compared with the room the metric had to rise, not with its level: token accuracy
    0.0657-0.0667 used 0.1% of the 0.93 it could gain. Its width is also stated in the
    metric's resolution (the smallest step between its logged values: 1 / eval-set size
    for an accuracy), which is how many examples changed their verdict."""
    if higher_is_better(metric) is not True or y.size < BAND_MIN_POINTS:
        return None
    low, high = float(y.min()), float(y.max())
    ceiling = bounded_ceiling(metric, y)
    if high == low or ceiling is None:
        return None
    level = float(np.median(y))
    band = high - low
    if level > BAND_LEVEL_FRACTION * ceiling or band > BAND_FRACTION * (ceiling - level):
        return None
    if band > BAND_OWN_FRACTION * level:
        return None  # moved by a tenth of its own level or more: changing, however low
    steps = np.diff(np.unique(y))
    resolution = float(steps.min())
    trend = stats.trend_test(x, y)
    first, last = int(x[0]), int(x[-1])
    trend_text = (
        f"; its trend over the run (Mann-Kendall p {trend.p_value:.2g}) moves it by less than "
        "the band itself"
        if trend is not None and trend.p_value < 0.05
        else "; no significant trend"
        if trend is not None
        else ""
    )
    message = (
        f"{metric} stayed between {low:.6g} and {high:.6g} at all {y.size} logged points "
        f"(steps {first}-{last}): a band of {band:.3g} ({_steps_text(band / resolution)} of "
        f"its resolution {resolution:.3g}, the smallest gap between its values), "
        f"{100 * band / (ceiling - level):.2g}% of the {ceiling - level:.4g} it had to rise "
        f"to {ceiling:g}{trend_text}. An accuracy of a model that is learning moves by more "
        "than that between evaluations; one that never leaves a narrow band far below its "
        "ceiling comes from a model whose predictions hardly change: not learning (an LR far "
        "too small, frozen weights, inputs and labels that do not match) or a metric not "
        "computed from the model being trained."
    )
    if y.size < 2 * BAND_MIN_POINTS:
        message += f" This rests on {y.size} evaluations."
    return Finding(
        detector=detector,
        title=f"{metric} is stuck near {level:.4g} (between {low:.4g} and {high:.4g})",
        severity=Severity.WARNING,
        metric=metric,
        step_start=first,
        step_end=last,
        message=message,
        evidence={
            "band_low": low,
            "band_high": high,
            "band_median": level,
            "ceiling": ceiling,
            "resolution": resolution,
            "logged_points": int(y.size),
            "trend_p_value": trend.p_value if trend is not None else float("nan"),
        },
        fixes=(
            "Check that the training loss falls: if it is flat too, the model is not "
            "learning (an LR far too small, frozen or detached parameters, labels that do "
            "not match their inputs).",
            f"Check what {metric} is computed from: the predictions of the model being "
            "trained, on the eval set, after the forward pass.",
            "Compare the level with a trivial predictor (the most frequent class or token): "
            "a model at that level has learned nothing the data's frequencies do not give.",
        ),
    )


@dataclass(frozen=True)
class Frozen:
    """The frozen end of a loss (`frozen_tail`)."""

    since: int
    """First step of the frozen stretch."""
    points: int
    share: float
    """Its share of the logged span."""
    low: float
    high: float
    level: float
    """The last value."""

    def evidence(self) -> Evidence:
        return {
            "frozen_since_step": self.since,
            "frozen_points": self.points,
            "frozen_min": self.low,
            "frozen_max": self.high,
        }


def frozen_tail(
    x: FloatArray,
    y: FloatArray,
    *,
    tolerance: float,
    min_points: int,
    min_share: float,
    floor: float,
) -> Frozen | None:
    """The last points of `y` when at least `min_points` of them, over `min_share` of the
    logged span, all stay within `tolerance` of the last value, a value above `floor` and
    shown with `MIN_DIGITS` or more significant digits (0.0 or 0.25 as logged repeat by
    rounding); None otherwise."""
    count = constant_tail(y, tolerance)
    if count < min_points:
        return None
    since = int(x[y.size - count])
    share = 1.0 - stats.span_fraction(x, since)
    level = float(y[-1])
    if share < min_share or significant_digits(level) < MIN_DIGITS or abs(level) <= floor:
        return None
    tail = y[-count:]
    return Frozen(since, count, share, float(tail.min()), float(tail.max()), level)


def _highest_before(x: FloatArray, y: FloatArray, step: int) -> str:
    """ " and as high as 10.56 at step 2" when the loss rose above its first value before
    `step` (an early blow-up), else nothing."""
    before = y[x < step]
    if before.size < 2 or float(before.max()) <= float(before[0]):
        return ""
    i = int(np.argmax(before))
    return f" and as high as {fmt(float(before[i]))} at step {int(x[i])}"


def collapse_text(
    name: str, x: FloatArray, y: FloatArray, frozen: Frozen, tolerance: float
) -> tuple[str, str, tuple[str, ...]]:
    """Title, message and fixes of a loss that fell and then froze."""
    message = (
        f"{name} has stayed between {frozen.low:.7g} and {frozen.high:.7g} (within "
        f"{fmt(100 * tolerance)}% of {frozen.level:.7g}) at its last {frozen.points} of "
        f"{y.size} logged points, steps {frozen.since}-{int(x[-1])} "
        f"({fmt(100 * frozen.share)}% of the run), after starting at {fmt(float(y[0]))} at "
        f"step {int(x[0])}{_highest_before(x, y, frozen.since)}. A model that is still "
        "training moves its loss by more than that between logs (minibatch noise, or the "
        "steady creep of full-batch descent): this one stopped changing, the shape of a "
        "model that collapsed to a constant output (predicting the mean or the majority "
        "class) or whose units all died."
    )
    fixes = (
        f"Compare {fmt(frozen.level)} with the loss of a constant prediction: for a mean "
        "squared error the variance of the targets (0.25 for balanced 0/1 targets, 1.0 for "
        "standardised ones), for cross-entropy the entropy of the class frequencies (ln K "
        "for K balanced classes). Equal means the model ignores its input.",
        "Check for dead units (ReLU activations at 0 on every input) or saturated outputs "
        "(sigmoid/tanh at their limits): lower the LR, use a better init or a leaky/GELU "
        "activation, add normalisation.",
        "Print the gradient norm of the layers below the output: ~0 while the loss is far "
        "from 0 confirms a collapse.",
    )
    title = f"{name} collapsed to a constant ({frozen.level:.6g}) since step {frozen.since}"
    return title, message, fixes
