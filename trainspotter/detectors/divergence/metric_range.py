"""metric_range: a rate of right answers (accuracy, F1, IoU, Dice, AUC...) logged outside the
range any such rate can take.

`metric_nonfinite` finds a metric whose value is not a number; this module finds one whose
value is a number it can never be: an F1 of 1.09, an accuracy of -0.2. Both are a metric
computed wrongly, not a model that got better or worse, so both are the divergence
detector's "broken metric" warnings. It judges only finite values (NaN/Inf are
`metric_nonfinite`'s) and only names that say rate (`names.is_rate`, whole words), never a
loss (`dice_loss`) or a timing metric, never a name whose other words say it is a
difference, a ratio, a log-odds or a count (`accuracy_gain`, `f1_delta`, `auc_logit`,
`acc_sum`), and never a setting or quantity that only borrows a rate word
(`grad_acc_steps`, `noise_precision`, `precision_bits`, `acc_reward`). It does not read
losses, perplexities or error rates.

A series whose largest value is above 1 but at most `PERCENT_EVIDENCE` reads two ways: a
fraction gone wrong (the common bug) or a percentage that never reached 2% (the first
epochs of a many-class model). Unless its train/eval twin settles the scale, the finding
is still a warning, but one whose title and message name both readings and state neither
as fact: the bug reading silently corrupts every checkpoint comparison made by the metric,
which is what a user most needs to hear about, while the percentage reading is answered by
one sentence the user can check against how the metric is logged. Saying only "a metric
bug" would be wrong about a percentage; saying nothing would hide the bug.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import stats
from trainspotter.detectors.base import fmt
from trainspotter.detectors.divergence.params import NAME
from trainspotter.model import Evidence, Finding, FloatArray, Run, Severity
from trainspotter.names import is_loss_like, is_rate, is_timing, name_words

ROUND_OFF = 1e-5
"""Values within this fraction of the range's width outside it are in range: a mean of
float32 ones can be 1.0000001, which is round-off, not a bug."""

PERCENT_EVIDENCE = 2.0
"""A rate whose largest finite value is above this (and at most 100) is read as a
percentage. One whose values never exceed it is read as a fraction, unless the metric's
train/eval twin (`twin_key`) is a percentage by this rule: the averaging bugs
this check is for inflate a fraction by a factor of n / (n - 1) batches, 2 at most, so
values up to 2 are a fraction gone wrong more often than a percentage that never reached
2%, and the warning names both readings. Other rates of the run say nothing about this
one's scale: a top-5 accuracy in percent does not make a top-1 accuracy one."""

# Other name words that make a rate word something unbounded: a change between two rates
# (can be negative), a ratio of two (can exceed 1), a log or log-odds (any real number), a
# count or sum of right answers (any size).
_UNBOUNDED_WORDS = frozenset(
    {"delta", "diff", "difference", "gain", "change", "improvement", "drop", "ratio"}
    | {"rel", "relative", "log", "logit", "logits", "odds", "z", "zscore"}
    | {"count", "counts", "num", "sum", "correct", "n"}
)

# Other name words that make the name a setting or a quantity that only borrows a rate
# word: gradient accumulation (`grad_acc_steps`, `train/grad_acc`), a number format
# (`precision_bits`), a noise precision (an inverse variance, any positive number), a
# reward, a threshold, a coefficient or a coordinate (`acc_x`). Lightning's own `_step` and
# `_epoch` suffixes are dropped first (`train_acc_step` is an accuracy).
_NOT_A_SCORE_WORDS = frozenset(
    {"step", "steps", "grad", "grads", "gradient", "gradients", "accum", "accumulate"}
    | {"accumulation", "bits", "bit", "threshold", "thresh", "reward", "rewards", "noise"}
    | {"x", "y", "weight", "coef", "coeff", "lambda"}
)
_SIDE_WORDS = frozenset({"train", "training", "val", "valid", "validation", "eval", "test"})
_SUFFIX_WORDS = frozenset({"step", "epoch"})


