"""Run the enabled detectors on a Run, order the findings, and link related ones.

Order (the report contract): errors first, then warnings, then info; chronological within
a level; ids `F1`, `F2`, ... follow that order.

Linking: findings from different detectors whose step ranges touch (within a tolerance
of `LINK_TOLERANCE` of the run's step span, at least one logged interval) form one
incident. Inside an incident the causal chain is ordered by start step and, at equal
steps, by each detector's `causal_rank` (an LR change, then the loss, then the gradient
norm). Each finding's `cause` is the latest finding of its chain that started strictly
earlier (a detector that `drives_same_step`, the LR, also causes what starts at its own
step); findings that start together co-occur and neither causes the other. `related`
lists the others. The chain's head is the root cause a report shows first. Findings of
`whole_run` detectors (a plateau, noisy evals) are never linked.

This module knows nothing of files or output formats, and names no detector: each
detector declares its own rank and linking role (`detectors/base.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainspotter.detectors import DETECTORS
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


@dataclass(frozen=True)
class Analysis:
    """One log's result: the run, its ordered linked findings and the incident chains."""

    run: Run
    findings: list[Finding]
    chains: list[list[str]]
    """Each multi-finding incident as finding ids in causal order, root cause first."""
    detectors_run: list[str]

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


def run_detectors(run: Run, settings: AnalysisSettings) -> tuple[list[Finding], list[str]]:
    """Every enabled detector's findings (unordered) and the ids that ran."""
    findings: list[Finding] = []
    ran: list[str] = []
    for name, detector in DETECTORS.items():
        if settings.enabled is not None and name not in settings.enabled:
            continue
        params = settings.params.get(name) or detector.Params()
        found = detector.detect(run, params)
        if name in settings.severity:
            found = [dataclasses.replace(f, severity=settings.severity[name]) for f in found]
        findings.extend(found)
        ran.append(name)
    return findings, ran


def order_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; chronological within a level."""
    return sorted(
        findings,
        key=lambda f: (-int(f.severity), f.step_start, _causal_rank(f), f.metric),
    )


def link_findings(run: Run, findings: list[Finding]) -> tuple[list[Finding], list[list[str]]]:
    """Give ids, group touching findings into incidents, and set `cause`/`related`."""
    with_ids = [dataclasses.replace(f, id=f"F{i}") for i, f in enumerate(findings, start=1)]
    lo, hi = run.step_span() or (0, 0)
    tolerance = max(1, round((hi - lo) * LINK_TOLERANCE))
    candidates = sorted(
        (f for f in with_ids if not _whole_run(f)),
        key=lambda f: (f.step_start, _causal_rank(f)),
    )
    groups: list[list[Finding]] = []
    group_end = -(10**18)
    for f in candidates:
        if groups and f.step_start <= group_end + tolerance:
            groups[-1].append(f)
            group_end = max(group_end, f.step_end)
        else:
            groups.append([f])
            group_end = f.step_end
    chains: list[list[str]] = []
    updates: dict[str, Finding] = {}
    for group in groups:
        if len({f.detector for f in group}) < 2:
            continue
        ids = [f.id for f in group]
        chains.append(ids)
        for pos, f in enumerate(group):
            updates[f.id] = dataclasses.replace(
                f, cause=_cause(group[:pos], f), related=tuple(i for i in ids if i != f.id)
            )
    return [updates.get(f.id, f) for f in with_ids], chains


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
    found, ran = run_detectors(run, settings)
    linked, chains = link_findings(run, order_findings(found))
    return Analysis(run=run, findings=linked, chains=chains, detectors_run=ran)
