"""One spike episode as a finding: its message, severity and fixes."""

from __future__ import annotations

import math

import numpy as np

from trainspotter.detectors import idioms, loss_scale
from trainspotter.detectors.base import fmt
from trainspotter.detectors.spikes.params import NAME, SpikesParams
from trainspotter.detectors.spikes.scoring import (
    RECENT_POINTS,
    Curve,
    Episode,
    is_memorised,
    recovery_ratio_bound,
    recovery_sigmas,
)
from trainspotter.model import Evidence, Finding, Run, Severity
from trainspotter.names import is_eval


def spike_finding(
    name: str, run: Run, curve: Curve, ep: Episode, params: SpikesParams, total: int
) -> Finding:
    baseline = curve.back(ep.baseline)
    peak_value = float(curve.raw[ep.peak])
    ratio = peak_value / baseline if baseline > 0 else float("nan")
    steps = curve.steps
    start_step, end_step, peak_step = int(steps[ep.start]), int(steps[ep.end]), int(steps[ep.peak])
    single = start_step == end_step
    size = f"{fmt(ratio)}x" if baseline > 0 else f"+{fmt(peak_value - baseline)}"
    # The noise window holds `window` points, fewer near the start of the log: say so.
    noise_points = min(ep.start, curve.window)
    short_baseline = noise_points < curve.window
    message = (
        f"{name} jumped from {fmt(baseline)} (median of the {RECENT_POINTS} points before) "
        f"to {'' if single else 'a peak of '}{fmt(peak_value)} at step {peak_step} ({size}; "
        f"robust z {fmt(ep.z)} against the noise of the previous {noise_points} points)"
        + ("" if single else f", over steps {start_step}-{end_step}")
        + ". "
    )
    if ep.by_run:
        # Flagged as a run (`scoring.flagged_points`): say why a z under the threshold counts.
        message += (
            f"No single point reaches robust z {fmt(params.z_threshold)}, but at least "
            f"{params.sustained_points} consecutive points each stand "
            f"{fmt(params.sustained_z)}+ noise sigmas and {fmt(params.min_ratio)}x+ above the "
            f"median of the {RECENT_POINTS} points before them: together far beyond the noise. "
        )
    if short_baseline:
        message += (
            f"Only {noise_points} points precede it (a full baseline is {curve.window}), so "
            "the noise estimate is rough. "
        )
    level_after = curve.back(ep.level_after) if math.isfinite(ep.level_after) else math.nan
    evidence: Evidence = {
        "level_before": baseline,
        "peak_value": peak_value,
        "peak_step": peak_step,
        "ratio_to_baseline": ratio,
        "robust_z": ep.z,
        "window_points": curve.window,
        "points_in_episode": ep.end - ep.start + 1,
        "spike_episodes_in_metric": total,
    }
    points_after = int(curve.values.size - 1 - ep.end)
    evidence["points_after_episode"] = points_after
    near = True
    if ep.by_end or ep.within_history:
        # The log ends on it: nothing after it, one point or a few of evidence (`end`).
        severity, recovery = _end_severity(curve, ep, params), "unknown"
        text, end_evidence = end_of_log_text(name, curve, ep, params)
        message += text
        evidence.update(end_evidence)
    elif ep.recovered is None:
        # Once the curve has memorised, an unjudged jump is as likely one hard batch; a run
        # of raised points the log ends on may as well be the start of a lasting shift.
        quiet = is_memorised(curve, ep, params) or ep.by_run
        severity, recovery = (Severity.INFO if quiet else Severity.WARNING), "unknown"
        message += (
            f"The log ends {points_after} logged point{'s' if points_after != 1 else ''} after "
            f"it, fewer than the {params.recovery_points} needed to judge recovery"
            + (f" (their median is {fmt(level_after)})." if math.isfinite(level_after) else ".")
        )
        if ep.by_run:
            message += " A burst and the start of a lasting shift of level look alike so far."
    elif ep.recovered:
        severity, recovery = Severity.WARNING, "yes"
        back_step = int(steps[ep.back_at]) if ep.back_at is not None else end_step
        # "Near": within sqrt(min_ratio) of the level before (half the smallest jump that
        # counts); a noisy curve's recovery threshold can be wider, and then the message
        # says how far above the level it stays rather than "came back".
        near = ep.level_after - ep.baseline < 0.5 * curve.min_jump
        relative = _relative(level_after, baseline)
        median_after = (
            f"from step {back_step} the median of the next {params.recovery_points} points "
            f"is {fmt(level_after)}"
        )
        within_noise = _back_within_noise(curve, ep, params)
        if near:
            message += f"It came back: {median_after} ({relative})."
        else:
            reason = (
                f"within {fmt(recovery_sigmas(ep.by_run, params))} noise sigmas of it, the "
                "recovery threshold on a curve this noisy"
                if within_noise
                else "below the smallest jump that counts as a spike"
            )
            message += (
                f"It came down, but not to its level before: {median_after}, {relative} ({reason})."
            )
        if (
            single
            and ep.back_at is not None
            and ep.back_at <= ep.end + 1
            and (near or within_noise)
        ):
            # One logged point, back at the very next one: one hard batch, the usual tail
            # of minibatch noise, not an incident a practitioner acts on. Not when the
            # level after stays clearly up on a quiet curve: that jump moved the run.
            severity = Severity.INFO
            message += (
                " One logged point, back at the next: most likely one hard batch."
                if near
                else " One logged point, the next back within the noise: most likely one "
                "hard batch."
            )

        evidence["recovered_at_step"] = back_step
    else:
        severity, recovery = Severity.ERROR, "no"
        if not math.isfinite(level_after):
            message += "It did not recover: the metric is non-finite from then on."
        else:
            message += (
                f"It did not recover: it ends at a median of {fmt(level_after)}, "
                f"{_relative(level_after, baseline)}."
            )
    if short_baseline and not ep.by_end:
        # Severity follows evidence: a rough noise estimate lowers it one level (the end
        # rule's warning rests on the curve's whole history, not on that estimate alone).
        severity = Severity(max(int(Severity.INFO), int(severity) - 1))
    if ep.absorbed:
        later = "before coming back" if ep.recovered else "after that"
        times = "once more" if ep.absorbed == 1 else f"{ep.absorbed} more times"
        message += f" It jumped {times} {later}: counted in this finding."
        evidence["further_jumps"] = ep.absorbed
    evidence["recovered"] = recovery
    if math.isfinite(level_after):
        evidence["level_after"] = level_after
    if total > params.max_findings_per_metric:
        message += (
            f" One of {total} spike episodes in {name}: the first and the largest are reported."
        )
    lr_value = _lr_at(run, start_step)
    if lr_value is not None:
        evidence["lr_at_spike"] = lr_value
    # The step a reader looks for: the peak, named as such when the episode spans more.
    at = (
        f"at step {peak_step}"
        if single
        else f"at steps {start_step}-{end_step} (peak at step {peak_step})"
    )
    eval_note = None
    if recovery == "yes" and not is_eval(name):
        eval_note = loss_scale.eval_after(run, start_step, int(evidence["recovered_at_step"]))
    if eval_note:
        message += f" {eval_note}"
        evidence["eval_recovered"] = "no"
    if near:
        came_back = "and came back (eval/loss did not)" if eval_note else "and recovered"
    else:
        came_back = f"and came down to {_relative(level_after, baseline)}" + (
            " (eval/loss did not come back)" if eval_note else ""
        )
    outcome = {
        "yes": came_back,
        "no": "and did not recover",
        "unknown": "too close to the end of the log to judge recovery",
    }[recovery]
    if ep.by_end or ep.within_history:
        last = "point" if single else f"{ep.end - ep.start + 1} points"
        outcome = (
            f"at its last logged {last}: nothing after {'it' if single else 'them'} can show "
            "a recovery"
        )
    title = f"{name} spiked {at} {outcome}"
    return Finding(
        detector=NAME,
        title=title,
        severity=severity,
        metric=name,
        step_start=start_step,
        step_end=end_step,
        message=message,
        evidence=evidence,
        fixes=_end_fixes(name, start_step, evidence)
        + spike_fixes(name, start_step, severity, first_logged=int(steps[0]), run=run),
    )


