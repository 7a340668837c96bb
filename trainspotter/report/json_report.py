"""The JSON report: the machine-readable contract other tools read.

Shape (versioned by `schema_version`; the JSON Schema ships as
`trainspotter/schemas/report.schema.json` and a test validates real outputs against it):

- one log: `{schema_version, tool, run, summary, findings, checks}`
- several logs: `{schema_version, tool, logs: [{run, summary, findings, checks}, ...], summary}`

`checks` (schema 1.1): per detector, `{detector, status, metrics, reason}`: `ran` on the
listed metrics, `abstained` (nothing it could examine, `reason` says what is missing) or
`disabled` by the configuration.

`comparison` (schema 1.2, only on a log compared with a baseline or checked against
`rules:`): the baseline, the alignment axis, each compared value (final and best eval
values, loss curves, step time) with the tolerance and verdict, each rule's result, and
the detector ids only the candidate has. Findings of that comparison have the detector
id `regression`.

Non-finite numbers (a NaN loss in evidence) are written as the strings "NaN", "Infinity"
and "-Infinity", so the output is strict JSON that every parser accepts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trainspotter import __version__
from trainspotter.analysis import Analysis, Check
from trainspotter.model import Finding, Run, Severity
from trainspotter.report import comparison
from trainspotter.report.base import JsonDocumentReport

SCHEMA_VERSION = "1.2"


def json_number(value: Any) -> Any:
    """A JSON-safe value: non-finite floats become strings, numpy scalars plain numbers."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) or hasattr(value, "__float__"):
        number = float(value)
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        if number.is_integer() and not isinstance(value, float):
            return int(number)
        return number
    return str(value)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return json_number(value)


def run_dict(run: Run) -> dict[str, Any]:
    """The `run` object: source and per-metric coverage, plus reader metadata."""
    metrics = {
        name: {
            "count": len(series),
            "first_step": int(series.steps[0]) if len(series) else None,
            "last_step": int(series.steps[-1]) if len(series) else None,
            "nonfinite": series.nonfinite_count(),
        }
        for name, series in sorted(run.metrics.items())
    }
    return {
        "source_format": run.source_format,
        "source_path": run.source_path,
        "metrics": metrics,
        "meta": _json_safe(run.meta),
    }


def finding_dict(finding: Finding) -> dict[str, Any]:
    """One finding with every field of the contract."""
    return {
        "id": finding.id,
        "detector": finding.detector,
        "title": finding.title,
        "severity": finding.severity.label,
        "metric": finding.metric,
        "step_start": finding.step_start,
        "step_end": finding.step_end,
        "message": finding.message,
        "evidence": _json_safe(finding.evidence),
        "fixes": list(finding.fixes),
        "related": list(finding.related),
        "cause": finding.cause,
        "suppressed": finding.suppressed,
    }


def check_dict(check: Check) -> dict[str, Any]:
    """One detector's check: status, the metrics it examined, why it did not run."""
    return {
        "detector": check.detector,
        "status": check.status,
        "metrics": list(check.metrics),
        "reason": check.reason,
    }


def summary_dict(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """Counts of unsuppressed findings by severity, the worst severity, the chains."""
    by_severity = {s.label: 0 for s in sorted(Severity, reverse=True)}
    suppressed = 0
    for analysis in analyses:
        for label, count in analysis.counts().items():
            by_severity[label] += count
        suppressed += sum(1 for f in analysis.findings if f.suppressed is not None)
    worst = [a.worst for a in analyses if a.worst is not None]
    out: dict[str, Any] = {
        "total_findings": sum(by_severity.values()),
        "by_severity": by_severity,
        "max_severity": max(worst).label if worst else None,
        "suppressed": suppressed,
    }
    if len(analyses) == 1:
        out["chains"] = analyses[0].chains
        out["detectors_run"] = analyses[0].detectors_run
    else:
        out["logs"] = len(analyses)
    return out


def analysis_dict(analysis: Analysis) -> dict[str, Any]:
    """`{run, summary, findings, checks}` for one log, and `comparison` when it was
    compared with a baseline or checked against rules."""
    out = {
        "run": run_dict(analysis.run),
        "summary": summary_dict([analysis]),
        "findings": [finding_dict(f) for f in analysis.findings],
        "checks": [check_dict(c) for c in analysis.checks],
    }
    if analysis.comparison is not None:
        out["comparison"] = comparison.comparison_dict(analysis.comparison, json_number)
    return out


def report_dict(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """The whole document for one or several logs."""
    head: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "trainspotter", "version": __version__},
    }
    if len(analyses) == 1:
        return head | analysis_dict(analyses[0])
    return head | {
        "logs": [analysis_dict(a) for a in analyses],
        "summary": summary_dict(analyses),
    }


REPORT = JsonDocumentReport(
    name="json",
    description="machine-readable report (schema: trainspotter/schemas/report.schema.json)",
    document=report_dict,
)
