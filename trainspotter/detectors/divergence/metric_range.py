"""metric_range: a rate of right answers (accuracy, F1, IoU, Dice, AUC...) logged outside the
range any such rate can take.

`metric_nonfinite` finds a metric whose value is not a number; this module finds one whose
value is a number it can never be: an F1 of 1.09, an accuracy of -0.2. Both are a metric
computed wrongly, not a model that got better or worse, so both are the divergence
detector's "broken metric" warnings. It judges only finite values (NaN/Inf are
`metric_nonfinite`'s) and only names that say rate (`names.is_rate`, whole words), never a
loss (`dice_loss`) or a timing metric, and never a name whose other words say it is a
difference, a ratio, a log-odds or a count (`accuracy_gain`, `f1_delta`, `auc_logit`,
`acc_sum`). It does not read losses, perplexities or error rates.
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
percentage. One whose values never exceed it is read as a fraction, unless another rate of
the run is a percentage by this rule: the averaging bugs this check is for inflate a
fraction by a factor of n / (n - 1) batches, 2 at most, so values up to 2 are a fraction
gone wrong more often than a percentage that never reached 2%."""

# Other name words that make a rate word something unbounded: a change between two rates
# (can be negative), a ratio of two (can exceed 1), a log or log-odds (any real number), a
# count or sum of right answers (any size).
_UNBOUNDED_WORDS = frozenset(
    {"delta", "diff", "difference", "gain", "change", "improvement", "drop", "ratio"}
    | {"rel", "relative", "log", "logit", "logits", "odds", "z", "zscore"}
    | {"count", "counts", "num", "sum", "correct", "n"}
)


def judged(name: str) -> bool:
    """A metric whose values must lie in [0, 1] (or [0, 100]): named like a rate of right
    answers (`names.is_rate`), not a loss, timing or throughput metric, and no other word of
    its name says it is a change, ratio, log-odds or count of one."""
    if not is_rate(name) or is_loss_like(name) or is_timing(name):
        return False
    return not _UNBOUNDED_WORDS.intersection(name_words(name))


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

    @property
    def worst(self) -> int:
        """Index of the value farthest outside the range."""
        distance = np.maximum(self.y - self.ceiling, -self.y)
        return int(np.argmax(np.where(self.out, distance, -np.inf)))


def _percent(y: FloatArray) -> bool:
    high = float(y.max())
    return float(y.min()) >= 0 and PERCENT_EVIDENCE < high <= 100 * (1 + ROUND_OFF)


def _scale(y: FloatArray, percent_run: bool) -> tuple[float, str]:
    """1 or 100, and why (for the message)."""
    high = float(y.max())
    if high > 100 * (1 + ROUND_OFF):
        return 100.0, f"its largest value, {fmt(high)}, is out of range on either scale"
    if high > PERCENT_EVIDENCE:
        return 100.0, f"read as a percentage: its largest value is {fmt(high)}"
    if high > 1 and percent_run:
        return 100.0, "read as a percentage, as another accuracy-like metric of the run is"
    return 1.0, (
        f"read as a fraction: none of its values is above {fmt(PERCENT_EVIDENCE)}, and no "
        "other accuracy-like metric of the run is logged as a percentage"
    )


def out_of_range(run: Run) -> list[OutOfRange]:
    """Every judged rate of the run with a finite value outside its range, in run order.
    The scale: a fraction when no value is above 1 or `PERCENT_EVIDENCE` (unless another
    rate of the run is a percentage), a percentage when one is above `PERCENT_EVIDENCE`."""
    series = {
        name: stats.finite_xy(s.steps, s.values) for name, s in run.metrics.items() if judged(name)
    }
    series = {name: xy for name, xy in series.items() if xy[1].size}
    percent_run = any(_percent(y) for _, y in series.values())
    found = []
    for name, (x, y) in series.items():
        ceiling, scale = _scale(y, percent_run)
        slack = ROUND_OFF * ceiling
        out = (y < -slack) | (y > ceiling + slack)
        if bool(out.any()):
            found.append(OutOfRange(name, ceiling, x, y, out, scale))
    return found


def range_finding(found: OutOfRange) -> Finding:
    """A warning naming the value farthest outside the range at its step, how many logged
    values are outside it, and the scale the range was read on."""
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
        else f"at {count} of its {y.size} logged points, from step {first} to step {last}"
    )
    message = (
        f"{name} is {fmt(value)} at step {step}, {side}: an accuracy-like score (accuracy, F1, "
        f"precision, recall, IoU, Dice, AUC) lies in {bounds} ({found.scale}). It is "
        f"outside that range {where}. No model scores this: the metric is computed wrongly, "
        "usually a mean of per-batch values divided by the wrong count (the number of full "
        "batches while the partial last batch is summed too), a micro/macro averaging "
        "mix-up, or scores taken from logits with no sigmoid or softmax. Any comparison of "
        f"checkpoints or runs by {name} is unreliable until it is fixed."
    )
    evidence: Evidence = {
        "value": value,
        "step": step,
        "range": bounds,
        "scale": "fraction" if ceiling == 1.0 else "percentage",
        "out_of_range_points": count,
        "logged_points": int(y.size),
        "first_out_of_range_step": first,
        "last_out_of_range_step": last,
        "lowest": float(y.min()),
        "highest": float(y.max()),
    }
    return Finding(
        detector=NAME,
        title=f"{name} is {fmt(value)} at step {step}, outside {bounds}: a metric bug",
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
            f"Until it is fixed, rank checkpoints by the loss or a library metric, not by {name}.",
        ),
    )
