"""Run the enabled detectors on a Run, order the findings, and link related ones.

Order (the report contract): errors first, then warnings, then info; chronological within
a level; except that the findings of one incident are shown together, in their causal
chain's order, where the incident's worst finding would stand. Ids `F1`, `F2`, ... follow
the shown order, so a chain reads in increasing ids from its root cause.

Linking: findings from different detectors whose step ranges touch (within a tolerance
of `LINK_TOLERANCE` of the run's step span, at least one logged interval) form one
incident. Inside an incident the causal chain is ordered by start step and, at equal
steps, by each detector's `causal_rank` (an LR change, then the loss, then the gradient
norm). Each finding's `cause` is the latest finding of its chain that started strictly
earlier (a detector that `drives_same_step`, the LR, also causes what starts at its own
step); findings that start together co-occur and neither causes the other. `related`
lists the others. The chain's head is the root cause a report shows first. A finding
that recovered (`evidence["recovered_at_step"]`) reaches only to its recovery: what starts
later is another incident (a spike that recovered long before a NaN is not its cause).
Findings of `whole_run` detectors (a plateau, noisy evals) are never linked.

Checks: before it runs, each enabled detector says what it would examine or why it
abstains (`scope`, see `detectors/base.py`); an abstaining detector is not run. The result
is `Analysis.checks`, one `Check` per registered detector (ran / abstained / disabled), so
a report can say what was checked and a log with nothing to check is never "healthy".

This module knows nothing of files or output formats, and names no detector: each
detector declares its own rank, linking role and scope (`detectors/base.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainspotter.compare.model import Comparison
from trainspotter.detectors import DETECTORS
from trainspotter.detectors.base import Abstain
from trainspotter.model import Finding, Run, Severity

LINK_TOLERANCE = 0.02
"""Findings within 2% of the run's step span of each other may be one incident."""

UNREGISTERED_RANK = 9
"""The causal rank of a finding whose detector is not registered: last at its step."""


def _causal_rank(finding: Finding) -> int:
    detector = DETECTORS.get(finding.detector)
    return UNREGISTERED_RANK if detector is None else detector.causal_rank


def _whole_run(finding: Finding) -> bool:
    detector = DETECTORS.get(finding.detector)
    return detector is not None and detector.whole_run


def _drives_same_step(finding: Finding) -> bool:
    detector = DETECTORS.get(finding.detector)
    return detector is not None and detector.drives_same_step


@dataclass(frozen=True)
class AnalysisSettings:
    """Which detectors run, with which parameters and severity overrides (from config)."""

    enabled: frozenset[str] | None = None
    """Detector ids to run; None means all registered detectors."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Detector id -> Params instance; missing ids use the defaults."""
    severity: Mapping[str, Severity] = field(default_factory=dict)
    """Detector id -> severity that replaces the detector's own."""


RAN = "ran"
ABSTAINED = "abstained"
DISABLED = "disabled"


@dataclass(frozen=True)
class Check:
    """What one detector did with one log."""

    detector: str
    status: str
    """`ran`, `abstained` (nothing it could examine) or `disabled` (by the config)."""
    metrics: tuple[str, ...] = ()
    """The metrics it examined (status `ran`); empty when the detector did not say."""
    reason: str | None = None
    """Why it abstained or was disabled."""


@dataclass(frozen=True)
class Analysis:
    """One log's result: the run, its ordered linked findings and the incident chains."""

    run: Run
    findings: list[Finding]
    chains: list[list[str]]
    """Each multi-finding incident as finding ids in causal order, root cause first."""
    detectors_run: list[str]
    checks: list[Check] = field(default_factory=list)
    """One per registered detector, in registry order: ran on which metrics, or why not
    (a detector that `needs_baseline` only when the run was compared with one)."""
    comparison: Comparison | None = None
    """Set when the run was compared with a baseline or checked against `rules:`
    (`trainspotter.compare`): what was compared, for every report."""

    @property
    def worst(self) -> Severity | None:
        """The highest severity among unsuppressed findings, or None."""
        active = [f.severity for f in self.findings if f.suppressed is None]
        return max(active) if active else None

    def counts(self) -> dict[str, int]:
        """Unsuppressed findings per severity label."""
        out = {s.label: 0 for s in sorted(Severity, reverse=True)}
        for f in self.findings:
            if f.suppressed is None:
                out[f.severity.label] += 1
        return out

    def by_id(self, finding_id: str) -> Finding:
        """The finding with this id."""
        for f in self.findings:
            if f.id == finding_id:
                return f
        raise KeyError(finding_id)


