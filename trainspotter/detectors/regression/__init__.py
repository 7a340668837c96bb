"""regression: a candidate run worse than a baseline run (`trainspotter compare`, the gate's
`baseline:`).

A subpackage: `align` puts the baseline on the candidate's steps (by epoch or tokens when
logged), `checks` measures each compared quantity against the runs' own noise, this
module turns what regressed into findings. On a single run it finds nothing (there is
nothing to compare), so analysis does not run it (`needs_baseline`); `trainspotter.compare`
calls `compare`.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainspotter.compare.model import ComparedValue, Comparison
from trainspotter.detectors.base import Abstain, Detector, Scope, fmt
from trainspotter.detectors.regression.align import align
from trainspotter.detectors.regression.checks import (
    WorseStretch,
    curve_values,
    eval_values,
    timing_value,
)
from trainspotter.detectors.regression.params import NAME, RegressionParams
from trainspotter.model import Evidence, Finding, Run, Severity

__all__ = ["DETECTOR", "NAME", "RegressionDetector", "RegressionParams"]


class RegressionDetector(
    Detector,
    name=NAME,
    params=RegressionParams,
    causal_rank=8,
    whole_run=True,
    needs_baseline=True,
    summary="A candidate run worse than a baseline run (eval metrics, loss, speed, new findings).",
):
    """Finds where a candidate run is worse than a baseline run (a stored run from main).

    **What it finds.**
    - A quality eval metric (loss, accuracy, F1, ...; `eval_noise.higher_is_better` says
      which way is better) whose *final* value is worse than the baseline's by more than
      the tolerance: *error* (the final checkpoint is what ships). Its *best* value worse
      while the final is not: *warning*.
    - A training loss worse than the baseline's at matched steps over a sustained stretch:
      *warning*.
    - The median step time (or throughput, or the wall-clock seconds per step) slower than
      the baseline's: *warning*.
    - A detector that reports on the candidate and not on the baseline (a pathology the
      baseline did not have): the new finding's severity, at most *warning* (the finding
      itself is in the report with its own severity).

    **Algorithm.** Runs are aligned by step, or by tokens or epoch when both log them and
    their steps per epoch differ (`align.py`); the baseline is re-expressed in the
    candidate's steps. *Eval:* each run's final value and best value (min, or max for a
    higher-is-better metric) against the baseline's; the tolerance is the larger of
    `noise_z` (3) x the combined evaluation-to-evaluation jitter of both runs (sigma from
    second differences over the later half of each run's evaluations,
    `stats.second_difference_sigma`) and `margin` (1.0) x the baseline's level (its value,
    or its error 1 - value for a higher-is-better metric in [0, 1]); metrics with fewer
    than `min_eval_points` (5) evaluations in a run are not compared. *Curves:* the
    log-ratio candidate / baseline at the candidate's steps (baseline interpolated),
    smoothed by a centred rolling median of `curve_window_fraction` (5%) of the points;
    worse where it exceeds the larger of log(`curve_min_ratio`) and `noise_z` standard
    errors of that median (point-to-point noise, `stats.noise_scale`, of both curves); a
    regression when one such stretch covers `curve_min_fraction` (25%) of the matched
    steps; curves with fewer than `min_curve_points` (20) matched steps are not compared.
    *Timing:* medians of log step time (or -log throughput, or log wall-clock seconds per
    step) over the common steps, at least `min_timing_points` (20) in each run; a
    regression when the ratio exceeds the larger of 1 + `min_slowdown` (1.25) and
    `noise_z` x the drift of 10 block medians within each run. *Pathologies:* detector
    ids of unsuppressed candidate findings minus the baseline's.

    **Defaults and why.** The eval jitter alone does not measure how far two seeds of one
    recipe end apart: on the example generator's recipe (cosine decay to 0, one fixed eval
    set) consecutive evaluations at the end differ by ~5e-4 while two seeds' final eval
    losses differ by up to 60% (0.057 against 0.091, 4 of 5 calibration pairs 9-78 jitter
    sigmas apart), because different initial weights and data order land in different
    minima. So `margin` 1.0 (twice the baseline's loss or error) is the default floor, and
    the jitter term (`noise_z` 3) governs noisy evaluations (a small eval set), where it is
    the larger. Measured on 20 held-out seed pairs (`benchmarks/bench_compare_seeds.py`):
    the largest final eval loss ratio was 1.37 (37% of the tolerance), and every pair was
    silent; a 10x lower LR ended 9x worse and a model with 8 hidden units instead of 64
    4.5x worse. `curve_min_ratio` 1.5: near convergence two seeds' training losses differ
    by tens of percent at one step (the largest smoothed stretch ratio in those 20 pairs
    was 1.26, with single points up to 2.9x) while a worse LR or a smaller model stays 7x
    or more above. `curve_min_fraction` 25%: an early stretch where one seed takes off
    later is not a regression. `min_slowdown` 25%: a shared machine moves step times by
    10-20% between two runs; a slower pipeline is a step change (the example: +189%).
    `min_eval_points` 5 and `min_curve_points` 20: below them no noise estimate exists.

    **False-positive modes.** A candidate trained on a busier machine reads as a
    throughput regression (the drift term helps only when the load moved within a run),
    and its own throughput finding then counts as new; a deliberate change of eval set or
    metric definition reads as a regression; runs of different length are compared at
    their own ends; a recipe whose seeds differ by more than 2x (on the edge of
    stability) gets flagged. The other side: with the default `margin`, a regression
    smaller than 2x the baseline's loss or error is not reported; a team that needs a
    tighter gate sets `margin` (0.05 for "main + 5%") or absolute `rules:`.

    **Example.** `examples/compare/lr_too_low/metrics.csv`: an error at step 1000 (eval/loss
    ends at 0.5098, the baseline at 0.05657) and a warning on train/loss from step 33, when
    compared against `examples/compare/baseline/metrics.csv`.
    Silent on `examples/compare/seed_2/metrics.csv` (the baseline's recipe, seed 2).
    """

    def scope(self, run: Run, params: RegressionParams) -> Scope | Abstain:
        """On one run there is nothing to compare with."""
        return Abstain("no baseline run to compare with (see `trainspotter compare`)")

    def detect(self, run: Run, params: RegressionParams) -> list[Finding]:
        """Nothing: a regression needs a baseline (`compare`)."""
        return []

    def compare(
        self,
        candidate: Run,
        baseline: Run,
        findings: tuple[Sequence[Finding], Sequence[Finding]],
        params: RegressionParams,
    ) -> tuple[list[Finding], Comparison]:
        """The regression findings of `candidate` against `baseline`, and the comparison
        every report shows. `findings` are the (candidate's, baseline's) own findings."""
        aligned = align(candidate, baseline)
        notes = [aligned.note] if aligned.note else []
        evals, eval_notes = eval_values(candidate, aligned.baseline, params)
        curves, curve_notes = curve_values(candidate, aligned.baseline, params)
        timing = timing_value(candidate, aligned.baseline, params)
        notes += eval_notes + curve_notes
        out = _eval_findings(evals, aligned.axis)
        out += [_curve_finding(v, s) for v, s in curves if s is not None]
        if timing is not None and timing.regressed:
            out.append(_timing_finding(timing, candidate))
        own, theirs = findings
        baseline_ids = sorted({f.detector for f in theirs if f.suppressed is None})
        new = [f for f in own if f.suppressed is None and f.detector not in baseline_ids]
        new = [f for f in new if f.detector != NAME]
        new_ids = sorted({f.detector for f in new})
        out += [_new_finding(d, [f for f in new if f.detector == d]) for d in new_ids]
        values = [*evals, *(v for v, _ in curves), *([timing] if timing else [])]
        comparison = Comparison(
            baseline=baseline,
            axis=aligned.axis,
            values=tuple(values),
            aligned_baseline=aligned.baseline,
            baseline_detectors=tuple(baseline_ids),
            new_detectors=tuple(new_ids),
            notes=tuple(notes),
        )
        return out, comparison


def _eval_findings(values: list[ComparedValue], axis: str) -> list[Finding]:
    """One finding per eval metric: error when its final value regressed, else warning
    when its best did."""
    out: list[Finding] = []
    for metric in dict.fromkeys(v.metric for v in values):
        final = next(v for v in values if v.metric == metric and v.quantity == "final")
        best = next(v for v in values if v.metric == metric and v.quantity == "best")
        worst = final if final.regressed else best
        if not worst.regressed:
            continue
        which = "final" if final.regressed else "best"
        step = worst.candidate_step if worst.candidate_step is not None else 0
        message = (
            f"{metric} {which} value {fmt(worst.candidate)} at step {step} against the "
            f"baseline's {fmt(worst.baseline)} at its step {worst.baseline_step}: worse "
            f"by {fmt(worst.worse_by)}, beyond the tolerance {fmt(worst.tolerance)} "
            f"({worst.tolerance_basis})."
        )
        if which == "best":
            message += f" The final value ({fmt(final.candidate)}) is within tolerance."
        evidence: Evidence = {
            f"{q.quantity}_{side}": getattr(q, side)
            for q in (final, best)
            for side in ("candidate", "baseline")
        }
        evidence |= {"worse_by": worst.worse_by, "tolerance": worst.tolerance, "axis": axis}
        out.append(
            Finding(
                detector=NAME,
                title=f"{metric} {which} value worse than the baseline's",
                severity=Severity.ERROR if which == "final" else Severity.WARNING,
                metric=metric,
                step_start=step,
                step_end=step,
                message=message,
                evidence=evidence,
                fixes=(
                    "Diff the candidate's configuration and code against the baseline's "
                    "(learning rate, model size, data, preprocessing).",
                    "If the change is intended, update the stored baseline run.",
                ),
            )
        )
    return out


def _curve_finding(value: ComparedValue, stretch: WorseStretch) -> Finding:
    return Finding(
        detector=NAME,
        title=f"{value.metric} higher than the baseline's over a sustained stretch",
        severity=Severity.WARNING,
        metric=value.metric,
        step_start=stretch.first_step,
        step_end=stretch.last_step,
        message=(
            f"{value.metric} stayed above the baseline's at matched steps from step "
            f"{stretch.first_step} to {stretch.last_step} ({stretch.points} logged points): "
            f"median ratio {stretch.median_ratio:.3g} over that stretch. At step "
            f"{value.candidate_step}: {fmt(value.candidate)} against the baseline's "
            f"{fmt(value.baseline)} (interpolated)."
        ),
        evidence={
            "median_ratio": stretch.median_ratio,
            "points": stretch.points,
            "ratio_threshold": value.tolerance + 1.0,
            "last_candidate": value.candidate,
            "last_baseline": value.baseline,
        },
        fixes=(
            "Compare the learning rate schedules and model sizes of the two runs.",
            "Check the candidate's data pipeline for a change in what reaches the model.",
        ),
    )


def _timing_finding(value: ComparedValue, candidate: Run) -> Finding:
    span = candidate.step_span() or (0, 0)
    return Finding(
        detector=NAME,
        title=f"{value.metric} {value.worse_by:.0%} slower than the baseline's",
        severity=Severity.WARNING,
        metric=value.metric,
        step_start=span[0],
        step_end=span[1],
        message=(
            f"Median {value.metric} over the common steps: {fmt(value.candidate)} against "
            f"the baseline's {fmt(value.baseline)}, {value.worse_by:.0%} slower (more "
            f"than the tolerance {value.tolerance:.0%}: {value.tolerance_basis})."
        ),
        evidence={
            "median_candidate": value.candidate,
            "median_baseline": value.baseline,
            "slowdown": value.worse_by,
            "tolerance": value.tolerance,
        },
        fixes=(
            "Profile the data pipeline and the step (new per-sample work, logging, syncs).",
            "Rerun both on the same, otherwise idle machine before trusting the timing.",
        ),
    )


def _new_finding(detector: str, found: list[Finding]) -> Finding:
    first = min(found, key=lambda f: f.step_start)
    worst = max(f.severity for f in found)
    titles = "; ".join(dict.fromkeys(f.title for f in found))
    return Finding(
        detector=NAME,
        title=f"new {detector} finding(s) the baseline does not have",
        severity=min(worst, Severity.WARNING),
        metric=first.metric,
        step_start=first.step_start,
        step_end=max(f.step_end for f in found),
        message=(
            f"The candidate has {len(found)} {detector} finding(s) and the baseline none: {titles}."
        ),
        evidence={"new_detector": detector, "count": len(found)},
        fixes=("See the candidate's own finding(s) above for the cause.",),
    )


DETECTOR = RegressionDetector()