def _end_fixes(name: str, start_step: int, evidence: Evidence) -> tuple[str, ...]:
    """For an episode the log ends on (not one within the curve's history): what was
    different at the end, and which checkpoint to trust meanwhile."""
    if evidence.get("rule") != "end_of_log" or evidence.get("within_history") == "yes":
        return ()
    if evidence.get("lr_back_to_earlier_peak") == "yes":
        return (
            f"If the LR rise at step {evidence['lr_rose_to_step']} was meant (a warm restart), "
            f"train past it before judging {name}; if not, fix the LR schedule.",
        )
    best = evidence.get("best_earlier_step")
    keep = (
        f"the checkpoint from step {best} (the lowest {name} before it)"
        if best is not None
        else f"the last checkpoint before step {start_step}"
    )
    return (
        f"Do not use the final checkpoint on this evidence alone: compare it with {keep}, and "
        "evaluate again or train a few more steps to see whether the loss comes back.",
        "Check what changed in the last logged interval: an LR schedule step at the end of "
        "training (a factor applied the wrong way round), the last batch or shard of the "
        "data, an evaluation set or mode that changed.",
    )


def _end_severity(curve: Curve, ep: Episode, params: SpikesParams) -> Severity:
    """An episode the log ends on: a warning when the end rule found it (`end`), unless
    the curve had memorised (one hard example then gives such a jump); info when it is a
    single last point within the curve's own history of rises, or when the logged LR rose
    just before it back to an LR the run had trained at (a warm restart: the schedule)."""
    if ep.within_history or is_memorised(curve, ep, params):
        return Severity.INFO
    if ep.lr_rise is not None and ep.lr_rise.back_to_earlier_peak:
        return Severity.INFO
    if ep.train_blow_up is not None:
        return Severity.INFO  # the divergence's echo: divergence reports the incident
    return Severity.WARNING


