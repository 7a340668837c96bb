"""Absolute threshold rules (`rules:` in `.trainspotter.yml`) on a run's final values.

For teams that gate on a number: `{metric: eval/loss, max: 0.35}` fails when the last
finite value of `eval/loss` is above 0.35, `{metric: eval/accuracy, min: 0.9}` when the
last accuracy is below 0.9. A rule whose metric the run does not log fails too (a gate on
a number that is not there must not pass). Findings carry the `regression` detector id,
so `detectors.regression.severity`, `ignore` and `fail_on` treat them like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.compare.model import RuleResult
from trainspotter.detectors.regression.params import NAME
from trainspotter.model import Finding, Run, Severity


@dataclass(frozen=True)
class ThresholdRule:
    """One `rules:` entry: bounds on a metric's final value (at least one is set)."""

    metric: str
    max: float | None = None
    min: float | None = None
    line: int = 0
    """Where the entry is in the config file (for messages)."""


def _final(run: Run, metric: str) -> tuple[str, float, int] | None:
    """(name in the run, last finite value, its step) of `metric` (its canonical name
    is tried too: `eval_loss` finds `eval/loss`)."""
    for name in dict.fromkeys((metric, names.normalize(metric))):
        series = run.metrics.get(name)
        if series is None:
            continue
        finite = np.flatnonzero(series.finite)
        if finite.size:
            last = int(finite[-1])
            return name, float(series.values[last]), int(series.steps[last])
    return None


def check_rules(run: Run, rules: Sequence[ThresholdRule]) -> tuple[list[Finding], list[RuleResult]]:
    """A finding per failed bound, and every bound's result."""
    findings: list[Finding] = []
    results: list[RuleResult] = []
    span = run.step_span() or (0, 0)
    for rule in rules:
        found = _final(run, rule.metric)
        for bound, limit in (("max", rule.max), ("min", rule.min)):
            if limit is None:
                continue
            if found is None:
                results.append(RuleResult(rule.metric, bound, limit, None, None, passed=False))
                findings.append(_missing(rule.metric, bound, limit, span))
                continue
            metric, value, step = found
            passed = value <= limit if bound == "max" else value >= limit
            results.append(RuleResult(metric, bound, limit, value, step, passed))
            if not passed:
                findings.append(_violated(metric, bound, limit, value, step))
    return findings, results


def _violated(metric: str, bound: str, limit: float, value: float, step: int) -> Finding:
    relation = "above the maximum" if bound == "max" else "below the minimum"
    return Finding(
        detector=NAME,
        title=f"{metric} final value {relation} of a rule",
        severity=Severity.ERROR,
        metric=metric,
        step_start=step,
        step_end=step,
        message=(
            f"{metric} ended at {value:.6g} (step {step}), {relation} {limit:g} set in the "
            f"configuration's `rules`."
        ),
        evidence={"value": value, bound: limit},
        fixes=(
            "Find what changed against the last run that met the rule.",
            "If the rule is out of date, change it in .trainspotter.yml.",
        ),
    )


def _missing(metric: str, bound: str, limit: float, span: tuple[int, int]) -> Finding:
    return Finding(
        detector=NAME,
        title=f"{metric} not logged: a rule cannot be checked",
        severity=Severity.ERROR,
        metric=metric,
        step_start=span[0],
        step_end=span[1],
        message=(
            f"The configuration's `rules` bound {metric} ({bound} {limit:g}), but the log "
            "has no finite value of it."
        ),
        evidence={bound: limit},
        fixes=(
            "Log the metric, or map its name with `metrics.aliases`.",
            "Remove the rule if this log is not meant to have it.",
        ),
    )
