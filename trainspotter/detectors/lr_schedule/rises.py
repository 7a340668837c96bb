"""lr_schedule cases 2, 3 and 6: an LR that rises again after its peak or jumps (up, or a
cliff down), told apart from deliberate warm restarts and cycles, and a decay stepped past
its end (the climb back retraces the decay)."""

from __future__ import annotations

import numpy as np

from trainspotter import names
from trainspotter.detectors.lr_schedule.curve import Curve, Rise
from trainspotter.detectors.lr_schedule.params import NAME
from trainspotter.model import Evidence, Finding, Severity

FIXES_JUMP = (
    "Check how the run was resumed: load the scheduler's state with the checkpoint "
    "(transformers: resume_from_checkpoint=...; PyTorch: scheduler.load_state_dict)",
    "Check for code that sets param_group['lr'] directly, or a second scheduler on the same "
    "optimiser",
    "If this change is deliberate (a new training stage), suppress it in .trainspotter.yml",
)


def re_rise_findings(curve: Curve, warmup: Rise | None, re_rises: list[Rise]) -> list[Finding]:
    if not re_rises:
        return []
    top_points = [warmup.high if warmup else 0] + [r.high for r in re_rises]
    tops = [float(curve.lr[i]) for i in top_points]
    retraced: list[int] = []
    if not _starts_cyclic(curve, warmup, re_rises[0]):
        retraced = [i for i, r in enumerate(re_rises) if _retraces_decay(curve, r, top_points[i])]
    found: list[Finding] = []
    if retraced:
        found.append(_past_end_finding(curve, [(re_rises[i], top_points[i]) for i in retraced]))
        others = [i for i in range(len(re_rises)) if i not in retraced]
        if not others:
            return found
        tops = [tops[i] for i in others] + [tops[others[-1] + 1]]
        re_rises = [re_rises[i] for i in others]
    return found + _other_re_rises(curve, warmup, re_rises, tops)


def _other_re_rises(
    curve: Curve, warmup: Rise | None, re_rises: list[Rise], tops: list[float]
) -> list[Finding]:
    """Re-rises that do not retrace a decay: deliberate restarts and cycles (one info),
    or a warning each."""
    deliberate = [_is_restart(curve, r, tops[i]) for i, r in enumerate(re_rises)]
    if len(re_rises) >= 2 and _periodic(curve, warmup, re_rises, tops):
        deliberate = [True] * len(re_rises)
    found = [
        _re_rise_finding(curve, rise, tops[i])
        for i, rise in enumerate(re_rises)
        if not deliberate[i]
    ]
    recognised = [r for r, ok in zip(re_rises, deliberate, strict=True) if ok]
    if recognised:
        found.append(_restarts_finding(curve, recognised))
    return found


def _starts_cyclic(curve: Curve, warmup: Rise | None, first_re_rise: Rise) -> bool:
    """A cyclical schedule (triangular, CLR) starts at its minimum and its first rise
    is a half-cycle: about as long as the decay after it. A warmup is much shorter
    than the decay it leads into."""
    if warmup is None:
        return False
    rise = float(curve.x[warmup.high] - curve.x[warmup.low])
    decay = float(curve.x[first_re_rise.low] - curve.x[warmup.high])
    return rise >= 0.5 * decay


def _retraces_decay(curve: Curve, rise: Rise, top: int) -> bool:
    """A decay stepped past its end: after falling from the top at point `top` to ~0,
    the LR climbs back smoothly along the mirror image of that decay (a cosine's
    T_max, or num_training_steps, shorter than the run). A warm restart jumps back in
    one logged interval and so fails this; so does a short re-warmup, which climbs
    far faster than the decay fell."""
    p = curve.params
    low, high = rise.low, rise.high
    previous_top = float(curve.lr[top])
    if high - low < 3 or float(curve.lr[low]) > p.restart_trough_fraction * previous_top:
        return False
    decay_x, decay_lr = curve.x[top : low + 1], curve.lr[top : low + 1]
    if decay_x.size < 3 or np.any(np.diff(decay_x) <= 0):
        return False
    rise_x, rise_lr = curve.x[low + 1 : high + 1], curve.lr[low + 1 : high + 1]
    # The true minimum lies within one logged interval of the lowest logged point.
    centre = float(curve.x[low])
    reach = float(max(curve.x[low] - curve.x[low - 1], curve.x[min(low + 1, high)] - centre))
    best = np.inf
    for t0 in centre + reach * np.linspace(-0.5, 0.5, 11):
        mirrored_x = 2 * t0 - rise_x
        inside = mirrored_x >= decay_x[0]
        if int(inside.sum()) < 3:
            continue
        mirrored = np.interp(mirrored_x[inside], decay_x, decay_lr)
        best = min(best, float(np.max(np.abs(rise_lr[inside] - mirrored))))
    return best <= p.retrace_tolerance * previous_top