def end_of_log_text(
    name: str, curve: Curve, ep: Episode, params: SpikesParams
) -> tuple[str, Evidence]:
    """What an episode the log ends on rests on, what it may mean, and (for an eval loss)
    the best earlier evaluation; with its evidence."""
    steps, raw = curve.steps, curve.raw
    start_step = int(steps[ep.start])
    count = ep.end - ep.start + 1
    what = (
        "the last logged point"
        if count == 1
        else f"the last {count} logged points (steps {start_step}-{int(steps[ep.end])})"
    )
    it = "it" if count == 1 else "them"
    text = (
        f"It is {what}: nothing after {it} can show whether {name} would have come back, so "
        f"this rests on {'one point' if count == 1 else f'{count} points'}. "
    )
    evidence: Evidence = {"rule": "end_of_log", "points_after_episode": 0}
    if ep.start >= 1:
        prev_step, prev = int(steps[ep.start - 1]), float(raw[ep.start - 1])
        if prev > 0 and count == 1:
            ratio = float(raw[ep.peak]) / prev
            text += f"It is {fmt(ratio)}x the point before it ({fmt(prev)} at step {prev_step}). "
    if ep.earlier_rise_at is None:
        history = (
            f"No earlier point of {name} rose above the median of the {RECENT_POINTS} points "
            "before it."
        )
    else:
        at = ep.earlier_rise_at
        level_then = curve.back(float(curve.values[at]) - ep.earlier_rise)
        size = (
            f"{fmt(float(raw[at]) / level_then)}x"
            if curve.in_log
            else f"+{fmt(float(raw[at]) - level_then)}"
        )
        history = (
            f"The largest earlier rise of {name} was {size} the median of the {RECENT_POINTS} "
            f"points before it ({fmt(float(raw[at]))} at step {int(steps[at])})."
        )
        if curve.in_log:
            evidence["largest_earlier_rise_ratio"] = float(raw[at]) / level_then
        evidence["largest_earlier_rise_step"] = int(steps[at])
        evidence["largest_earlier_rise_value"] = float(raw[at])
    text += history + " "
    if ep.within_history:
        text += (
            "A last point within twice that rise (in log units) is as likely one hard batch "
            "of the curve's own noise as the start of a blow-up."
        )
        evidence["within_history"] = "yes"
        return text, evidence
    rise = ep.lr_rise
    if rise is not None:
        evidence["lr_rose_from"] = rise.from_value
        evidence["lr_rose_from_step"] = rise.from_step
        evidence["lr_rose_to"] = rise.to_value
        evidence["lr_rose_to_step"] = rise.to_step
        text += (
            f"The LR rose from {fmt(rise.from_value)} at step {rise.from_step} to "
            f"{fmt(rise.to_value)} at step {rise.to_step} just before"
        )
        if rise.back_to_earlier_peak:
            text += (
                f", back to an LR the run had trained at before (up to "
                f"{fmt(rise.highest_before)}): a warm restart or a cycle. A loss that rises "
                "right after one is most likely answering the schedule, not blowing up; only "
                "more steps can show whether it comes back."
            )
            evidence["lr_back_to_earlier_peak"] = "yes"
            return text, evidence
        before = (
            f"above every LR logged before it (the highest was {fmt(rise.highest_before)})"
            if math.isfinite(rise.highest_before)
            else "with no LR logged before it"
        )
        text += f", {before}: the new LR may be too high for the run. "
    if is_memorised(curve, ep, params):
        text += (
            f"The curve sat below {fmt(100 * params.near_zero_fraction)}% of its earlier level "
            "(memorised), where one hard example gives such a jump, and it stays below that "
            "level."
        )
        return text, evidence
    if ep.train_blow_up is not None:
        train, at = ep.train_blow_up
        evidence["train_blow_up_step"] = at
        text += (
            f"{train} blew up over the same steps (non-finite or 10x its level from step "
            f"{at}): this is that divergence seen on the eval set, and divergence reports it."
        )
        return text, evidence
    subject = "evaluation" if is_eval(name) else "stretch of data"
    text += (
        f"The run ended on a blow-up or a bad {subject}, and the final checkpoint may be "
        "worse than an earlier one"
    )
    if is_eval(name) and ep.start >= 1:
        best = int(np.argmin(raw[: ep.start]))
        text += (
            f": the lowest {name} before it was {fmt(float(raw[best]))} at step {int(steps[best])}."
        )
        evidence["best_earlier_step"] = int(steps[best])
        evidence["best_earlier_value"] = float(raw[best])
    else:
        text += f" (the last checkpoint before step {start_step})."
    return text, evidence


