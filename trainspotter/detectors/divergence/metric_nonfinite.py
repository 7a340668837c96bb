"""divergence, non-finite metrics: a metric other than a loss or a gradient (Dice, F1,
accuracy, perplexity, the LR) that turns NaN/Inf after it had been finite.

A loss or gradient going non-finite is `nonfinite`'s; this module finds the same in every
other metric the run logs, except timing and throughput (a samples/second of +Inf at a
first step timed as 0 s is a clock artefact, not the model). Such a metric beside a finite
loss is a metric bug (0/0 on an empty mask or class) or a partial blow-up the loss hides: a
warning, since training may be fine. When a loss is non-finite over the same steps, the
metric is named in the loss's finding instead (one incident, one finding).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from trainspotter.detectors import stats
from trainspotter.detectors.base import fmt
from trainspotter.detectors.divergence.nonfinite import Episode, is_gradient
from trainspotter.detectors.divergence.params import NAME, DivergenceParams
from trainspotter.model import Evidence, Finding, Run, Series, Severity
from trainspotter.names import EPOCH, STEP_TIME, THROUGHPUT, is_eval, is_loss_like

_TIMING = re.compile(r"time|runtime|per_sec|per_second|_per_|/s$|speed|flos|memory|(^|[_/])eta$")
"""Timing, throughput and bookkeeping names: +Inf there is a zero-length timer, not a model."""


def watched(name: str) -> bool:
    """A metric this rule reads: not a loss or gradient (`nonfinite` reads those), not
    timing, throughput or bookkeeping."""
    if is_loss_like(name) or is_gradient(name) or name in (STEP_TIME, THROUGHPUT, EPOCH):
        return False
    return _TIMING.search(name.lower()) is None


@dataclass(frozen=True)
class MetricBreak:
    """One metric that turned non-finite after it had been finite."""

    metric: str
    series: Series
    onset: int
    """Index of the first non-finite point of the first episode of at least
    `metric_min_nonfinite_points`."""

    @property
    def onset_step(self) -> int:
        return int(self.series.steps[self.onset])

    @property
    def last_step(self) -> int:
        return int(self.series.steps[-1])

    def episode(self) -> Episode:
        """The stretch from the onset to the metric's last non-finite point, as an episode
        `nonfinite.incidents` can group with a loss's."""
        last = int(np.flatnonzero(~self.series.finite)[-1])
        return Episode(self.metric, self.onset, last, self.series)


def metric_break(name: str, series: Series, params: DivergenceParams) -> MetricBreak | None:
    """The first stretch where `series` turned non-finite after its first finite value and
    stayed so for at least `metric_min_nonfinite_points` points (non-finite points up to
    `merge_gap` finite points apart count as one stretch); None when there is none."""
    finite = series.finite
    if not bool(finite.any()) or bool(finite.all()):
        return None
    first_finite = int(np.argmax(finite))
    after = ~finite
    after[:first_finite] = False  # not computed yet: a leading NaN is no break
    grid = _placeholder_grid(finite)
    if grid is not None:
        # NaN written for "not computed at this log": only the scheduled points count, and
        # every one after the last finite value is non-finite.
        onset, gap = grid
        missed = len(range(onset, finite.size, gap))
        return (
            MetricBreak(name, series, onset)
            if missed >= params.metric_min_nonfinite_points
            else None
        )
    for start, end in stats.episodes(after, max_gap=params.merge_gap):
        if int(np.count_nonzero(after[start : end + 1])) >= params.metric_min_nonfinite_points:
            return MetricBreak(name, series, start)
    return None


def _placeholder_grid(finite: npt.NDArray[np.bool_]) -> tuple[int, int] | None:
    """When the finite points fall every k-th logged point (k > 1, at least 3 of them) and
    every point between them is non-finite, the logger writes NaN for "not computed at this
    log" (an eval metric in a row of every step): the index of the first scheduled point
    after the last finite one (past the end when the log ends before it) and k; None
    otherwise."""
    at = np.flatnonzero(finite)
    if at.size < 3:
        return None
    gaps = np.diff(at)
    gap = int(gaps[0])
    if int(gaps.min()) != int(gaps.max()) or gap < 2:
        return None
    return int(at[-1]) + gap, gap


