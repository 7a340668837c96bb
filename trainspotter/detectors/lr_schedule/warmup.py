"""lr_schedule cases 1 and 5: a missing warmup (with the early instability it lets through),
and a warmup that never ends."""

from __future__ import annotations

import numpy as np

from trainspotter import names
from trainspotter.detectors import idioms, stats
from trainspotter.detectors.lr_schedule.curve import Curve, Rise
from trainspotter.detectors.lr_schedule.params import NAME
from trainspotter.model import Finding, Series, Severity


def endless_warmup(curve: Curve, warmup: Rise) -> Finding | None:
    p = curve.params
    top_step = curve.x[warmup.high]
    if top_step - curve.x[0] < p.endless_warmup_fraction * curve.span:
        return None
    if (
        warmup.high < curve.lr.size - 1
        and float(curve.lr[warmup.high :].min()) < 0.9 * (curve.lr[warmup.high])
    ):
        return None  # it did turn down at the very end
    start = float(curve.lr[warmup.low])
    if start > 0 and curve.lr[warmup.high] / start < 2:
        return None
    planned = curve.run.meta.get("max_steps")
    if isinstance(planned, int | float) and planned > 1.1 * float(curve.x[-1]):
        return None  # the run is still in progress; its warmup may yet end
    if curve.run.meta.get("in_progress") and not isinstance(planned, int | float):
        return None  # a log still growing (watch) with no known length: it may yet end
    first_step, last_step = int(curve.x[0]), int(curve.x[-1])
    message = (
        f"The LR rose from {start:.3g} at step {int(curve.x[warmup.low])} to "
        f"{curve.lr[warmup.high]:.3g} at step {int(top_step)} and never came down: it was "
        f"still rising {100 * (top_step - curve.x[0]) / curve.span:.0f}% of the way "
        f"through the log (steps {first_step}-{last_step}, {curve.lr.size} logged values)."
    )
    if isinstance(planned, int | float):
        message += (
            f" The run was planned for {int(planned)} steps and the log reaches them: the "
            "warmup never ended, so the run trained at a lower LR than planned and never "
            "annealed."
        )
    else:
        message += (
            " The log does not say how long the run was planned to be, so this is either "
            "a warmup as long as the run (trained at a lower LR than planned, never "
            "annealed) or a run stopped before its warmup ended."
        )
    return Finding(
        detector=NAME,
        title=(
            "lr rises for the whole run: the warmup never ended"
            if isinstance(planned, int | float)
            else "lr rises for the whole log: the warmup never ended within it"
        ),
        severity=Severity.WARNING,
        metric=names.LR,
        step_start=first_step,
        step_end=last_step,
        message=message,
        evidence={
            "start_lr": start,
            "end_lr": float(curve.lr[warmup.high]),
            "rising_until_step": int(top_step),
            "rising_fraction": float((top_step - curve.x[0]) / curve.span),
        },
        fixes=(
            "Make warmup_steps (or warmup_ratio x total steps) much smaller than the run: "
            "1-10% of it; check that it is counted in optimiser steps, not samples",
            "Check max_steps / num_train_epochs: a schedule built for a longer run stops "
            "mid-warmup when training is cut short",
        ),
    )


