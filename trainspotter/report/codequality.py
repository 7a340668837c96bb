"""GitLab Code Quality report (`artifacts:reports:codequality`).

A JSON array with one issue per unsuppressed finding: `description` (detector, title,
steps), `check_name` (the detector id), `fingerprint` (stable across runs: the SHA-256 of
detector, metric, log path and start step, shared with SARIF), `severity` and `location`
(the log's path, line 1: a training log has no source line for a step).

Severity mapping: error -> critical, warning -> major, info -> info. Written as UTF-8
without a byte-order mark (GitLab rejects one). Log text is stripped of control
characters and ANSI escapes; `json.dumps` escapes the rest. Suppressed findings are left
out (GitLab has no notion of a suppressed issue); JSON and SARIF keep them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.paths import shown_path
from trainspotter.report.base import JsonDocumentReport
from trainspotter.report.common import (
    active_findings,
    finding_fingerprint,
    log_file,
    step_range,
)
from trainspotter.report.escape import terminal_text

SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def issue(finding: Finding, path: str) -> dict[str, Any]:
    """One Code Quality issue."""
    return {
        "type": "issue",
        "description": terminal_text(
            f"trainspotter {finding.detector}: {finding.title} ({step_range(finding)})"
        ),
        "check_name": finding.detector,
        "categories": ["Bug Risk"],
        "fingerprint": finding_fingerprint(finding, path),
        "severity": SEVERITY[finding.severity],
        "location": {"path": terminal_text(shown_path(path)), "lines": {"begin": 1}},
    }


def codequality_issues(analyses: Sequence[Analysis]) -> list[dict[str, Any]]:
    """Every unsuppressed finding of every log, in report order."""
    return [
        issue(finding, log_file(analysis.run))
        for analysis in analyses
        for finding in active_findings(analysis)
    ]


REPORT = JsonDocumentReport(
    name="codequality",
    description="GitLab Code Quality JSON (artifacts:reports:codequality)",
    document=codequality_issues,
)
