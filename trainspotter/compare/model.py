"""What a comparison of a candidate run with a baseline run holds, for every report.

Frozen data only; computed by the `regression` detector and `rules.py`, attached to the
candidate's `Analysis.comparison` by `apply.py`, shown by the report formats. Values are
raw logged values at named steps (or a median of named points, as `quantity` says).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trainspotter.model import Run, Series


@dataclass(frozen=True)
class ComparedValue:
    """One quantity of one metric in both runs, and whether the candidate is worse."""

    metric: str
    quantity: str
    """`final` (last logged value), `best` (min or max over the run), `median` (of the
    step time or throughput over the common stretch) or `curve` (the loss at matched
    steps, as the smoothed ratio candidate / baseline)."""
    candidate: float
    baseline: float
    candidate_step: int | None
    """Where the candidate's value was logged (None for a median or a curve)."""
    baseline_step: int | None
    """Where the baseline's value was logged, in the baseline's own steps."""
    worse_by: float
    """How much worse the candidate is, in the metric's units (negative: better); for
    `median` and `curve`, as a ratio minus one (0.25: 25% slower / higher)."""
    tolerance: float
    """The largest `worse_by` that is not a regression (the noise or the margin)."""
    tolerance_basis: str
    """Where the tolerance comes from, in words ("3 x eval jitter 0.0021 ...")."""
    regressed: bool


@dataclass(frozen=True)
class RuleResult:
    """One `rules:` entry checked on the candidate's final value."""

    metric: str
    bound: str
    """`max` or `min`."""
    limit: float
    value: float | None
    """The final logged value; None when the metric is not logged (the rule fails)."""
    step: int | None
    passed: bool


@dataclass(frozen=True)
class Comparison:
    """A candidate's comparison with its baseline (when there is one) and its rules."""

    baseline: Run | None
    """The baseline run; None when only `rules:` were checked."""
    axis: str = "step"
    """How the runs were aligned: `step`, `epoch` or `tokens`."""
    values: tuple[ComparedValue, ...] = ()
    rules: tuple[RuleResult, ...] = ()
    aligned_baseline: Mapping[str, Series] = field(default_factory=dict)
    """The baseline's metrics with their steps mapped onto the candidate's (the same
    epoch or token count), for charts that overlay both runs."""
    baseline_detectors: tuple[str, ...] = ()
    """Detector ids of the baseline's unsuppressed findings."""
    new_detectors: tuple[str, ...] = ()
    """Detector ids the candidate has and the baseline has not."""
    notes: tuple[str, ...] = ()
    """What could not be compared, and why."""

    @property
    def regressions(self) -> list[ComparedValue]:
        """The compared values on which the candidate regressed."""
        return [v for v in self.values if v.regressed]
