"""Eval-side "not learning": an eval metric that never got materially better than its
first evaluation, and whether it sits at the chance level of a cross-entropy.

Two detectors report it, under the ids the finding belongs to: `plateau` (the train loss
did not fall either, or is not logged: the model is not learning) through
`not_learning_findings`, and `overfitting` (the train loss fell while the eval never
improved: no generalisation from the start) through `never_improved`.

The rule. With n >= `MIN_EVALS` evaluations, the metric (in its better direction: a loss
or an error rate falls, an accuracy rises; `eval_noise.higher_is_better`, which reads
WER, CER, `err` and `error_rate` as whole name words, `names.is_error_rate`) did not
improve materially on its first evaluation when all three hold:
1. no significant improving trend (`stats.trend_test`: Mann-Kendall p < 0.05 or a
   near-monotone tau of 0.6 or more in the improving direction, from 8 evaluations), and
   not better at every evaluation than at the one before (a strict fall at every
   evaluation is a trend at any n: an unchanging curve orders itself so with chance 1/n!,
   1/120 for 5 evaluations; it is a model learning, if slowly, so "not learning" is not
   said of it whatever the size of the fall);
2. no evaluation is materially better than the first: better by `MIN_EFFECT` (5%) of the
   first's scale (its absolute value; for a bounded accuracy-like metric its distance to
   perfect, since 0.90 -> 0.93 is 30% fewer errors; for an error rate its value, the
   distance to 0) AND by more than the best of n - 1 later evaluations of a flat curve
   beats the first at one-sided 95% (`pair_noise_sigmas`: Bonferroni over the n - 1
   differences, each with sd sqrt(2) x the curve's point-to-point sigma,
   `eval_jitter.curve_noise`; 3.95 sigma for 20 evaluations, 3.17 for 5: one pair's
   bound let one lucky evaluation among 19 pass as an improvement);
3. the median of the later half of the evaluations is not `MIN_EFFECT` better than the
   first either (a noisy curve that did improve has a lower median even when single
   evaluations sit inside the noise bound).
Chance level is named only for a loss whose name says cross-entropy (`cross_entropy`,
`xent`, `nll`, `bce`, `log_loss`) or that sits next to an accuracy-type metric ("if it is a
cross-entropy"): the median of its evaluations within max(2 sigma, 1% of ln C) of ln C for
exactly one class count C (ln 2 = 0.693, ln 10 = 2.303), a uniform guess over C classes.
An error rate (`eval_noise.error_rate_bound`: 0-1, or 0-100 for a percentage) at or above
`MOST_WRONG` (half) of its scale at every evaluation is "most wrong": like a chance level
it says the model did not learn, so both are reported whatever the train loss shows. The
messages quote the raw first, best and last evaluations with their steps and the later
half's median; "never improved" only when no later evaluation beat the first, else "did
not improve materially" with the best's gain and the test that held it back (under 5%, or
within the noise bound, whose sigma is quoted: a curve without jitter has a bound of 0).

False-positive modes: an eval metric whose first evaluation comes after most of the
learning (an epoch aggregate: Keras and Lightning evaluate at the end of the first epoch)
never improves on it once the model converged within one epoch; so plateau reports a
non-chance level only when the train loss, logged from before or at the first
evaluation, did not fall either, and never when the later half's median is 5% worse than
the first evaluation (that is overfitting's, or divergence's echo). A fine-tune starting
near its optimum that improves by under 5%, not at every evaluation and with no
significant trend, is "not learning" here, with the numbers in the message. Below 5
evaluations nothing is judged; from 5 to 7 only the level tests (2, 3) and the
every-evaluation fall of 1 apply. A metric already perfect at its first evaluation is not
judged (nothing to improve; a trivially perfect metric is not questioned). A log starting
late (its train loss's first step past `LATE_START`, 10%, of its last: a resumed run) is
called "not learning" only at chance level; a resumed run that never learned is then
missed. "Most wrong" is read off the values alone: a hard task converged in its first
epoch to a WER of 50% or more is reported (the numbers say so); a fraction WER above 1 (a
model inserting words) reads as a percentage, so it is not "most wrong".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.eval_jitter import best_of_n_sigmas, curve_noise
from trainspotter.detectors.eval_lattice import is_count_fraction
from trainspotter.detectors.eval_noise import (
    bounded_top,
    distance_to_ideal,
    error_rate_bound,
    higher_is_better,
    is_quality_metric,
)
from trainspotter.detectors.eval_rise import (
    TrainTrend,
    keep_best_fix,
    train_trend,
)
from trainspotter.model import Finding, FloatArray, Run, Series, Severity

MIN_EVALS = 5
"""Evaluations needed: fewer cannot tell "never improved" from "one lucky first value"."""

LATE_START = 0.1
"""A train log whose first step is past this fraction of its last (a resumed run, a
late-stage excerpt) holds none of the learning: flat train and eval losses there say
"converged" as much as "not learning", so only a chance level is reported on it."""

MIN_EFFECT = 0.05
"""An evaluation this fraction of the first's scale better is an improvement (if beyond
the noise bound): half the 10% band of the train-side "not learning" rule."""

ALPHA = 0.05
"""One-sided: a flat curve's best later evaluation beats the noise bound with at most this
probability."""

MOST_WRONG = 0.5
"""An error rate at or above this fraction of its scale (0.5, or 50%) at every evaluation
got most of its words (characters, examples) wrong even at its best: a model that learned
its task in a first epoch does not sit there, so such a stall is reported whatever the
train loss shows, like a chance level."""

MONOTONE_TAU = 0.6
"""|tau| >= 0.6 is a trend even when the autocorrelation-corrected p is not small."""

MAX_CLASSES = 1000
_CROSS_ENTROPY = re.compile(r"cross_?entropy|xent|nll|bce|log_?loss|(^|[_/])ce($|[_/])")


@dataclass(frozen=True)
class EvalStall:
    """An eval metric that never got materially better than its first evaluation."""

    metric: str
    n: int
    first_step: int
    last_step: int
    first: float
    last: float
    best_step: int
    best: float
    later_median: float
    later: int
    sigma: float
    noise_sigmas: float
    """How many point-to-point sigmas a later evaluation must beat the first by (the
    best-of-(n - 1) bound of rule 2)."""
    scale: float
    scale_text: str
    """What `scale` measures, with its value: "its first value (6.92)", "its distance to
    perfect (1 - 0.9 = 0.1)"."""
    trend_text: str
    worse_from_first: bool
    """No later evaluation better than the first, and a significant worsening trend."""
    chance: str
    """The chance-level clause ("" when not at a chance level)."""
    most_wrong: str
    """The clause for an error rate never below `MOST_WRONG` of its scale ("" otherwise)."""

    @property
    def no_skill(self) -> bool:
        """At a cross-entropy's chance level or an error rate mostly wrong throughout: the
        level itself says the model did not learn, whatever the train loss did."""
        return bool(self.chance or self.most_wrong)

    @property
    def never_better(self) -> bool:
        """No later evaluation was better than the first (the best is the first)."""
        return self.best_step == self.first_step

    @property
    def best_gain_percent(self) -> float:
        return 100.0 * abs(self.first - self.best) / self.scale if self.scale > 0 else 0.0