def run_detectors(
    run: Run, settings: AnalysisSettings
) -> tuple[list[Finding], list[str], list[Check]]:
    """Every enabled detector's findings (unordered), the ids that ran, and one check per
    registered detector. A detector whose scope abstains is not run."""
    findings: list[Finding] = []
    ran: list[str] = []
    checks: list[Check] = []
    for name, detector in DETECTORS.items():
        if detector.needs_baseline:
            continue  # compares two runs: `trainspotter.compare` runs it, with a baseline
        if settings.enabled is not None and name not in settings.enabled:
            checks.append(Check(name, DISABLED, reason="disabled in the configuration"))
            continue
        params = settings.params.get(name) or detector.Params()
        scope = detector.scope(run, params)
        if isinstance(scope, Abstain):
            checks.append(Check(name, ABSTAINED, reason=scope.reason))
            continue
        found = detector.detect(run, params)
        if name in settings.severity:
            found = [dataclasses.replace(f, severity=settings.severity[name]) for f in found]
        findings.extend(found)
        ran.append(name)
        checks.append(Check(name, RAN, metrics=scope.metrics))
    return findings, ran, checks


def order_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; chronological within a level."""
    return sorted(
        findings,
        key=lambda f: (-int(f.severity), f.step_start, _causal_rank(f), f.metric),
    )


def link_findings(run: Run, findings: list[Finding]) -> tuple[list[Finding], list[list[str]]]:
    """Group touching findings into incidents, put each incident's findings together in
    chain order, give ids in that order, and set `cause`/`related`.

    `findings` comes in report order (`order_findings`). An incident takes the place of
    its first finding in that order (its worst one), and its findings follow in causal
    order, so a chain reads F1, F2, ... from its root cause. A finding that says where it
    came back (`evidence["recovered_at_step"]`) reaches no further: what starts after its
    recovery is a new incident, however close (a spike that recovered is not the cause of
    a later blow-up)."""
    lo, hi = run.step_span() or (0, 0)
    tolerance = max(1, round((hi - lo) * LINK_TOLERANCE))
    position = {id(f): i for i, f in enumerate(findings)}
    candidates = sorted(
        (f for f in findings if not _whole_run(f)),
        key=lambda f: (f.step_start, _causal_rank(f)),
    )
    groups: list[list[Finding]] = []
    group_reach = -(10**18)
    for f in candidates:
        if groups and f.step_start <= group_reach:
            groups[-1].append(f)
            group_reach = max(group_reach, _reach(f, tolerance))
        else:
            groups.append([f])
            group_reach = _reach(f, tolerance)
    incidents = [g for g in groups if len({f.detector for f in g}) >= 2]
    lead_of = {id(f): g for g in incidents for f in g}
    ordered: list[Finding] = []
    for f in findings:
        group = lead_of.get(id(f))
        if group is None:
            ordered.append(f)
        elif min(group, key=lambda m: position[id(m)]) is f:
            ordered.extend(group)
    new_id = {id(f): f"F{i}" for i, f in enumerate(ordered, start=1)}
    with_ids = [dataclasses.replace(f, id=new_id[id(f)]) for f in ordered]
    by_old = {id(old): new for old, new in zip(ordered, with_ids, strict=True)}
    chains: list[list[str]] = []
    updates: dict[str, Finding] = {}
    for group in incidents:
        members = [by_old[id(f)] for f in group]
        ids = [f.id for f in members]
        chains.append(ids)
        for pos, f in enumerate(members):
            updates[f.id] = dataclasses.replace(
                f, cause=_cause(members[:pos], f), related=tuple(i for i in ids if i != f.id)
            )
    return [updates.get(f.id, f) for f in with_ids], chains


def _reach(finding: Finding, tolerance: int) -> int:
    """The last step a later finding may start at to belong to this finding's incident."""
    recovered = finding.evidence.get("recovered_at_step")
    if isinstance(recovered, int) and recovered >= finding.step_end:
        return min(finding.step_end + tolerance, recovered)
    return finding.step_end + tolerance


def _cause(earlier: list[Finding], finding: Finding) -> str | None:
    """The id of the latest finding before `finding` in its chain that started strictly
    earlier (or at the same step, for an LR change); None for co-occurring findings."""
    for candidate in reversed(earlier):
        if candidate.step_start < finding.step_start or (
            _drives_same_step(candidate) and candidate.detector != finding.detector
        ):
            return candidate.id
    return None


def analyze(run: Run, settings: AnalysisSettings | None = None) -> Analysis:
    """Detect, order and link: the whole analysis of one run."""
    settings = settings or AnalysisSettings()
    # A log may hold any float (1e308, a denormal): numpy's overflow and underflow
    # warnings would only be noise on stderr; detectors handle the inf/nan they yield.
    with np.errstate(all="ignore"):
        found, ran, checks = run_detectors(run, settings)
    linked, chains = link_findings(run, order_findings(found))
    return Analysis(run=run, findings=linked, chains=chains, detectors_run=ran, checks=checks)
