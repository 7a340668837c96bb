"""lr_schedule case 4: an LR at ~0 long before the end of the run (a staircase of cuts,
as ReduceLROnPlateau makes, is info)."""

from __future__ import annotations

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.lr_schedule.curve import Curve
from trainspotter.detectors.lr_schedule.params import NAME
from trainspotter.model import Evidence, Finding, Series, Severity


def zero_too_early(curve: Curve) -> Finding | None:
    p = curve.params
    zero_step = stats.lr_zero_step(curve.x, curve.lr, p.near_zero_fraction)
    if zero_step is None or curve.span <= 0:
        return None
    last = float(curve.x[-1])
    share = (last - zero_step) / curve.span
    if share < p.min_zero_fraction:
        return None
    level = float(curve.lr[int(np.searchsorted(curve.x, zero_step))])
    message = (
        f"The LR fell below {p.near_zero_fraction:.0%} of its peak {curve.peak:.3g} at step "
        f"{zero_step} ({level:.3g}) and stayed there to the last logged step "
        f"{int(last)}: the last {share:.0%} of the run barely trains."
    )
    loss: Series | None = curve.run.metrics.get(names.TRAIN_LOSS)
    evidence: Evidence = {
        "zero_step": zero_step,
        "lr_at_zero_step": level,
        "peak_lr": curve.peak,
        "share_of_run": share,
    }
    if loss is not None:
        window_start = zero_step - 0.2 * curve.span
        lead_in = stats.change_over(loss.steps, loss.values, window_start, zero_step)
        if lead_in is not None and lead_in.falling():
            # The window as logged: it cannot reach back before the loss's first step.
            x, _ = stats.finite_xy(loss.steps, loss.values)
            first = float(x[int(np.searchsorted(x, window_start, side="left"))])
            message += (
                f" {names.TRAIN_LOSS} was still falling when it did ({lead_in.start_level:.4g}"
                f" -> {lead_in.end_level:.4g} over the preceding {zero_step - first:.0f}"
                " steps)."
            )
            evidence["loss_still_falling"] = "yes"
    cuts = _staircase_cuts(curve, zero_step)
    severity = Severity.WARNING
    if cuts >= 3:
        # ReduceLROnPlateau (or a step schedule) reaching its floor cut by cut, each cut
        # after a stretch at a constant LR: the schedule answering a levelling loss, not
        # a horizon that is too short. Worth knowing, not a bug on this evidence.
        severity = Severity.INFO
        message += (
            f" It got there in {cuts} cuts between flat stretches, as ReduceLROnPlateau "
            "does when the loss levels off (or a step schedule with early milestones): "
            "the later steps could be saved, or the cuts made smaller."
        )
        evidence["cuts"] = cuts
    return Finding(
        detector=NAME,
        title=f"lr at ~0 from step {zero_step}, {share:.0%} of the run before its end",
        severity=severity,
        metric=names.LR,
        step_start=zero_step,
        step_end=int(last),
        message=message,
        evidence=evidence,
        fixes=(
            "Match the schedule's horizon to the run: set the decay length (T_max, "
            "num_training_steps, milestones) from the real number of optimiser steps",
            "If the LR was cut by a step or plateau schedule, use fewer or smaller cuts "
            "(gamma 0.1 -> 0.3), or stop the run where it stops learning",
        ),
    )


def _staircase_cuts(curve: Curve, zero_step: int) -> int:
    """The cuts by which the LR reached ~0, when it got there as a staircase (each down
    move a cut of >= 1.5x, at least as many flat moves as down moves), else 0."""
    end = int(np.searchsorted(curve.x, zero_step)) + 1
    top = int(np.argmax(curve.lr[:end]))
    moves = curve.direction[top : end - 1]
    with np.errstate(all="ignore"):
        ratio = curve.lr[top : end - 1] / curve.lr[top + 1 : end]
    down = moves < 0
    if not down.any() or np.any(ratio[down] < 1.5):
        return 0
    if int(np.sum(moves == 0)) < int(down.sum()):
        return 0
    return int(down.sum())