def never_improved(run: Run, metric: str) -> EvalStall | None:
    """`metric`'s stall (the module docstring's rule), or None."""
    higher = higher_is_better(metric)
    if higher is None:
        return None
    x, y = stats.finite_xy(run.metrics[metric].steps, run.metrics[metric].values)
    n = int(y.size)
    if n < MIN_EVALS:
        return None
    # Already perfect at the first evaluation (an accuracy of 100%, a loss of 0): there
    # was nothing to improve on, so "never improved" would be untrue of the model.
    top = bounded_top(metric, y) if higher else 0.0
    if top is not None and (float(y[0]) >= top if higher else float(y[0]) <= top):
        return None
    badness = -y if higher else y  # lower is better from here on
    if bool(np.all(np.diff(badness) < 0)):
        # Better at every evaluation than at the one before: learning, if slowly. An
        # unchanging curve orders its n evaluations so with chance 1/n! (1/120 for 5),
        # and below 8 evaluations there is no trend test to say so.
        return None
    trend = stats.trend_test(x, badness)
    improving = trend is not None and trend.tau < 0
    if improving and trend is not None and (trend.p_value < 0.05 or trend.tau <= -MONOTONE_TAU):
        return None
    if higher:
        scale, _ = distance_to_ideal(metric, y[:1])
        perfect = bounded_top(metric, y[:1])
        scale_text = (
            f"its distance to perfect ({perfect:g} - {float(y[0]):.4g} = {scale:.3g})"
            if perfect is not None and perfect > float(y[0])
            else f"its first value's size ({scale:.3g})"
        )
    else:
        scale = abs(float(y[0])) or stats.level_scale(y)
        scale_text = f"its first value ({scale:.3g})"
    if scale <= 0:
        return None
    sigma = curve_noise(y)
    noise_sigmas = pair_noise_sigmas(n)
    gains = float(badness[0]) - badness[1:]
    material = (gains >= MIN_EFFECT * scale) & (gains > noise_sigmas * sigma)
    later = badness[n // 2 :]
    if bool(material.any()) or float(badness[0] - np.median(later)) >= MIN_EFFECT * scale:
        return None
    best = int(np.argmin(badness))
    worsening = trend is not None and trend.tau > 0
    worsening = worsening and trend is not None and (trend.p_value < 0.05 or trend.tau >= 0.6)
    trend_text = (
        f"{'a significant worsening' if worsening else 'no significant improving'} trend "
        f"(Kendall tau {-trend.tau if higher else trend.tau:.2f}, Mann-Kendall p = "
        f"{trend.p_value:.2g} over {n} evaluations)"
        if trend is not None
        else f"{n} evaluations, too few for a trend test"
    )
    return EvalStall(
        metric=metric,
        n=n,
        first_step=int(x[0]),
        last_step=int(x[-1]),
        first=float(y[0]),
        last=float(y[-1]),
        best_step=int(x[best]),
        best=float(y[best]),
        later_median=float(np.median(y[n // 2 :])),
        later=int(later.size),
        sigma=sigma,
        noise_sigmas=noise_sigmas,
        scale=scale,
        scale_text=scale_text,
        trend_text=trend_text,
        worse_from_first=worsening and bool(np.all(badness[1:] >= badness[0])),
        chance=_chance_clause(run, metric, y, sigma) if not higher else "",
        most_wrong=_most_wrong_clause(metric, x, y),
    )


def pair_noise_sigmas(n: int) -> float:
    """How many point-to-point sigmas the best of n - 1 later evaluations of a FLAT curve
    stays within of the first at one-sided 95%: each difference has sd sigma sqrt(2), and
    the best of n - 1 of them is a pick (Bonferroni, `eval_jitter.best_of_n_sigmas`: 2.33
    sigma for one later evaluation, 3.17 for 4, 3.95 for 19). A single-pair bound let one
    lucky evaluation among 19 count as an improvement on a curve that never moved."""
    return best_of_n_sigmas(max(n - 1, 1), ALPHA) * math.sqrt(2.0)


def _most_wrong_clause(metric: str, x: FloatArray, y: FloatArray) -> str:
    """ "Most wrong" words for an error rate (`eval_noise.error_rate_bound`) at or above
    `MOST_WRONG` of its scale at every evaluation, else ""."""
    bound = error_rate_bound(metric, y)
    if bound is None or float(np.min(y)) < MOST_WRONG * bound:
        return ""
    best = int(np.argmin(y))
    scale = "0-1" if bound == 1.0 else "0-100%"
    return (
        f"Its lowest, {float(y[best]):.4g} at step {int(x[best])}, is at least half of its "
        f"{scale} scale ({MOST_WRONG * bound:g}): most of the output was wrong at every "
        "evaluation, which a model that learned before its first evaluation would not show."
    )


def _chance_clause(run: Run, metric: str, y: FloatArray, sigma: float) -> str:
    """ "At chance" words for a cross-entropy near ln C for exactly one C, else ""."""
    named = _CROSS_ENTROPY.search(metric.lower()) is not None
    classifier = any(is_count_fraction(m) for m in run.metrics if m != metric)
    if not (named or (names.is_loss_like(metric) and classifier)):
        return ""
    level = float(np.median(y))
    near = [
        c
        for c in range(2, MAX_CLASSES + 1)
        if abs(level - math.log(c)) <= max(2 * sigma, 0.01 * math.log(c))
    ]
    if len(near) != 1:
        return ""
    c = near[0]
    guess = f"ln {c} = {math.log(c):.4g}, the cross-entropy of a uniform guess over {c} classes"
    if named:
        return (
            f"Its median {level:.4g} over all evaluations is within the noise of {guess}: "
            "chance level."
        )
    return (
        f"Its median {level:.4g} over all evaluations is within the noise of {guess}: if it "
        "is a cross-entropy (the log also has an accuracy), chance level."
    )


def train_fell(trend: TrainTrend) -> bool:
    """The train loss fell over the evaluations: a falling trend (`train_trend`) AND its
    last interval `MIN_EFFECT` below its first (a 1% drift down is flat, not learning)."""
    start, end = trend.start, trend.end
    return (
        trend.falls
        and start is not None
        and end is not None
        and end.value <= (1 - MIN_EFFECT) * start.value
    )


def stall_text(stall: EvalStall) -> str:
    """The rule's numbers, in words: first, best, later median, trend. Only the test that
    held the best evaluation back is quoted: the 5% floor, or the noise bound when the best
    cleared the floor (a curve with no point-to-point jitter has a noise bound of 0, which
    holds nothing back)."""
    direction = "higher" if higher_is_better(stall.metric) else "lower"
    if stall.never_better:
        outcome = "never improved on it: no later evaluation was better"
    else:
        gain = (
            f"its best, {stall.best:.4g} at step {stall.best_step}, is {direction} by only "
            f"{stall.best_gain_percent:.1f}% of {stall.scale_text}"
        )
        bound = stall.noise_sigmas * stall.sigma
        if stall.best_gain_percent < 100 * MIN_EFFECT:
            why = f"under the {100 * MIN_EFFECT:.0f}% an improvement needs"
        else:
            why = (
                f"within the noise: an improvement also needs more than "
                f"{stall.noise_sigmas:.2f}x its point-to-point noise {stall.sigma:.3g} "
                f"({bound:.3g}), the bound for the best of {stall.n - 1} later evaluations"
            )
        outcome = f"did not improve materially on it: {gain}, {why}"
    return (
        f"{stall.metric} was {stall.first:.4g} at its first evaluation (step "
        f"{stall.first_step}) and {outcome}; its last is "
        f"{stall.last:.4g} (step {stall.last_step}) and the median of its last "
        f"{stall.later} evaluations {stall.later_median:.4g}, with {stall.trend_text}."
    )


def stall_words(stall: EvalStall) -> str:
    """The title's verb phrase: "never improved" only when no later evaluation was better
    than the first; a curve a little better at its best "did not improve materially"."""
    if stall.never_better:
        return "never improved on its first evaluation"
    return "did not improve materially on its first evaluation"


def train_words(trend: TrainTrend) -> str:
    """What the train loss did over the evaluations, in words its numbers agree with."""
    start, end = trend.start, trend.end
    if start is None or end is None:
        return f"{trend.name} is not logged"
    if train_fell(trend):
        return f"{trend.name} fell ({start.text}, then {end.text})"
    change = 100 * (end.value - start.value) / abs(start.value) if start.value else 0.0
    return (
        f"{trend.name} did not fall by {100 * MIN_EFFECT:.0f}% ({start.text}, then "
        f"{end.text}: {abs(change):.1f}% {'lower' if change < 0 else 'higher'})"
    )


def not_learning_findings(
    run: Run, detector: str, skip: set[str], train_reported: bool
) -> list[Finding]:
    """Plateau's eval-side findings: every eval quality metric not in `skip` that never
    improved while the train loss did not fall, when it sits at a chance level, or when
    the train loss, logged from the first evaluation on or before, did not fall either
    and plateau has not already warned about it (`train_reported`: the eval would only
    repeat that finding)."""
    train = run.metrics.get(names.TRAIN_LOSS)
    findings = []
    for metric in sorted(run.metrics):
        if metric in skip or not is_quality_metric(metric):
            continue
        stall = never_improved(run, metric)
        if stall is None or _got_worse(stall):
            continue  # a degradation is overfitting's or divergence's, not "not learning"
        x, _ = stats.finite_xy(run.metrics[metric].steps, run.metrics[metric].values)
        trend = train_trend(train, x, 0, 0.05)
        if train_fell(trend):
            continue  # the overfitting detector's (no generalisation)
        train_x = stats.finite_xy(train.steps, train.values)[0] if train is not None else x[:0]
        train_flat_from_start = (
            trend.start is not None
            and trend.end is not None
            and train_x.size > 0
            and float(train_x[0]) <= stall.first_step
            and float(train_x[0]) <= LATE_START * float(train_x[-1])
            and trend.end.value > (1 - MIN_EFFECT) * trend.start.value
        )
        if not stall.no_skill and (train_reported or not train_flat_from_start):
            continue
        findings.append(_not_learning_finding(detector, stall, trend))
    return findings


def _got_worse(stall: EvalStall) -> bool:
    """The later half's median `MIN_EFFECT` (5%) of the scale worse than the first
    evaluation: the eval did not stand still, it degraded (an eval loss that rose 87%
    after a train-loss climb is not a model that never learned)."""
    sign = -1.0 if higher_is_better(stall.metric) else 1.0
    return sign * (stall.later_median - stall.first) >= MIN_EFFECT * stall.scale


def _level_clauses(stall: EvalStall) -> str:
    """The chance-level and most-wrong clauses, each after a space ("" when neither)."""
    return "".join(" " + clause for clause in (stall.chance, stall.most_wrong) if clause)


def _not_learning_finding(detector: str, stall: EvalStall, trend: TrainTrend) -> Finding:
    message = stall_text(stall) + _level_clauses(stall)
    message += f" Meanwhile {train_words(trend)}."
    if stall.first_step > 0:
        message += (
            f" The first evaluation is at step {stall.first_step}: any improvement before it "
            "is not in this log, so this says the model did not improve after it."
        )
    title = (
        f"{stall.metric} at chance level throughout (not learning)"
        if stall.chance
        else f"{stall.metric} {stall_words(stall)} (not learning)"
    )
    return _finding(detector, stall, title, message, NOT_LEARNING_FIXES)


def _finding(
    detector: str, stall: EvalStall, title: str, message: str, fixes: tuple[str, ...]
) -> Finding:
    """A warning over the stall's evaluations (both detectors' findings)."""
    return Finding(
        detector=detector,
        title=title,
        severity=Severity.WARNING,
        metric=stall.metric,
        step_start=stall.first_step,
        step_end=stall.last_step,
        message=message,
        evidence=stall_evidence(stall),
        fixes=fixes,
    )


def no_generalisation(
    run: Run, detector: str, metric: str, train: Series | None, name: str = names.TRAIN_LOSS
) -> Finding | None:
    """Overfitting's step 8: `metric` never improved on its first evaluation while the
    train loss fell, and its level (chance, most wrong) or its worsening says the model
    did not learn what carries over; None otherwise."""
    stall = never_improved(run, metric)
    if stall is None or not (stall.no_skill or stall.worse_from_first):
        return None
    x = stats.finite_xy(run.metrics[metric].steps, run.metrics[metric].values)[0]
    if train_fell(trend := train_trend(train, x, 0, 0.05, name)):
        return no_generalisation_finding(run, detector, stall, trend)
    return None


def no_generalisation_finding(
    run: Run, detector: str, stall: EvalStall, trend: TrainTrend
) -> Finding:
    """Overfitting's eval-side finding: the train loss fell, the eval never improved."""
    message = stall_text(stall) + _level_clauses(stall)
    message += (
        f" Meanwhile {train_words(trend)}: the model fits something in the training set "
        "that does not carry over to the eval set (memorising, training labels that do not "
        "match their inputs, a train/eval mismatch)."
    )
    if stall.first_step > 0:
        message += (
            f" The first evaluation is at step {stall.first_step}: what the model learned "
            "before it is not in this log; after it, training did not help the eval."
        )
    title = f"{stall.metric} {stall_words(stall)} while {trend.name} fell (no generalisation)"
    keep_best = keep_best_fix(run, stall.metric, stall.best_step, stall.best)
    regularise = "Regularise or shrink the model: weight decay, dropout, data augmentation"
    # A checkpoint mostly wrong is not worth keeping: the labels come first then.
    fixes = (
        (NOT_LEARNING_FIXES[0], regularise, keep_best)
        if stall.most_wrong
        else (keep_best, NOT_LEARNING_FIXES[0], regularise)
    )
    return _finding(detector, stall, title, message, fixes)


def stall_evidence(stall: EvalStall) -> dict[str, float | int | str]:
    return {
        "first_step": stall.first_step,
        "first_value": stall.first,
        "best_step": stall.best_step,
        "best_value": stall.best,
        "later_median": stall.later_median,
        "evaluations": stall.n,
        "eval_noise": stall.sigma,
        "scale": stall.scale,
        "chance_level": "yes" if stall.chance else "no",
        "last_step": stall.last_step,
        "last_value": stall.last,
        "most_wrong": "yes" if stall.most_wrong else "no",
    }


NOT_LEARNING_FIXES = (
    "Check that labels match inputs (a shuffled or misjoined label column gives "
    "chance-level loss forever) and that the eval set is labelled the same way.",
    "Check that the optimiser is given the model's parameters and that they require "
    "gradients; raise the learning rate (try 3-10x) if nothing is frozen.",
    "Overfit a single small batch first: if even that loss does not fall, the bug is in "
    "the model or loss code.",
)