def _past_end_finding(curve: Curve, rises: list[tuple[Rise, int]]) -> Finding:
    """One warning for every smooth climb back that retraces the decay before it."""
    first, top = rises[0]
    low, high = first.low, first.high
    previous_top, trough, climbed = (float(curve.lr[i]) for i in (top, low, high))
    still = high == curve.lr.size - 1
    largest_step = float(np.max(np.diff(curve.lr[low : high + 1]))) / previous_top
    message = (
        f"The LR fell from {previous_top:.3g} at step {int(curve.x[top])} to {trough:.3g} at "
        f"step {int(curve.x[low])}, then climbed back smoothly, retracing its decay, to "
        f"{climbed:.3g} at step {int(curve.x[high])}"
        + (" (still rising at the last logged step)" if still else "")
        + f" over {high - low} logged intervals (the largest rise in one interval was "
        f"{largest_step:.2%} of that peak). A warm restart jumps back in one step; a climb "
        "that mirrors the decay is a decaying schedule (a cosine) stepped past the end of "
        "its period: its length (T_max, num_training_steps) is shorter than the run."
    )
    if len(rises) > 1:
        shown = ", ".join(str(int(curve.x[r.low])) for r, _ in rises[:8])
        message += f" It bottomed out and climbed back {len(rises)} times (from steps {shown})."
    loss_note = curve.loss_after(int(curve.x[low]), int(curve.x[high]))
    if loss_note:
        message += f" {loss_note}"
    return Finding(
        detector=NAME,
        title=(
            f"lr climbed back up from ~0 at step {int(curve.x[low])}: the schedule's period "
            "is shorter than the run"
        ),
        severity=Severity.WARNING,
        metric=names.LR,
        step_start=int(curve.x[low + 1]),
        step_end=int(curve.x[rises[-1][0].high]),
        message=message,
        evidence={
            "previous_peak": previous_top,
            "previous_peak_step": int(curve.x[top]),
            "trough_lr": trough,
            "trough_step": int(curve.x[low]),
            "lr_after": climbed,
            "lr_after_step": int(curve.x[high]),
            "largest_one_interval_rise_over_peak": largest_step,
            "climbs": len(rises),
        },
        fixes=(
            "Set the schedule's length to the real number of optimiser steps (PyTorch: "
            "CosineAnnealingLR(T_max=total_steps); transformers: num_training_steps / "
            "max_steps, counted after gradient accumulation and over all epochs)",
            "If restarts were intended, use a schedule that restarts on purpose "
            "(CosineAnnealingWarmRestarts, cosine_with_restarts)",
        ),
    )


def _is_restart(curve: Curve, rise: Rise, previous_top: float) -> bool:
    """A warm restart: from ~the bottom of a completed decay back up near the peak."""
    p = curve.params
    trough = float(curve.lr[rise.low])
    before = float(curve.lr[rise.low - 1]) if rise.low >= 1 else trough
    return (
        trough <= p.restart_trough_fraction * previous_top
        and before <= 0.6 * previous_top
        and float(curve.lr[rise.high]) >= p.restart_peak_fraction * previous_top
    )


def _periodic(curve: Curve, warmup: Rise | None, re_rises: list[Rise], tops: list[float]) -> bool:
    """Re-rises at regular intervals (equal, or growing by a constant factor)."""
    p = curve.params
    if any(tops[i + 1] < p.restart_peak_fraction * tops[i] for i in range(len(re_rises))):
        return False
    starts = np.array([curve.x[r.low] for r in re_rises])
    periods = np.diff(starts)
    if periods.size >= 2:
        growths = periods[1:] / periods[:-1]
        centre = float(np.median(growths))
        return bool(np.all(np.abs(growths - centre) <= p.period_tolerance * centre))
    # Two re-rises give one period: compare it with the lead-in from the first peak,
    # allowing the growth factors of real schedules (SGDR's T_mult, a triangular
    # cycle whose first half-cycle is its warmup).
    first_start = curve.x[warmup.high] if warmup else curve.x[0]
    lead = float(starts[0] - first_start)
    if lead <= 0:
        return False
    growth = float(periods[0]) / lead
    nearest = min((0.5, 1.0, 2.0, 3.0, 4.0), key=lambda factor: abs(growth - factor))
    return abs(growth - nearest) <= p.period_tolerance * nearest


