"""divergence, non-finite values: NaN/Inf episodes in losses and gradients, grouped into
incidents; a persistent or loss-side one is an error, a lone fp16 overflow skip is info."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import idioms
from trainspotter.detectors.base import fmt
from trainspotter.detectors.divergence.params import NAME, DivergenceParams
from trainspotter.detectors.divergence.rise import Rise
from trainspotter.model import Evidence, Finding, Run, Series, Severity
from trainspotter.names import GRAD_NORM, LR, TRAIN_LOSS, is_loss_like


@dataclass(frozen=True)
class Episode:
    metric: str
    start: int
    """Index of the first non-finite point."""
    end: int
    """Index of the last non-finite point."""
    series: Series

    @property
    def start_step(self) -> int:
        return int(self.series.steps[self.start])

    @property
    def end_step(self) -> int:
        return int(self.series.steps[self.end])

    @property
    def points(self) -> int:
        return self.end - self.start + 1

    @property
    def nonfinite(self) -> int:
        """The non-finite points among `points` (merged runs hold finite ones)."""
        return int(np.count_nonzero(~self.series.finite[self.start : self.end + 1]))

    @property
    def to_end(self) -> bool:
        return self.end == len(self.series) - 1

    @property
    def reach(self) -> float:
        """The step of the metric's next finite point (inf if it never has one)."""
        return math.inf if self.to_end else float(self.series.steps[self.end + 1])

    @property
    def is_loss(self) -> bool:
        return is_loss_like(self.metric)

    @property
    def is_loss_or_gradient(self) -> bool:
        """False for another metric's stretch folded into a loss incident."""
        return self.is_loss or is_gradient(self.metric)


def is_gradient(name: str) -> bool:
    return name == GRAD_NORM or "grad" in name.lower()


def incidents(episodes: list[Episode]) -> list[list[Episode]]:
    """Group episodes of any metrics whose step ranges overlap into incidents."""
    groups: list[list[Episode]] = []
    reach = -math.inf
    for ep in sorted(episodes, key=lambda e: (e.start_step, not e.is_loss, e.metric)):
        if groups and ep.start_step < reach:
            groups[-1].append(ep)
            reach = max(reach, ep.reach)
        else:
            groups.append([ep])
            reach = ep.reach
    return groups


def nonfinite_kind(value: float) -> str:
    """How a non-finite value is written: NaN, +Inf or -Inf."""
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def nonfinite_finding(
    run: Run, group: list[Episode], params: DivergenceParams, lead_in: dict[str, Rise]
) -> Finding:
    # The metric the report is about: a loss if any, else the first to go non-finite.
    lead = min(group, key=lambda e: (not e.is_loss, e.start_step, e.metric != TRAIN_LOSS))
    # The incident is dated by its losses and gradients: a metric stretch folded into it
    # (`metric_nonfinite.fold_into_loss_incidents`) is named, never moves its steps.
    own = [e for e in group if e.is_loss_or_gradient]
    start_step = min(e.start_step for e in own)
    end_step = max(e.end_step for e in own)
    to_end = any(e.to_end for e in own)
    values = lead.series.values
    kind = nonfinite_kind(float(values[lead.start]))
    before = values[: lead.start][np.isfinite(values[: lead.start])]
    last_finite = float(before[-1]) if before.size else float("nan")
    others = sorted({e.metric for e in group} - {lead.metric})
    evidence: Evidence = {
        "first_nonfinite_step": lead.start_step,
        "first_value": kind,
        "nonfinite_points": sum(e.nonfinite for e in group),
        "until_end_of_log": "yes" if to_end else "no",
    }
    if math.isfinite(last_finite):
        evidence["last_finite_value"] = last_finite
        evidence["last_finite_step"] = int(lead.series.steps[: lead.start][-1])
    if others:
        evidence["also_nonfinite"] = ", ".join(others)
    span = (
        f"from step {lead.start_step} to the end of the log"
        if lead.to_end
        else f"at step {lead.start_step}"
        if lead.points == 1
        else f"at steps {lead.start_step}-{lead.end_step} ({lead.points} logged points)"
    )
    also = (
        f" {', '.join(others)} {'is' if len(others) == 1 else 'are'} non-finite too."
        if others
        else ""
    )
    previous = (
        f" The last finite value was {fmt(last_finite)} at step {evidence['last_finite_step']}."
        if math.isfinite(last_finite)
        else " It was never finite."
    )
    if any(e.is_loss for e in group):
        climb = ""
        rise = lead_in.get(lead.metric)
        if rise is not None and rise.onset_step < start_step:
            start_step = rise.onset_step
            climb = _climb_before_nonfinite(rise, lead, last_finite, evidence)
        title = f"{lead.metric} became {kind} at step {lead.start_step}"
        message = f"{lead.metric} is {kind} {span}.{previous}{also}{climb}"
        return _error(run, lead, (start_step, end_step), title, message, evidence)
    return _gradient_finding(run, group, lead, span, previous, evidence, params)


def _error(
    run: Run, lead: Episode, steps: tuple[int, int], title: str, message: str, evidence: Evidence
) -> Finding:
    """An error about `lead` over `steps` (a loss gone non-finite, or a gradient that stays
    so): the fixes restart from before the first of them."""
    return Finding(
        detector=NAME,
        title=title,
        severity=Severity.ERROR,
        metric=lead.metric,
        step_start=steps[0],
        step_end=steps[1],
        message=message,
        evidence=evidence,
        fixes=_nan_fixes(run, steps[0], lead.start_step, _first_step(run)),
    )