def _core_words(name: str) -> list[str]:
    """The name's words without its leading side words (train/val/eval/test) and its
    trailing Lightning `step`/`epoch` suffixes: `train_acc_step_epoch` -> acc."""
    words = name_words(name)
    start = 0
    while start < len(words) and words[start] in _SIDE_WORDS:
        start += 1
    end = len(words)
    while end > start + 1 and words[end - 1] in _SUFFIX_WORDS:
        end -= 1
    return words[start:end]


def twin_key(name: str) -> tuple[str, ...]:
    """What a metric and its train/eval twin share: the name's words after the side prefix
    and the step/epoch suffixes (`train/acc`, `val_acc` and `acc_epoch` -> acc;
    `val_top5_accuracy` is no twin of `val_acc`)."""
    return tuple(_core_words(name))


def judged(name: str) -> bool:
    """A metric whose values must lie in [0, 1] (or [0, 100]): named like a rate of right
    answers (`names.is_rate`), not a loss, timing or throughput metric, no other word of
    its name says it is a change, ratio, log-odds or count of one, and none (after the
    step/epoch suffixes) says it is a setting or other quantity (`_NOT_A_SCORE_WORDS`:
    `grad_acc_steps`, `noise_precision`, `acc_reward`)."""
    if not is_rate(name) or is_loss_like(name) or is_timing(name):
        return False
    if _UNBOUNDED_WORDS.intersection(name_words(name)):
        return False
    return not _NOT_A_SCORE_WORDS.intersection(_core_words(name))


@dataclass(frozen=True)
class OutOfRange:
    """A rate's finite values outside [0, ceiling]."""

    metric: str
    ceiling: float
    """1 (a fraction) or 100 (a percentage)."""
    x: FloatArray
    y: FloatArray
    """The metric's finite points."""
    out: np.ndarray
    """Which of them are out of range."""
    scale: str
    """Why the range is [0, 1] or [0, 100], said for the message."""
    logged: int
    """How many points the metric logged, finite or not."""
    maybe_percent: bool
    """The values never exceed `PERCENT_EVIDENCE` and no twin is a percentage: they read
    as a fraction gone wrong or as a percentage below 2%, and the message names both."""

    @property
    def worst(self) -> int:
        """Index of the value farthest outside the range."""
        distance = np.maximum(self.y - self.ceiling, -self.y)
        return int(np.argmax(np.where(self.out, distance, -np.inf)))


def _percent(y: FloatArray) -> bool:
    high = float(y.max())
    return float(y.min()) >= 0 and PERCENT_EVIDENCE < high <= 100 * (1 + ROUND_OFF)


def _scale(y: FloatArray, percent_twin: str | None) -> tuple[float, str]:
    """1 or 100, and why (for the message)."""
    high = float(y.max())
    if high > 100 * (1 + ROUND_OFF):
        return 100.0, f"its largest value, {fmt(high)}, is out of range on either scale"
    if high > PERCENT_EVIDENCE:
        return 100.0, f"read as a percentage: its largest value is {fmt(high)}"
    if high > 1 and percent_twin is not None:
        return 100.0, f"read as a percentage, as its twin {percent_twin} is"
    return 1.0, (
        f"read as a fraction: none of its values is above {fmt(PERCENT_EVIDENCE)}, and no "
        "train/eval twin of it is logged as a percentage"
    )


def out_of_range(run: Run) -> list[OutOfRange]:
    """Every judged rate of the run with a finite value outside its range, in run order.
    The scale: a fraction when no value is above 1 or `PERCENT_EVIDENCE` (unless its
    train/eval twin, `twin_key`, is a percentage), a percentage when one is above
    `PERCENT_EVIDENCE`."""
    logged = {name: s.values.size for name, s in run.metrics.items() if judged(name)}
    series = {
        name: stats.finite_xy(run.metrics[name].steps, run.metrics[name].values) for name in logged
    }
    series = {name: xy for name, xy in series.items() if xy[1].size}
    percent = {name for name, (_, y) in series.items() if _percent(y)}
    found = []
    for name, (x, y) in series.items():
        key = twin_key(name)
        twin = next((o for o in percent if o != name and twin_key(o) == key), None)
        ceiling, scale = _scale(y, twin)
        slack = ROUND_OFF * ceiling
        out = (y < -slack) | (y > ceiling + slack)
        if bool(out.any()):
            maybe_percent = ceiling == 1.0 and float(y.min()) >= -slack
            found.append(OutOfRange(name, ceiling, x, y, out, scale, logged[name], maybe_percent))
    return found


