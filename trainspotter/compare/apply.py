"""A candidate's analysis, compared with a baseline's and checked against `rules:`.

`compare_analyses` runs the `regression` detector (when a baseline is given and the
detector is enabled) and the threshold rules, merges their findings into the
candidate's, orders and links them again (ids `F1`, ... follow the new order), applies
the detector's configured severity and the `ignore` rules, and attaches the
`Comparison` every report shows. The exit rule (`trainspotter.verdict`) then treats
`regression` findings like any other.
"""

from __future__ import annotations

import dataclasses

from trainspotter.analysis import RAN, Analysis, Check, link_findings, order_findings
from trainspotter.compare.model import Comparison
from trainspotter.compare.rules import check_rules
from trainspotter.config import Config
from trainspotter.detectors.regression import DETECTOR, NAME, RegressionParams
from trainspotter.model import Finding


def _unlinked(finding: Finding) -> Finding:
    """The finding as a detector made it: analysis gives ids and links again."""
    return dataclasses.replace(finding, id="", related=(), cause=None)


def compare_analyses(candidate: Analysis, baseline: Analysis | None, config: Config) -> Analysis:
    """The candidate's analysis with `regression` findings and the comparison attached;
    unchanged when there is neither a baseline nor a rule (or the detector is disabled)."""
    settings = config.analysis_settings()
    enabled = settings.enabled is None or NAME in settings.enabled
    if not enabled or (baseline is None and not config.rules):
        return candidate
    found: list[Finding] = []
    comparison = Comparison(baseline=None)
    if baseline is not None:
        params = settings.params.get(NAME) or RegressionParams()
        pair = (candidate.findings, baseline.findings)
        found, comparison = DETECTOR.compare(candidate.run, baseline.run, pair, params)
    rule_findings, results = check_rules(candidate.run, config.rules)
    found += rule_findings
    comparison = dataclasses.replace(comparison, rules=tuple(results))
    if NAME in settings.severity:
        found = [dataclasses.replace(f, severity=settings.severity[NAME]) for f in found]
    merged = [_unlinked(f) for f in candidate.findings] + found
    linked, chains = link_findings(candidate.run, order_findings(merged))
    metrics = tuple(sorted({v.metric for v in comparison.values} | {r.metric for r in results}))
    check = Check(NAME, RAN, metrics=metrics)
    compared = dataclasses.replace(
        candidate,
        findings=linked,
        chains=chains,
        detectors_run=[*candidate.detectors_run, NAME],
        checks=[*candidate.checks, check],
        comparison=comparison,
    )
    return config.suppress(compared)