def _companion_losses(run: Run, metric: str) -> list[str]:
    """The losses that say whether the model itself blew up: the same side's (eval for an
    eval metric, train otherwise), or every loss when that side has none."""
    losses = [n for n in run.metrics if is_loss_like(n)]
    same_side = [n for n in losses if is_eval(n) == is_eval(metric)]
    return same_side or losses


def _nonfinite_between(series: Series, lo: int, hi: int) -> int:
    inside = (series.steps >= lo) & (series.steps <= hi)
    return int(np.count_nonzero(inside & ~series.finite))


def metric_finding(run: Run, found: MetricBreak) -> Finding:
    """A warning: the metric, its first non-finite step, how many of the points from there
    on are non-finite, and whether the loss stayed finite over them."""
    series, onset = found.series, found.onset
    values = series.values
    first = float(values[onset])
    kind = "NaN" if math.isnan(first) else ("+Inf" if first > 0 else "-Inf")
    tail = values[onset:]
    bad = int(np.count_nonzero(~np.isfinite(tail)))
    points = int(tail.size)
    before = np.flatnonzero(np.isfinite(values[:onset]))
    last_i = int(before[-1])
    last_value, last_step = float(values[last_i]), int(series.steps[last_i])
    losses = _companion_losses(run, found.metric)
    loss_text, loss_finite = _loss_sentence(run, losses, found.onset_step, found.last_step)
    evidence: Evidence = {
        "first_nonfinite_step": found.onset_step,
        "first_value": kind,
        "nonfinite_points": bad,
        "points_from_first_nonfinite": points,
        "until_end_of_log": "yes" if not bool(np.isfinite(values[-1])) else "no",
        "last_finite_value": last_value,
        "last_finite_step": last_step,
        "loss_stayed_finite": "yes" if loss_finite else ("no" if losses else "no loss logged"),
    }
    if losses:
        evidence["loss_metrics"] = ", ".join(losses)
    share = f"all {points}" if bad == points else f"{bad} of the {points}"
    span = (
        f"{share} logged points from step {found.onset_step} to the end of the log (step "
        f"{found.last_step}) are non-finite"
    )
    message = (
        f"{found.metric} is {kind} at step {found.onset_step} after being finite (last: "
        f"{fmt(last_value)} at step {last_step}); {span}. {loss_text}"
    )
    where = "eval" if is_eval(found.metric) else "train"
    return Finding(
        detector=NAME,
        title=f"{found.metric} became {kind} at step {found.onset_step}"
        + (" while the loss stayed finite" if loss_finite else ""),
        severity=Severity.WARNING,
        metric=found.metric,
        step_start=found.onset_step,
        step_end=found.last_step,
        message=message,
        evidence=evidence,
        fixes=(
            f"Look for a 0/0 or log(0) in how {found.metric} is computed: a score over an "
            "empty mask or an absent class (Dice, IoU, F1, precision with no positive "
            "prediction) is 0/0; add a smoothing term or define the empty case (e.g. "
            "scikit-learn's zero_division).",
            "If it averages per-batch values, accumulate counts over the whole epoch "
            "(torchmetrics does) so that one empty batch cannot blank the epoch's value.",
            f"Check the {where} predictions for NaN/Inf on the affected batches: a loss "
            "computed from logits with a stable formula can stay finite while the "
            "probabilities overflow.",
        ),
    )


def _loss_sentence(run: Run, losses: list[str], lo: int, hi: int) -> tuple[str, bool]:
    """What the losses did over steps lo..hi, and whether all of them stayed finite."""
    if not losses:
        return "No loss is logged to tell a metric bug from a blow-up.", False
    broken = [(n, _nonfinite_between(run.metrics[n], lo, hi)) for n in losses]
    broken = [(n, k) for n, k in broken if k]
    if not broken:
        names = ", ".join(losses)
        verb = "stayed" if len(losses) == 1 else "all stayed"
        return (
            f"{names} {verb} finite over those steps: a metric that breaks while the loss "
            "does not is most likely a bug in the metric (or a blow-up on some inputs that "
            "the loss hides), not a diverged run.",
            True,
        )
    said = "; ".join(f"{n} is non-finite at {k} of them" for n, k in broken)
    return f"{said}.", False