def _re_rise_finding(curve: Curve, rise: Rise, previous_top: float) -> Finding:
    p = curve.params
    low, high = rise.low, rise.high
    trough, top = float(curve.lr[low]), float(curve.lr[high])
    jump = rise.biggest_ratio >= p.jump_factor
    loss_note = curve.loss_after(int(curve.x[low]), int(curve.x[high]))
    if jump:
        at = rise.biggest_move
        before, after = float(curve.lr[at - 1]), float(curve.lr[at])
        level_after = float(np.median(curve.lr[at : min(at + 5, curve.lr.size)]))
        title = f"lr jumped {_times(after, before)} at step {int(curve.x[at])}"
        message = (
            f"The LR jumped from {before:.3g} at step {int(curve.x[at - 1])} to "
            f"{after:.3g} at step {int(curve.x[at])} ({_times(after, before)} in one logged "
            f"interval) and stayed near {level_after:.3g}; no recognised schedule (warmup, "
            f"warm restart, cyclic) explains it. The peak before it was {previous_top:.3g}."
        )
        start, end = int(curve.x[at]), int(curve.x[at])
        evidence: Evidence = {
            "lr_before": before,
            "lr_after": after,
            "level_after": level_after,
            "previous_peak": previous_top,
        }
    else:
        title = (
            f"lr rose again after its peak ({_times(top, trough)} from step {int(curve.x[low])})"
        )
        message = (
            f"The LR rose from {trough:.3g} at step {int(curve.x[low])} to {top:.3g} at step "
            f"{int(curve.x[high])} ({_times(top, trough)} over {high - low} logged "
            f"interval{'' if high - low == 1 else 's'}), after it had already reached "
            f"{previous_top:.3g}: neither a warm restart (a climb from ~0 back to the peak "
            "after a completed decay) nor part of a periodic cycle."
        )
        start, end = int(curve.x[low + 1]), int(curve.x[high])
        before, after = trough, top
        evidence = {"lr_before": trough, "lr_after": top, "previous_peak": previous_top}
    if before > 0:
        evidence["ratio"] = after / before
    if loss_note:
        message += f" {loss_note}"
    return Finding(
        detector=NAME,
        title=title,
        severity=Severity.WARNING,
        metric=names.LR,
        step_start=start,
        step_end=end,
        message=message,
        evidence=evidence,
        fixes=FIXES_JUMP,
    )


def _restarts_finding(curve: Curve, restarts: list[Rise]) -> Finding:
    steps = [int(curve.x[r.low + 1]) for r in restarts]
    sharp = all(r.high - r.low <= 2 for r in restarts)
    kind = "warm restarts (SGDR)" if sharp else "a cyclic LR schedule"
    shown = ", ".join(str(s) for s in steps[:8]) + (", ..." if len(steps) > 8 else "")
    count = len(restarts)
    restarts_text = "1 restart" if count == 1 else f"{count} restarts"
    times = "once, at step" if count == 1 else f"{count} times, at steps"
    return Finding(
        detector=NAME,
        title=f"recognised {kind}: {restarts_text}",
        severity=Severity.INFO,
        metric=names.LR,
        step_start=steps[0],
        step_end=int(curve.x[restarts[-1].high]),
        message=(
            f"The LR climbs back from near its cycle minimum to near its peak "
            f"{times} {shown}: {kind}, a deliberate schedule. "
            "Loss bumps right after each restart are expected."
        ),
        evidence={"restarts": len(restarts), "first_restart_step": steps[0]},
        fixes=(),
    )


def cliff_findings(curve: Curve) -> list[Finding]:
    """Drops by >= jump_factor in one interval inside an otherwise smooth schedule."""
    p = curve.params
    lr, d = curve.lr, curve.direction
    if lr.size < 4:
        return []
    moves = np.abs(np.diff(lr))
    j = np.arange(1, lr.size - 2)  # move j goes from point j to j + 1
    with np.errstate(all="ignore"):
        ratio = lr[j] / lr[j + 1]
    cliff = (
        (d[j] < 0)
        & (ratio >= p.jump_factor)
        & (lr[j + 1] >= p.near_zero_fraction * curve.peak)
        & (d[j - 1] != 0)
        & (d[j + 1] != 0)
        & (moves[j] >= p.cliff_ratio * np.maximum(moves[j - 1], moves[j + 1]))
    )
    found = []
    for move in j[cliff]:
        before, after = float(lr[move]), float(lr[move + 1])
        step = int(curve.x[move + 1])
        message = (
            f"The LR dropped from {before:.3g} at step {int(curve.x[move])} to {after:.3g} "
            f"at step {step} ({before / after:.1f}x in one logged interval) inside an "
            "otherwise smooth schedule: not a step or plateau decay (those drop between "
            "flat stretches)."
        )
        loss_note = curve.loss_after(step, step)
        found.append(
            Finding(
                detector=NAME,
                title=f"lr dropped {before / after:.0f}x at step {step}",
                severity=Severity.WARNING,
                metric=names.LR,
                step_start=step,
                step_end=step,
                message=message + (f" {loss_note}" if loss_note else ""),
                evidence={"lr_before": before, "lr_after": after, "ratio": before / after},
                fixes=FIXES_JUMP,
            )
        )
    return found


def _times(after: float, before: float) -> str:
    """A ratio for a message: "10x", "0.5x", or "from 0" when there is none."""
    return f"{after / before:.3g}x" if before > 0 else "from 0"
