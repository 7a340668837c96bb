"""SARIF 2.1.0 for code scanning (`github/codeql-action/upload-sarif` and other viewers).

One SARIF run for the whole invocation (one tool, several logs):
- `tool.driver.rules`: one rule per registered detector (and per any other detector id
  that produced a finding): `id`, `name`, `shortDescription` (its summary),
  `fullDescription` (the docstring's first paragraph), `help.text` (the whole docstring).
- `results`: one per finding, suppressed ones included with a SARIF `suppressions`
  entry. `level` is error / warning / note; the location is the log file (a relative
  URI when the log lies under the working directory) at line 1, because a training log
  has no source line for a step; the steps, metric and evidence are in `properties`
  (log text there stripped of control characters and ANSI escapes).
  `partialFingerprints` carries the same stable fingerprint as the Code Quality report.

Validated in the tests against the official SARIF 2.1.0 JSON schema (shipped as test
data). Messages pass through `escape.sarif_text`, so a log cannot form an embedded link.
This module writes the document only: uploading it (`upload-sarif`) is the CI's job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainspotter import __version__
from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.paths import shown_path
from trainspotter.report.base import JsonDocumentReport
from trainspotter.report.common import (
    detector_doc,
    detector_ids,
    finding_fingerprint,
    log_file,
    path_uri,
    step_range,
)
from trainspotter.report.escape import sarif_text, terminal_text
from trainspotter.report.json_report import json_number

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT_KEY = "trainspotterFinding/v1"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(detector_id: str) -> dict[str, Any]:
    doc = detector_doc(detector_id)
    return {
        "id": doc.id,
        "name": "".join(part.capitalize() for part in doc.id.split("_")),
        "shortDescription": {"text": doc.summary},
        "fullDescription": {"text": doc.description},
        "help": {"text": doc.full},
    }


def _message(finding: Finding) -> str:
    text = f"{finding.title} ({step_range(finding)}). {finding.message}"
    if finding.fixes:
        text += " Fix: " + " / ".join(finding.fixes)
    return sarif_text(text)


def _result(finding: Finding, path: str, rule_index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.detector,
        "ruleIndex": rule_index,
        "level": LEVEL[finding.severity],
        "message": {"text": _message(finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": path_uri(path)},
                    "region": {"startLine": 1},
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: finding_fingerprint(finding, path)},
        "properties": {
            "findingId": finding.id,
            "metric": terminal_text(finding.metric),
            "stepStart": finding.step_start,
            "stepEnd": finding.step_end,
            "evidence": {
                terminal_text(str(k)): terminal_text(v) if isinstance(v, str) else json_number(v)
                for k, v in finding.evidence.items()
            },
        },
    }
    if finding.suppressed is not None:
        result["suppressions"] = [
            {"kind": "external", "justification": sarif_text(finding.suppressed)}
        ]
    return result


def sarif_log(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict."""
    ids = detector_ids(analyses)
    index = {detector_id: i for i, detector_id in enumerate(ids)}
    results = [
        _result(finding, log_file(analysis.run), index[finding.detector])
        for analysis in analyses
        for finding in analysis.findings
    ]
    artifacts: dict[str, dict[str, Any]] = {}
    for analysis in analyses:
        uri = path_uri(log_file(analysis.run))
        description = f"training log {shown_path(log_file(analysis.run))}"
        artifacts.setdefault(
            uri, {"location": {"uri": uri}, "description": {"text": sarif_text(description)}}
        )
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "trainspotter",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule(d) for d in ids],
                    }
                },
                "artifacts": list(artifacts.values()),
                "invocations": [{"executionSuccessful": True}],
                "results": results,
            }
        ],
    }


REPORT = JsonDocumentReport(
    name="sarif",
    description="SARIF 2.1.0 for code scanning (one rule per detector)",
    document=sarif_log,
)
