"""divergence, non-finite metrics: a metric other than a loss or a gradient (Dice, F1,
accuracy, perplexity, the LR) that turns NaN/Inf after it had been finite.

A loss or gradient going non-finite is `nonfinite`'s; this module finds the same in every
other metric the run logs, except timing and throughput (`names.is_timing`: a
samples/second of +Inf at a first step timed as 0 s is a clock artefact, not the model)
and metrics that are NaN by design in healthy runs (an explained variance, NaN whenever
the returns have no variance). Such a metric beside a finite loss is usually a 0/0 in the
metric (an empty mask, an absent class) or a partial blow-up the loss hides: a warning,
since training may be fine. A non-finite stretch that overlaps a loss incident is named in
the loss's finding instead (`fold_into_loss_incidents`: one incident, one finding); the
metric's other stretches stay its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from trainspotter.detectors import stats
from trainspotter.detectors.base import fmt
from trainspotter.detectors.divergence.nonfinite import Episode, is_gradient, nonfinite_kind
from trainspotter.detectors.divergence.params import NAME, DivergenceParams
from trainspotter.model import Evidence, Finding, Run, Series, Severity
from trainspotter.names import EPOCH, is_eval, is_loss_like, is_timing, name_words


def _nan_by_design(name: str) -> bool:
    """A metric that is NaN in healthy runs: an explained variance (Stable-Baselines3's
    `train/explained_variance` is 1 - Var(returns - values) / Var(returns), NaN whenever a
    rollout's returns are all equal, as in sparse-reward tasks)."""
    words = name_words(name)
    return any(a == "explained" and b in ("variance", "var") for a, b in pairwise(words))


def watched(name: str) -> bool:
    """A metric this rule reads: not a loss or gradient (`nonfinite` reads those), not
    timing, throughput or bookkeeping, not NaN by design."""
    if is_loss_like(name) or is_gradient(name) or name == EPOCH:
        return False
    return not (is_timing(name) or _nan_by_design(name))


@dataclass(frozen=True)
class MetricBreak:
    """One stretch where a metric is non-finite after it had been finite."""

    metric: str
    series: Series
    start: int
    """Index of the stretch's first non-finite point (in evaluations mode: the logged point
    nearest the first missed evaluation)."""
    end: int
    """Index of the stretch's last non-finite point (in evaluations mode: the last point
    before the next finite evaluation, or the last logged point)."""
    every: float | None = None
    """Evaluations mode (NaN written for "not computed at this log" between evaluations):
    the median step interval of the evaluations; None when every logged point counts."""
    missed: int = 0
    """Evaluations mode: how many scheduled evaluations in the stretch are missing."""

    @property
    def onset_step(self) -> int:
        return int(self.series.steps[self.start])

    @property
    def end_step(self) -> int:
        return int(self.series.steps[self.end])

    @property
    def to_end(self) -> bool:
        return self.end == len(self.series) - 1

    @property
    def nonfinite(self) -> int:
        """Non-finite points in the stretch: logged points, or missed evaluations."""
        if self.every is not None:
            return self.missed
        return int(np.count_nonzero(~self.series.finite[self.start : self.end + 1]))

    def episode(self) -> Episode:
        """The stretch as an episode `nonfinite.incidents` can group with a loss's."""
        return Episode(self.metric, self.start, self.end, self.series)


def metric_breaks(name: str, series: Series, params: DivergenceParams) -> list[MetricBreak]:
    """Every stretch (non-finite points up to `merge_gap` finite points apart) where
    `series` is non-finite after its first finite value and holds a run of at least
    `metric_min_nonfinite_points` consecutive non-finite points, in step order. When the
    metric is only ever finite at isolated points (evaluations, with NaN written between
    them), the stretches are runs of missed evaluations instead (`_missed_evaluations`)."""
    finite = series.finite
    if not bool(finite.any()) or bool(finite.all()):
        return []
    every = _evaluation_interval(series)
    if every is not None:
        return _missed_evaluations(name, series, every, params)
    after = ~finite
    after[: int(np.argmax(finite))] = False  # not computed yet: a leading NaN is no break
    return [
        MetricBreak(name, series, start, end)
        for start, end in stats.episodes(after, max_gap=params.merge_gap)
        if _longest_run(after[start : end + 1]) >= params.metric_min_nonfinite_points
    ]


def _longest_run(mask: npt.NDArray[np.bool_]) -> int:
    runs = stats.episodes(mask)
    return max((end - start + 1 for start, end in runs), default=0)


def _evaluation_interval(series: Series) -> float | None:
    """When the metric is finite at 3+ points and never at two consecutive ones, the
    logger writes NaN for "not computed at this log" between evaluations (an eval metric
    in rows of every step, epoch-end evaluations between rows every 50 steps): the median
    step interval between the evaluations. None otherwise."""
    at = np.flatnonzero(series.finite)
    if at.size < 3 or int(np.diff(at).min()) < 2:
        return None
    every = float(np.median(np.diff(series.steps[at])))
    return every if every > 0 else None


def _missed_evaluations(
    name: str, series: Series, every: float, params: DivergenceParams
) -> list[MetricBreak]:
    """In evaluations mode a NaN strictly between two finite evaluations is a placeholder,
    not a break. What counts is scheduled evaluations that are missing: a gap between two
    evaluations of k+1 intervals (rounded) misses k, and the log running on k whole intervals
    after the last one misses k. A stretch is at least `metric_min_nonfinite_points` missed
    in a row."""
    steps = series.steps
    at = np.flatnonzero(series.finite)
    found = []
    for i, j in pairwise(at):
        missed = round(float(steps[j] - steps[i]) / every) - 1
        if missed >= params.metric_min_nonfinite_points:
            first = _nearest(series, int(i) + 1, int(j), float(steps[i]) + every)
            found.append(MetricBreak(name, series, first, int(j) - 1, every, missed))
    last = int(at[-1])
    missed = int((float(steps[-1]) - float(steps[last])) // every)
    if missed >= params.metric_min_nonfinite_points:
        first = _nearest(series, last + 1, len(series), float(steps[last]) + every)
        found.append(MetricBreak(name, series, first, len(series) - 1, every, missed))
    return found


def _nearest(series: Series, lo: int, hi: int, step: float) -> int:
    """The index in lo..hi-1 whose step is nearest `step`."""
    return lo + int(np.argmin(np.abs(series.steps[lo:hi] - step)))


def fold_into_loss_incidents(
    breaks: list[MetricBreak], groups: list[list[Episode]]
) -> list[MetricBreak]:
    """A metric stretch that overlaps the steps of a loss incident is part of it (the
    loss's finding names it; `nonfinite.nonfinite_finding` dates and counts the incident by
    its losses and gradients only). The other stretches, returned, are the metric's own."""
    alone = []
    for found in breaks:
        episode = found.episode()
        for group in groups:
            if any(e.is_loss for e in group) and (
                episode.start_step < max(e.reach for e in group)
                and min(e.start_step for e in group) < episode.reach
            ):
                group.append(episode)
                break
        else:
            alone.append(found)
    return alone


def _companion_losses(run: Run, metric: str) -> list[str]:
    """The losses that say whether the model itself blew up: the same side's (eval for an
    eval metric, train otherwise), or every loss when that side has none."""
    losses = [n for n in run.metrics if is_loss_like(n)]
    same_side = [n for n in losses if is_eval(n) == is_eval(metric)]
    return same_side or losses


def _nonfinite_between(series: Series, lo: int, hi: int) -> int:
    inside = (series.steps >= lo) & (series.steps <= hi)
    return int(np.count_nonzero(inside & ~series.finite))


def metric_finding(run: Run, stretches: list[MetricBreak]) -> Finding:
    """A warning about a metric's first stretch of its own: its steps, how many of the
    points there are non-finite, whether it is finite again, whether the losses stayed
    finite over the same steps, and the metric's later stretches, if any."""
    found = stretches[0]
    series, values = found.series, found.series.values
    kind = nonfinite_kind(float(values[found.start]))
    before = np.flatnonzero(series.finite[: found.start])
    last_i = int(before[-1])
    last_value, last_step = float(values[last_i]), int(series.steps[last_i])
    losses = _companion_losses(run, found.metric)
    loss_text, loss_finite = _loss_sentence(run, losses, found.onset_step, found.end_step)
    evidence: Evidence = {
        "first_nonfinite_step": found.onset_step,
        "first_value": kind,
        "last_nonfinite_step": found.end_step,
        "nonfinite_points": found.nonfinite,
        "until_end_of_log": "yes" if found.to_end else "no",
        "last_finite_value": last_value,
        "last_finite_step": last_step,
        "loss_stayed_finite": "yes" if loss_finite else ("no" if losses else "no loss logged"),
    }
    if found.every is None:
        evidence["logged_points"] = found.end - found.start + 1
    else:
        evidence["evaluation_every_steps"] = found.every
    if losses:
        evidence["loss_metrics"] = ", ".join(losses)
    again = _finite_again(found)
    if again is not None:
        evidence["finite_again_step"] = again
    later = stretches[1:]
    if later:
        evidence["later_stretches"] = len(later)
    message = (
        f"{found.metric} was finite up to step {last_step} (last value {fmt(last_value)}) and is "
        f"{_what(kind)} {_where(found, last_step)}"
        + (f"; finite again from step {again}" if again is not None else "")
        + f". {_later_sentence(later)}{loss_text} {_usual_cause(kind)}"
    )
    where = "eval" if is_eval(found.metric) else "train"
    return Finding(
        detector=NAME,
        title=f"{found.metric} is {kind} "
        + (
            f"from step {found.onset_step}"
            if found.to_end
            else f"at steps {found.onset_step}-{found.end_step}"
        )
        + (" while the loss stayed finite" if loss_finite else ""),
        severity=Severity.WARNING,
        metric=found.metric,
        step_start=found.onset_step,
        step_end=found.end_step,
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


def _what(kind: str) -> str:
    return "undefined (NaN)" if kind == "NaN" else f"infinite ({kind})"


def _usual_cause(kind: str) -> str:
    if kind == "NaN":
        return (
            "A NaN in a metric is usually a 0/0 in how it is computed (an empty mask, an "
            "absent class): check that."
        )
    return "An infinite metric is usually a division by zero or a log(0) in how it is computed."


def _where(found: MetricBreak, last_finite_step: int) -> str:
    """Where the stretch is, in logged points, or in evaluations when NaN fills the rows
    between evaluations (counting those rows would describe placeholders)."""
    if found.every is not None:
        return (
            f"at the {found.missed} scheduled evaluations after step {last_finite_step} (one "
            f"every {fmt(found.every)} steps, the median interval of its evaluations; the "
            "rows between evaluations are NaN by design and not counted)"
        )
    points = found.end - found.start + 1
    if found.to_end:
        span = f"from step {found.onset_step} to the end of the log (step {found.end_step})"
    elif points == 1:
        span = f"at step {found.onset_step}"
    else:
        span = f"at steps {found.onset_step}-{found.end_step}"
    if found.nonfinite < points:
        share = f"{found.nonfinite} of the {points} logged points there"
    else:
        share = "both logged points there" if points == 2 else f"all {points} logged points there"
    return f"{span}: {share}"


def _finite_again(found: MetricBreak) -> int | None:
    """The step of the metric's next finite point after the stretch, if any."""
    after = np.flatnonzero(found.series.finite[found.end + 1 :])
    return int(found.series.steps[found.end + 1 + int(after[0])]) if after.size else None


def _later_sentence(later: list[MetricBreak]) -> str:
    if not later:
        return ""
    shown = ", ".join(
        f"{s.onset_step}-{s.end_step}" if s.end_step > s.onset_step else f"{s.onset_step}"
        for s in later[:3]
    )
    more = f" and {len(later) - 3} more" if len(later) > 3 else ""
    last = later[-1]
    tail = f" (the last to the end of the log, step {last.end_step})" if last.to_end else ""
    noun = "stretch" if len(later) == 1 else "stretches"
    return f"It is non-finite again in {len(later)} later {noun}: steps {shown}{more}{tail}. "


def _loss_sentence(run: Run, losses: list[str], lo: int, hi: int) -> tuple[str, bool]:
    """What the losses did over steps lo..hi, and whether all of them stayed finite."""
    if not losses:
        return "No loss is logged to tell a metric bug from a blow-up.", False
    counts = [(n, _nonfinite_between(run.metrics[n], lo, hi)) for n in losses]
    broken = [(n, k) for n, k in counts if k]
    if not broken:
        names = ", ".join(losses)
        verb = "stayed" if len(losses) == 1 else "all stayed"
        return (
            f"{names} {verb} finite over those steps, so the run itself did not blow up there.",
            True,
        )
    said = "; ".join(
        f"{n} is non-finite at {k} of its {_logged_between(run.metrics[n], lo, hi)} logged "
        f"points over steps {lo}-{hi}"
        for n, k in broken
    )
    return f"{said}.", False


def _logged_between(series: Series, lo: int, hi: int) -> int:
    return int(np.count_nonzero((series.steps >= lo) & (series.steps <= hi)))
