"""loss_floor: a training loss implausibly low very early (a heuristic, and labelled one)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import stats
from trainspotter.detectors.base import Abstain, Detector, Scope, fmt, scope_or_abstain
from trainspotter.model import Evidence, Finding, FloatArray, Run, Severity
from trainspotter.names import TRAIN_LOSS, is_eval, is_loss_like

NAME = "loss_floor"


@dataclass(frozen=True)
class LossFloorParams:
    """Parameters of the loss_floor detector (defaults explained in `LossFloorDetector`)."""

    early_fraction: float = 0.05
    """"Very early": the first 5% of the logged span (and at least the first 3 points)."""
    min_early_points: int = 3
    """The early window holds at least this many logged points after the first."""
    min_points: int = 8
    """Abstain on a loss with fewer finite points than this."""
    abs_floor: float = 1e-3
    """Rule A: an early loss at or below this..."""
    min_start_level: float = 0.5
    """...when the loss started at or above this (every rule): an untrained classifier's
    cross-entropy starts near ln(classes) >= ln 2 = 0.69; 0.5 leaves room for batch noise."""
    min_drop: float = 0.999
    """Rule B: an early loss that fell by this fraction of its starting level..."""
    drop_ceiling: float = 0.01
    """...to at most this absolute value."""


class LossFloorDetector(
    Detector,
    name=NAME,
    params=LossFloorParams,
    causal_rank=2,
    summary="Heuristic: train loss implausibly low early, or train and eval both ~0 (leakage?).",
):
    """A heuristic, not a statistical test: flags a training loss that is implausibly low
    very early in the run, the usual sign of label leakage or a bug in the loss.

    **What it finds.** A training loss that collapses towards zero within the first few
    percent of the run (rules A and B below), or a train loss and an eval loss that both
    reach ~0 (rule C). One finding per loss, a warning. No distribution-free test can say
    a loss is "too low" without knowing the task, so this is a rule of thumb about
    cross-entropy-scale losses, and its title and message say so.

    **Algorithm.** On the run's `train/loss` (or, without it, each non-eval loss), finite
    points only, at least `min_points` (8), else abstain. A loss whose name says it is a
    regression loss (`mse`, `mae`, `rmse`, `l1`, `l2`, `huber`, `smooth_l1`) is skipped.
    1. The start level is the first logged value or the median of the first 3 points,
       whichever is larger (a loss that collapses within two logged points still has its
       true start; a low first minibatch does not hide it). Every rule needs a start of at
       least `min_start_level` (0.5): the scale of an untrained classifier's
       cross-entropy, which starts near ln(classes) >= ln 2 = 0.69. A loss that starts
       lower is a regression loss (an MSE on normalised targets starts near their
       variance, and a good fit takes it to 1e-4 and below) or a model that already knew
       the task: reaching ~0 is then no evidence of a leak.
    2. The early window is the first `early_fraction` (5%) of the logged span, and at least
       the first `min_early_points` (3) points after the start. Its low is the minimum of
       a 3-point rolling median: a single lucky minibatch does not count.
    3. Flag when the early low is
       - (A) at or below `abs_floor` (1e-3): a cross-entropy of 1e-3 means the model gives the right
         answer probability 0.999 on average, within the first 5% of training; or
       - (B) at least a `min_drop` (99.9%, a thousand-fold) drop from the start level to
         at most `drop_ceiling` (0.01): e.g. a language model going from 10 to 0.01.
    4. Otherwise, at any point of the run: flag when (C) the train loss (3-point median)
       and an eval loss both reach `abs_floor` (1e-3). Memorising the training set
       drives the train loss to ~0 but not the loss on held-out data; a leak in the
       features (or eval samples that are also training samples) drives both.
    The finding spans, for A/B, from the first step to the step where the low
    was reached; for C from the first step below the floor to the end.

    **Defaults and why.** 5% of the run: real tasks take a good part of a run to fit their
    training set; a leak shows in the first few hundred steps. 1e-3 and the 0.5 start: an
    honest cross-entropy starts near ln(classes) (0.69 and up) and rarely gets within a
    factor 1000 of zero that fast; regression losses that start below 0.5 (the usual MSE on
    normalised targets) fit to 1e-5 honestly and are out of scope. The thousand-fold rule
    with a 0.01 ceiling catches large-vocabulary losses without catching a regression loss
    that merely falls from a huge initial value (1e4 -> 10).

    **False-positive modes.** A regression loss whose name does not say so and that
    starts at 0.5 or above (unnormalised targets) and reaches 1e-3 fast, or whose train
    and eval losses both fit to below 1e-3 (rule C): flagged, wrongly. A regression loss
    below 0.5 at the start, or named as one, is never flagged, so a leak in a regression
    task is missed. A pretrained model fine-tuned on easy or
    near-duplicate data can really reach ~0 within a few percent of the run. Synthetic
    toy tasks (memorising a handful of samples) do too. In those cases silence this
    detector in the config. A log that starts mid-run has its "early" part elsewhere.

    **Example.** `examples/label_leak/trainer_state.json`: a warning from step 479, where
    train/loss and eval/loss both fell below 1e-3 (the one-hot label appended to every
    input, train and eval alike: rule C). Silent on `examples/healthy/trainer_state.json`.
    """

    def scope(self, run: Run, params: LossFloorParams) -> Scope | Abstain:
        """The metrics `detect` reads, or why there are none (cheap: names only)."""
        trained = [TRAIN_LOSS] if TRAIN_LOSS in run.metrics else run.metrics
        losses = [n for n in trained if is_loss_like(n) and not is_eval(n)]
        held_out = [n for n in run.metrics if is_loss_like(n) and is_eval(n)] if losses else []
        return scope_or_abstain([*losses, *held_out], "no training loss metric")

    def detect(self, run: Run, params: LossFloorParams) -> list[Finding]:
        """At most one finding per training loss."""
        if TRAIN_LOSS in run.metrics:
            names = [TRAIN_LOSS]
        else:
            names = [n for n in run.metrics if is_loss_like(n) and not is_eval(n)]
        names = [n for n in names if not _says_regression(n)]
        eval_losses = [n for n in run.metrics if is_loss_like(n) and is_eval(n)]
        findings = []
        for name in names:
            loss = _judgeable(run, name, params)
            if loss is None:
                continue
            finding = _check_early(loss, params) or _check_held_out(run, loss, eval_losses, params)
            if finding is not None:
                findings.append(finding)
        return findings


# Name parts of regression losses: an MSE or L1 loss has no cross-entropy scale, and reaching
# ~0 is what a well-fitted regression does.
_REGRESSION_WORDS = frozenset({"mse", "mae", "rmse", "l1", "l2", "huber", "smoothl1", "regression"})


def _says_regression(name: str) -> bool:
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    return bool(words & _REGRESSION_WORDS) or "smooth_l1" in name.lower()


@dataclass(frozen=True)
class _Loss:
    """A training loss the rules can judge (algorithm step 1)."""

    name: str
    x: FloatArray
    y: FloatArray
    """Its finite points, at least `min_points` of them."""
    start_level: float
    """The first value or the median of the first 3 points, whichever is larger; at least
    `min_start_level`."""


def _judgeable(run: Run, name: str, params: LossFloorParams) -> _Loss | None:
    series = run.metrics[name]
    x, y = stats.finite_xy(series.steps, series.values)
    if y.size < params.min_points:
        return None
    start_level = max(float(y[0]), float(np.median(y[:3])))
    if start_level < params.min_start_level:
        return None  # not an untrained classifier's cross-entropy: no scale to judge by
    return _Loss(name, x, y, start_level)


def _check_early(loss: _Loss, params: LossFloorParams) -> Finding | None:
    """Rules A and B: the early low (3-point median) at or below `abs_floor`, or a
    thousand-fold drop from the start to at most `drop_ceiling`."""
    name, x, y, start_level = loss.name, loss.x, loss.y, loss.start_level
    cutoff = x[0] + params.early_fraction * (x[-1] - x[0])
    n_early = max(int(np.searchsorted(x, cutoff, side="right")), params.min_early_points + 1)
    smooth = stats.rolling_median(y[: n_early + 1], 3, center=True)[:n_early]
    low_index = int(np.argmin(smooth))
    low = float(smooth[low_index])
    rule_a = low <= params.abs_floor
    drop = 1.0 - low / start_level
    rule_b = drop >= params.min_drop and low <= params.drop_ceiling
    if not (rule_a or rule_b):
        return None
    low_step = int(x[low_index])
    share = 100 * stats.span_fraction(x, low_step)
    rule = (
        f"at or below {fmt(params.abs_floor)} from a start of {fmt(start_level)}"
        if rule_a
        else f"a {fmt(100 * drop)}% drop from {fmt(start_level)}"
    )
    message = (
        f"Heuristic: {name} reached {fmt(low)} (3-point median) by step {low_step}, "
        f"{fmt(share)}% into the run ({rule}). An honest cross-entropy-scale loss rarely "
        "gets this low this early; label leakage or a loss bug usually does. Check before "
        "trusting the run; if the task really is that easy, silence loss_floor in the config."
    )
    title = f"Heuristic: {name} implausibly low early ({fmt(low)} by step {low_step})"
    evidence: Evidence = {
        "start_level": start_level,
        "early_low": low,
        "early_low_step": low_step,
        "fraction_of_run": round(share / 100, 4),
        "drop_fraction": drop,
        "rule": "absolute floor" if rule_a else "thousand-fold drop",
        "final_level": float(np.median(y[-3:])),
    }
    return _warning(name, (int(x[0]), low_step), title, message, evidence)


def _check_held_out(
    run: Run, loss: _Loss, eval_losses: list[str], params: LossFloorParams
) -> Finding | None:
    """Rule C: train and eval loss both at or below `abs_floor`, from a cross-entropy-scale
    start. Memorising the training set drives the train loss to ~0 but not the eval loss;
    a leak in the features does both."""
    if not eval_losses:
        return None
    name, x, start_level = loss.name, loss.x, loss.start_level
    smooth = stats.rolling_median(loss.y, 3, center=True)
    below = np.flatnonzero(smooth <= params.abs_floor)
    if below.size == 0:
        return None
    best: tuple[float, int, str] | None = None
    for eval_name in eval_losses:
        ex, ey = stats.finite_xy(run.metrics[eval_name].steps, run.metrics[eval_name].values)
        if ey.size and float(ey.min()) <= params.abs_floor:
            i = int(np.argmin(ey))
            if best is None or float(ey[i]) < best[0]:
                best = (float(ey[i]), int(ex[i]), eval_name)
    if best is None:
        return None
    eval_low, eval_step, eval_name = best
    first_low = int(x[below[0]])
    train_low = float(smooth.min())
    message = (
        f"Heuristic: {name} fell to {fmt(train_low)} (3-point median; at or below "
        f"{fmt(params.abs_floor)} from step {first_low}) and {eval_name} to "
        f"{fmt(eval_low)} at step {eval_step}, from a start of {fmt(start_level)}. "
        "Memorising the training set drives the train loss to ~0 but not the loss on "
        "held-out data; both this low is the signature of label leakage (a feature that "
        "encodes the target, or eval samples that are also in the training set). If the "
        "task really is that easy, silence loss_floor in the config."
    )
    title = f"Heuristic: {name} and {eval_name} implausibly low (label leakage?)"
    evidence: Evidence = {
        "start_level": start_level,
        "train_low": train_low,
        "train_first_step_below_floor": first_low,
        "eval_metric": eval_name,
        "eval_low": eval_low,
        "eval_low_step": eval_step,
        "rule": "train and eval below the floor",
    }
    return _warning(name, (first_low, int(x[-1])), title, message, evidence)


def _warning(
    name: str, steps: tuple[int, int], title: str, message: str, evidence: Evidence
) -> Finding:
    """A loss_floor finding: always a warning (a heuristic), always the same fixes."""
    return Finding(
        detector=NAME,
        title=title,
        severity=Severity.WARNING,
        metric=name,
        step_start=steps[0],
        step_end=steps[1],
        message=message,
        evidence=evidence,
        fixes=_FIXES,
    )


_FIXES = (
    "Look for label leakage: the target, or a feature computed from it, among the inputs; "
    "duplicates shared by the train and eval sets.",
    "Check the loss code: labels all masked out (e.g. -100) so the loss averages over "
    "nothing, a reduction dividing by the wrong count, the loss computed against the inputs "
    "instead of the targets.",
    "Evaluate on a held-out set built independently of the training pipeline: a leak shows "
    "as an eval score too good to be true.",
)


DETECTOR = LossFloorDetector()
