"""Spikes too early for a baseline: one point an order of magnitude above both of its
neighbours, which agree with each other.

The trailing-window rule (`scoring`) needs `min_baseline` earlier points to estimate the
noise a jump is measured against, so an eval loss that jumps 25x at its second evaluation
and is back at the third goes unjudged. A jump that large needs no noise estimate: one
logged point at least `neighbour_ratio` x both the point before and the point after it,
where those two agree within `neighbour_agreement` x, is off the curve whatever the curve's
noise. It is judged only where the trailing-window rule cannot judge (the first
`min_baseline` points of an eval metric; every point of a metric with fewer than
`min_points`), says what it rests on, and is a warning.
"""

from __future__ import annotations

import math

import numpy as np

from trainspotter.detectors import loss_scale
from trainspotter.detectors.base import fmt
from trainspotter.detectors.spikes.message import spike_fixes
from trainspotter.detectors.spikes.params import NAME, SpikesParams
from trainspotter.detectors.spikes.scoring import Curve
from trainspotter.model import Evidence, Finding, Run, Severity
from trainspotter.names import TRAIN_LOSS, is_eval


def unjudged_points(name: str, n: int, params: SpikesParams) -> int:
    """How many leading points of a metric with `n` finite points the trailing-window rule
    does not judge and this rule may: all of a short metric; the first `min_baseline` of an
    eval metric (a train loss's first logs are its fast, noisy start: left alone)."""
    if n < max(params.min_points, params.min_baseline + 1):
        return n
    return params.min_baseline if is_eval(name) else 0


def neighbour_spikes(
    name: str, run: Run, curve: Curve, upto: int, params: SpikesParams
) -> list[Finding]:
    """A finding per point among the first `upto` that stands `neighbour_ratio` x above
    both neighbours (which agree within `neighbour_agreement` x) and is large in absolute
    terms (`_large`)."""
    raw = curve.raw
    found = []
    for i in range(1, min(upto, raw.size - 1)):
        before, peak, after = float(raw[i - 1]), float(raw[i]), float(raw[i + 1])
        low, high = min(before, after), max(before, after)
        if low <= 0 or high > params.neighbour_agreement * low:
            continue
        if peak < params.neighbour_ratio * high or not _large(name, run, curve, i, params):
            continue
        found.append(_finding(name, run, curve, i, params))
    return found


def _large(name: str, run: Run, curve: Curve, i: int, params: SpikesParams) -> bool:
    """The jump is large in absolute terms (`loss_scale`): it undoes at least
    `min_progress_share` of the progress from the run's reference level down to the
    neighbours, and, when the neighbours sit below `near_zero_fraction` of that reference
    (a memorised or near-perfect metric, where one example moves the loss by orders of
    magnitude), it climbs above the reference itself. The reference is the highest value
    the metric logged before the point and, for an eval metric, the highest 5-point median
    of the train loss up to the point's step (the same loss on the same model: it shows
    how high the loss started when the eval curve begins after the fast fall; what it did
    after the point, a later blow-up say, says nothing about the point)."""
    reference = float(np.max(curve.raw[:i]))
    train = run.metrics.get(TRAIN_LOSS)
    if is_eval(name) and train is not None:
        upto = int(np.searchsorted(train.steps, int(curve.steps[i]), side="right"))
        train_reference = loss_scale.reference_level(train.values, upto)
        if math.isfinite(train_reference):
            reference = max(reference, train_reference)
    level = float(max(curve.raw[i - 1], curve.raw[i + 1]))
    peak = float(curve.raw[i])
    if not loss_scale.undoes_progress(peak, level, reference, params.min_progress_share):
        return False
    return not (
        loss_scale.near_zero(level, reference, params.near_zero_fraction) and peak < reference
    )


def _finding(name: str, run: Run, curve: Curve, i: int, params: SpikesParams) -> Finding:
    steps, raw = curve.steps, curve.raw
    step, before_step, after_step = int(steps[i]), int(steps[i - 1]), int(steps[i + 1])
    before, peak, after = float(raw[i - 1]), float(raw[i]), float(raw[i + 1])
    level = max(before, after)
    points = "evaluations" if is_eval(name) else "logged points"
    earlier = i
    baseline_note = (
        f"too few earlier {points} ({earlier}) for the noise baseline of the usual rule "
        f"({params.min_baseline})"
        if earlier < params.min_baseline
        else f"the metric has only {raw.size} {points}, too few for a noise baseline"
    )
    message = (
        f"{name} jumped to {fmt(peak)} at step {step}, {fmt(peak / level)}x the higher of its "
        f"neighbouring {points} ({fmt(before)} at step {before_step} and {fmt(after)} at step "
        f"{after_step}, which agree with each other), and is back at the next one. This "
        f"rests on 2 neighbouring {points}: {baseline_note}."
    )
    evidence: Evidence = {
        "rule": "neighbours",
        "level_before": before,
        "level_before_step": before_step,
        "peak_value": peak,
        "peak_step": step,
        "level_after": after,
        "recovered_at_step": after_step,
        "ratio_to_baseline": peak / level,
        "baseline_points": 2,
        "points_before": earlier,
        "points_in_episode": 1,
        "recovered": "yes",
    }
    return Finding(
        detector=NAME,
        title=f"{name} spiked at step {step} (at least {fmt(peak / level)}x both neighbours) "
        "and came back at the next",
        severity=Severity.WARNING,
        metric=name,
        step_start=step,
        step_end=step,
        message=message,
        evidence=evidence,
        fixes=spike_fixes(name, step, Severity.WARNING, first_logged=int(steps[0]), run=run),
    )