def _gradient_finding(
    run: Run,
    group: list[Episode],
    lead: Episode,
    span: str,
    previous: str,
    evidence: Evidence,
    params: DivergenceParams,
) -> Finding:
    kind = str(evidence["first_value"])
    persistent = any(
        (e.to_end and e.points >= 2) or e.points > params.max_skip_points for e in group
    )
    start_step = min(e.start_step for e in group)
    end_step = max(e.end_step for e in group)
    if persistent:
        title = f"{lead.metric} is non-finite from step {lead.start_step} on"
        message = (
            f"{lead.metric} is {kind} {span}.{previous} The loss is still finite, but "
            "no optimiser step with a non-finite gradient is applied (or, worse, it is): "
            "training has stopped making progress."
        )
        return _error(run, lead, (start_step, end_step), title, message, evidence)
    series = lead.series
    skipped = series.nonfinite_count()
    fraction = skipped / max(len(series), 1)
    evidence["nonfinite_fraction_of_metric"] = round(fraction, 4)
    frequent = fraction > params.frequent_skip_fraction
    lr_note = _lr_unchanged_note(run, lead)
    message = (
        f"{lead.metric} is {kind} {span} while the loss stays finite: the signature of a "
        "mixed-precision (fp16) overflow, where the loss scaler skips the optimiser step and "
        f"halves its scale.{lr_note} {skipped} of {len(series)} logged {lead.metric} values "
        f"are non-finite ({fmt(100 * fraction)}%)."
    )
    if frequent:
        message += (
            f" That is more than {fmt(100 * params.frequent_skip_fraction)}% of the steps: "
            "the scaler keeps overflowing, so many updates are lost."
        )
    return Finding(
        detector=NAME,
        title=f"{lead.metric} non-finite at step {lead.start_step} (fp16 overflow skip?)",
        severity=Severity.WARNING if frequent else Severity.INFO,
        metric=lead.metric,
        step_start=start_step,
        step_end=end_step,
        message=message,
        evidence=evidence,
        fixes=(
            "Nothing to do for an occasional skip: the dynamic loss scaler handles it.",
            "If skips are frequent, train in bf16 instead of fp16 (same speed on Ampere or "
            "newer GPUs, no loss scaling needed).",
            "Look for layers whose activations exceed the fp16 range (attention logits, "
            "unnormalised residual streams) and add normalisation or clamp them.",
        ),
    )


def _logged_at(series: Series, step: int) -> float | None:
    """The value `series` logged at exactly `step`, or None."""
    i = int(np.searchsorted(series.steps, step))
    return float(series.values[i]) if i < len(series) and series.steps[i] == step else None


def _lr_unchanged_note(run: Run, ep: Episode) -> str:
    lr = run.metrics.get(LR)
    if lr is None or ep.to_end:
        return ""
    after_step = int(ep.series.steps[ep.end + 1])
    at = _logged_at(lr, ep.end_step)
    if at is None or not at > 0 or _logged_at(lr, after_step) != at:
        return ""
    return (
        f" The LR did not advance between steps {ep.end_step} and {after_step}, as "
        "happens when the scheduler step is skipped with it."
    )


def _climb_before_nonfinite(
    rise: Rise, lead: Episode, last_finite: float, evidence: Evidence
) -> str:
    """The sentence (and evidence) for the climb that led up to a loss turning non-finite.

    The climb is dated from where it is clearly under way (its onset), with the minimum
    before it only as the level it rose from; its size is what was observed (the last
    finite value over that minimum). No trend statistics in the message: next to a value
    that overflowed they read as weak evidence; they stay in the evidence."""
    evidence["climb_from_step"] = rise.onset_step
    evidence["climb_from_level"] = rise.min_level
    evidence["min_step"] = rise.min_step
    to_step = int(evidence.get("last_finite_step", lead.start_step))
    growth = ""
    if math.isfinite(last_finite):
        growth = f": {rise.growth(last_finite)} by step {to_step}"
        if rise.in_log and rise.min_level > 0:
            evidence["rise_factor"] = last_finite / rise.min_level
    for key in ("mann_kendall_p", "kendall_tau"):
        evidence[key] = rise.evidence[key]
    return (
        f" It had been climbing since step {rise.onset_step}, up from its smoothed minimum "
        f"{fmt(rise.min_level)} at step {rise.min_step} ({rise.min_span}){growth}."
    )


def _first_step(run: Run) -> int:
    span = run.step_span()
    return span[0] if span is not None else 0


def _nan_fixes(
    run: Run, restart_step: int, nonfinite_step: int, first_step: int
) -> tuple[str, ...]:
    """`restart_step`: where the trouble began (a climb's onset, or the first non-finite
    value); `nonfinite_step`: the first non-finite value; `first_step`: the first logged
    step (no checkpoint precedes it: the advice is then a fresh start and a look at the
    initialisation and the first batches)."""
    if restart_step > first_step:
        restart = f"Restart from the last checkpoint before step {restart_step}"
    else:
        restart = "Start again (the trouble is there from the first logged step)"
    if nonfinite_step > first_step:
        inputs = f"Check the inputs of the batches just before step {nonfinite_step} for NaN/Inf."
    else:
        inputs = (
            "The first logged value is already non-finite: check the initialisation, the "
            "inputs of the first batches and the loss code for NaN/Inf."
        )
    return (
        f"{restart} with a 2-10x lower learning rate.",
        f"{idioms.clipping_fix(run)}.",
        "With fp16, switch to bf16 or check the loss scaler; look for log(0), division by "
        "zero or sqrt of a negative in custom loss code (e.g. add eps inside log/sqrt).",
        inputs,
    )