def missing_warmup(curve: Curve) -> Finding | None:
    p = curve.params
    run_start, run_end = curve.run.step_span() or (int(curve.x[0]), int(curve.x[-1]))
    if curve.x[0] - run_start > p.early_fraction * max(run_end - run_start, 1):
        return None  # the LR's first log comes too late to say what it started at
    loss = curve.run.metrics.get(names.TRAIN_LOSS)
    if loss is None or len(loss) < p.min_early_points:
        return None
    found = _early_instability(curve, loss)
    if found is None:
        return None
    unstable, peak_step = found
    early_span = int(
        min(p.early_fraction * float(loss.steps[-1] - loss.steps[0]), p.early_max_steps)
    )
    first_lr = float(curve.lr[0])
    message = (
        f"The LR starts at {first_lr:.3g} at step {int(curve.x[0])}, already "
        f"{first_lr / curve.peak:.0%} of its peak {curve.peak:.3g}: there is no warmup. "
        f"In the first {early_span} steps {unstable}, the "
        "instability a warmup prevents (Adam-type optimisers' early updates are "
        "largest when their second-moment estimates are still tiny)."
    )
    return Finding(
        detector=NAME,
        title=f"no LR warmup, and {names.TRAIN_LOSS} was unstable in the first steps",
        severity=Severity.WARNING,
        metric=names.LR,
        step_start=int(curve.x[0]),
        step_end=max(peak_step, int(curve.x[0])),
        message=message,
        evidence={
            "first_lr": first_lr,
            "peak_lr": curve.peak,
            "first_lr_step": int(curve.x[0]),
            "instability_step": peak_step,
            "instability": unstable,
        },
        fixes=(
            idioms.warmup_fix(curve.run),
            "Lower the peak LR by 3-10x",
            idioms.clipping_fix(curve.run),
        ),
    )


def _early_instability(curve: Curve, loss: Series) -> tuple[str, int] | None:
    """How the train loss was unstable in the early window (a sentence and the step),
    or None. Unstable: a non-finite value, or a value `instability_rise` above the
    starting level. An untrained model's loss is the highest a healthy run logs
    (and varies little from batch to batch), so climbing far above it right after
    training starts is the update overshooting, not minibatch noise."""
    p = curve.params
    steps, values = loss.steps, loss.values
    early_end = steps[0] + min(
        p.early_fraction * float(steps[-1] - steps[0]), float(p.early_max_steps)
    )
    count = max(int(np.searchsorted(steps, early_end, side="right")), p.min_early_points)
    early_steps, early = steps[:count], values[:count]
    bad = np.flatnonzero(~np.isfinite(early))
    if bad.size:
        step = int(early_steps[bad[0]])
        return f"{names.TRAIN_LOSS} turned non-finite at step {step}", step
    # The starting level: the first logged loss, or the median of the window's first
    # quarter if higher (a first minibatch that happened to be easy is no baseline).
    initial = max(float(early[0]), float(np.median(early[: max(count // 4, 1)])))
    worst = 1 + int(np.argmax(early[1:]))
    peak = float(early[worst])
    step = int(early_steps[worst])
    if initial <= 0:
        if peak - initial < p.instability_rise * stats.level_scale(values):
            return None
        return (
            f"{names.TRAIN_LOSS} climbed from {initial:.4g} to {peak:.4g} at step {step}",
            step,
        )
    if peak >= (1 + p.instability_rise) * initial:
        return (
            f"{names.TRAIN_LOSS} climbed from its starting level {initial:.4g} to "
            f"{peak:.4g} ({peak / initial:.1f}x) at step {step}",
            step,
        )
    # A sustained rise: two of three consecutive points well above the first logged
    # loss (the noise bar, not a median baseline, guards against an easy first batch:
    # a median would absorb the very rise it looks for).
    initial = float(early[0])
    held = stats.rolling_median(early, 3, center=True)[1:-1]
    if held.size == 0:
        return None
    top = 1 + int(np.argmax(held))
    excess = float(held[top - 1]) - initial
    # Noise on a log scale: relative point-to-point jitter, the same early and late.
    positive = values[np.isfinite(values) & (values > 0)]
    noise = stats.noise_scale(np.log(positive)) if positive.size >= 3 else np.inf
    rise = float(np.log1p(excess / initial))
    if excess < p.sustained_rise * initial or rise < p.sustained_noise_factor * noise:
        return None
    below = np.flatnonzero(early[top:] <= initial)
    back = (
        f" and stayed above its start until step {int(early_steps[top + int(below[0])])}"
        if below.size
        else f" and was still above its start at step {int(early_steps[-1])}"
    )
    return (
        f"{names.TRAIN_LOSS} rose from {initial:.4g} at step {int(early_steps[0])} to "
        f"{peak:.4g} at step {step} ({peak / initial:.2f}x){back} (median of steps "
        f"{int(early_steps[top - 1])}-{int(early_steps[top + 1])}: {initial + excess:.4g})",
        step,
    )