def _relative(value: float, baseline: float) -> str:
    """`value` against the level before the spike: a ratio when that level is positive
    ("1.6x the level before"), else the difference."""
    if baseline > 0:
        return f"{fmt(value / baseline)}x the level before"
    diff = value - baseline
    return f"{fmt(abs(diff))} {'above' if diff >= 0 else 'below'} the level before"


def _back_within_noise(curve: Curve, ep: Episode, params: SpikesParams) -> bool:
    """Whether the noise bound, not the ratio bound, set `scoring.recovery_threshold`: a
    level after above sqrt(`min_ratio`) x the level before then counts as back because the
    curve is that noisy."""
    return recovery_sigmas(ep.by_run, params) * ep.sigma > recovery_ratio_bound(curve, ep.by_run)


def _lr_at(run: Run, step: int) -> float | None:
    lr = run.metrics.get("lr")
    if lr is None or len(lr) == 0:
        return None
    i = int(np.searchsorted(lr.steps, step, side="right")) - 1
    if i < 0:
        return None
    value = float(lr.values[i])
    return value if math.isfinite(value) else None


def spike_fixes(
    name: str, step: int, severity: Severity, first_logged: int, run: Run
) -> tuple[str, ...]:
    if is_eval(name):
        return (
            f"Check the evaluation at step {step}: a changed or reshuffled eval set, a "
            "different eval batch size, or a model left in train mode (dropout, batch-norm "
            "statistics) moves the eval loss without the model changing.",
            "If train loss spiked at the same step, fix that first: the eval spike follows it.",
            "Keep the checkpoint from before the spike if the eval loss stayed high.",
        )
    fixes = [
        "Lower the peak learning rate (by 2-3x) or lengthen the warmup.",
        f"{idioms.clipping_fix(run)}.",
        f"Inspect the batches around step {step}: a corrupt, mislabelled or extremely long "
        "sample often causes a one-off jump.",
        "With Adam, raise eps (1e-8 -> 1e-6) or lower beta2 (0.999 -> 0.95) to damp update spikes.",
    ]
    if severity is Severity.ERROR:
        # No checkpoint precedes the first logged step: then the advice is a fresh start.
        where = (
            f"the last checkpoint before step {step}"
            if step > first_logged
            else "scratch (the trouble is there from the first logged step)"
        )
        fixes.insert(
            0,
            f"Restart from {where} with a 2-10x lower learning rate (and skip the offending "
            "batches).",
        )
    return tuple(fixes)