def range_finding(found: OutOfRange) -> Finding:
    """A warning naming the value farthest outside the range at its step, how many logged
    values are outside it, and the scale the range was read on. When the values also read
    as a percentage below 2% (`OutOfRange.maybe_percent`), title and message name both
    readings and state neither as fact."""
    x, y, name, ceiling = found.x, found.y, found.metric, found.ceiling
    at = np.flatnonzero(found.out)
    worst = found.worst
    value, step = float(y[worst]), int(x[worst])
    first, last = int(x[at[0]]), int(x[at[-1]])
    count = int(at.size)
    bounds = f"[0, {ceiling:g}]"
    side = f"above {ceiling:g}" if value > ceiling else "below 0"
    where = (
        f"at step {first}"
        if count == 1
        else f"at {count} of its {found.logged} logged points, from step {first} to step {last}"
    )
    causes = (
        "usually a mean of per-batch values divided by the wrong count (the number of full "
        "batches while the partial last batch is summed too), a micro/macro averaging "
        "mix-up, or scores taken from logits with no sigmoid or softmax"
    )
    if found.maybe_percent:
        title = (
            f"{name} is {fmt(value)} at step {step}, above 1: a metric bug, or a percentage "
            f"that never reached {fmt(PERCENT_EVIDENCE)}%"
        )
        message = (
            f"{name} is {fmt(value)} at step {step}, {side}, its largest value; it is above "
            f"1 {where}, and never above {fmt(PERCENT_EVIDENCE)}. It reads two ways, and "
            f"nothing in the log tells which (no train/eval twin of {name} is logged as a "
            f"percentage). As a fraction, an accuracy-like score (accuracy, F1, precision, "
            f"recall, IoU, Dice, AUC) lies in {bounds}, so no model scores this: the metric "
            f"is computed wrongly, {causes}, and any comparison of checkpoints or runs by "
            f"{name} is unreliable until it is fixed. As a percentage, {fmt(value)}% is in "
            f"range: a model that has not reached {fmt(PERCENT_EVIDENCE)}% (the first epochs "
            "of a many-class model, say), and this warning does not apply. Check which scale "
            f"{name} is logged on."
        )
    else:
        title = f"{name} is {fmt(value)} at step {step}, outside {bounds}: a metric bug"
        message = (
            f"{name} is {fmt(value)} at step {step}, {side}: an accuracy-like score (accuracy, "
            f"F1, precision, recall, IoU, Dice, AUC) lies in {bounds} ({found.scale}). It is "
            f"outside that range {where}. No model scores this: the metric is computed "
            f"wrongly, {causes}. Any comparison of checkpoints or runs by {name} is "
            "unreliable until it is fixed."
        )
    evidence: Evidence = {
        "value": value,
        "step": step,
        "range": bounds,
        "scale": (
            "fraction or percentage"
            if found.maybe_percent
            else "fraction"
            if ceiling == 1.0
            else "percentage"
        ),
        "out_of_range_points": count,
        "logged_points": found.logged,
        "finite_points": int(y.size),
        "first_out_of_range_step": first,
        "last_out_of_range_step": last,
        "lowest": float(y.min()),
        "highest": float(y.max()),
    }
    return Finding(
        detector=NAME,
        title=title,
        severity=Severity.WARNING,
        metric=name,
        step_start=first,
        step_end=last,
        message=message,
        evidence=evidence,
        fixes=(
            f"Compute {name} from the epoch's counts (right answers, TP/FP/FN, pixels), as "
            "torchmetrics and Keras metrics accumulate them; if you average per-batch "
            "values, divide by the number of batches summed (the partial last batch "
            "included) or weight each batch by its size.",
            "Check what the metric is given: probabilities or hard predictions, not raw "
            "logits; and one averaging mode (micro or macro) throughout.",
            *(
                (
                    f"If {name} is a percentage, nothing is wrong with it; logging rates as "
                    "fractions (0-1) keeps the scale unambiguous.",
                )
                if found.maybe_percent
                else ()
            ),
            f"Until it is fixed, rank checkpoints by the loss or a library metric, not by {name}.",
        ),
    )
