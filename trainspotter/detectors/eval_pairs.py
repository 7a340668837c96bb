"""Which train loss an eval loss is judged against, and which other metrics' bests are
named beside it: the overfitting detector's pairing of metrics.

- `judged_eval_metrics`, `train_partner`: every eval metric the detector judges (loss-like
  ones, and error rates such as WER and CER), and its own train loss (the same name after
  the train/eval prefix, `names.train_counterpart`), else `train/loss`;
- `other_bests`, `other_best_texts`: the best evaluation of other logged quality metrics
  (accuracy, F1, mAP, WER), in words: eval-named ones, and bounded ones logged only at the
  eval loss's steps whose name says eval otherwise (an eval namespace, YOLO's
  `metrics/mAP50-95(B)`, or an eval word, `ValAcc`). A bare name (`acc` beside `val_loss`)
  does not say its side (a train metric's best would pick the most overfit checkpoint):
  it is not named.

It judges no curve: `overfitting`, `eval_rise` and `eval_trend` do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.eval_noise import bounded_top, higher_is_better, is_quality_metric
from trainspotter.model import Run


def judged_eval_metrics(run: Run) -> list[str]:
    """The eval metrics the detector judges, sorted: loss-like ones (every step) and error
    rates such as WER and CER (step 8 only)."""
    return sorted(
        m
        for m in run.metrics
        if m != names.TRAIN_LOSS
        and names.is_eval(m)
        and (names.is_loss_like(m) or names.is_error_rate(m))
    )


def train_partner(run: Run, eval_metric: str) -> str | None:
    """The train loss an eval loss is judged against: its own train counterpart, the same
    name after the train/eval prefix (`train/box_loss` for `val/box_loss`,
    `names.train_counterpart`), else the total `train/loss` when logged, else None."""
    own = names.train_counterpart(eval_metric, run.metrics)
    if own is not None:
        return own
    return names.TRAIN_LOSS if names.TRAIN_LOSS in run.metrics else None


ONE_SIDED = frozenset({"precision", "recall"})
"""Rates that a degenerate model maximises (every example positive: recall 1): nobody picks
a checkpoint by one of them alone, so their best step is not quoted."""

MAX_OTHER_BESTS = 3
"""Other metrics' best steps quoted at most (a run may log many)."""


@dataclass(frozen=True)
class OtherBest:
    """Another logged quality metric's best evaluation."""

    metric: str
    step: int
    value: float
    eval_named: bool
    """Named as an eval metric (`val_acc`); otherwise a bounded metric whose name says eval
    another way, logged only at the eval loss's steps (`_beside_evaluations`: YOLO's
    `metrics/mAP50-95(B)`, `ValAcc`)."""

    def text(self) -> str:
        """`By <metric> the best evaluation was <value> at step <step>`, in words that do
        not call a metric an evaluation when its name does not say so."""
        if self.eval_named:
            return f"By {self.metric} the best evaluation was {self.value:.4g} at step {self.step}"
        return (
            f"By {self.metric} (logged at the same steps) the best value was {self.value:.4g} "
            f"at step {self.step}"
        )


# names._TRAIN_PREFIXES, private and without an accessor: a test keeps the two equal.
_TRAIN_WORDS = frozenset({"train", "training"})
"""A metric with one of these words in its name (`TrainAcc`, `acc/train`) is a train one."""

_EVAL_WORDS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test"})
"""A metric with one of these words in its name (`ValAcc`, `acc/val`) is an eval one."""

_EVAL_NAMESPACES = frozenset({"metrics"})
"""First path parts under which a tool logs its evaluations' metrics without a train/eval
word: YOLO's `metrics/mAP50-95(B)` (its train metrics are `train/*`)."""


def _says_eval(name: str) -> bool:
    """The name of a metric not eval-prefixed still says it is an eval one: an eval word
    (`ValAcc`, `acc/val`) or an eval namespace (`metrics/...`), and no train word."""
    words = set(names.name_words(name))
    if _TRAIN_WORDS & words:
        return False
    namespace = name.split("/", 1)[0].lower() if "/" in name else ""
    return bool(_EVAL_WORDS & words) or namespace in _EVAL_NAMESPACES


def _beside_evaluations(run: Run, metric: str, other: str) -> bool:
    """`other`, a bounded higher-is-better metric not eval-prefixed whose name says eval
    otherwise (`_says_eval`), measures the eval loss `metric`'s evaluations: it has no eval
    twin (Keras's `accuracy` beside `val_accuracy` is the train half) and is logged at no
    step the eval loss is not. A bare name (`acc`, `accuracy`) says no side: a train
    accuracy logged once an epoch beside `val_loss` looks the same, so it is never one."""
    if names.is_eval(other) or not _says_eval(other):
        return False
    values = run.metrics[other].values
    if bounded_top(other, values) is None:
        return False
    evals = [m for m in run.metrics if names.is_eval(m)]
    if any(names.train_counterpart(m, [other]) == other for m in evals):
        return False
    return bool(np.isin(run.metrics[other].steps, run.metrics[metric].steps).all())


def other_bests(run: Run, metric: str) -> list[OtherBest]:
    """The best evaluation of every other logged quality metric (accuracy, F1, mAP, WER,
    ...; not a one-sided precision or recall): eval-named ones, and bounded ones whose name
    says eval otherwise, logged only at the eval loss's steps (`_beside_evaluations`); at
    most `MAX_OTHER_BESTS`, by name. Each one's side is known, so each may name a checkpoint
    in the fix."""
    found = []
    for other in sorted(run.metrics):
        if other == metric or names.is_loss_like(other):
            continue
        if ONE_SIDED & set(names.name_words(other)):
            continue
        eval_named = is_quality_metric(other)
        if not eval_named and not _beside_evaluations(run, metric, other):
            continue
        higher = higher_is_better(other)
        x, y = stats.finite_xy(run.metrics[other].steps, run.metrics[other].values)
        if higher is None or y.size < 2:
            continue
        i = int(np.argmax(y) if higher else np.argmin(y))
        found.append(OtherBest(other, int(x[i]), float(y[i]), eval_named))
    return found[:MAX_OTHER_BESTS]


def other_best_texts(run: Run, metric: str, best_step: int) -> tuple[str, str]:
    """What the message says of the other metrics' bests (`other_bests`), and what the fix
    adds: each best checkpoint that differs from the eval loss's `best_step`."""
    others = other_bests(run, metric)
    differ = [o for o in others if o.step != best_step]
    agree = [o for o in others if o.step == best_step]
    said = ""
    if differ:
        joined = ". ".join(o.text() for o in differ)
        said += f" {joined}: pick the checkpoint by the metric you care about."
    if agree:
        # Best at the same step: the rise is a worse model by that metric too, not only a
        # more confident one.
        said += f" {'. '.join(o.text() for o in agree)}, the same step."
    fixes = "".join(f"; by {o.metric} the best checkpoint is step {o.step}" for o in differ)
    return said, fixes
