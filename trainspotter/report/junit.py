"""JUnit XML: one test suite per log, one test case per detector.

CI systems that read JUnit (GitLab `artifacts:reports:junit`, Jenkins, GitHub test
reporters) then show "divergence failed on run.json" next to the unit tests. A test case
fails when its detector found something at or above the gate's level (`--fail-on`);
each such finding is one `<failure>` line in the body and the first one's title is the
failure message. Findings below the level, and suppressed ones, are listed in the test
case's `<system-out>` without failing it. A detector that did not run for a log (disabled
in config) or abstained (nothing it could examine: "throughput: no step time or throughput
metric") is a skipped test case with the reason, not a pass.

Built with `xml.etree.ElementTree`, which escapes markup; `escape.xml_text` removes what
XML 1.0 forbids (control characters, ANSI escapes), so any log text gives valid XML.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from trainspotter.analysis import RAN, Analysis
from trainspotter.model import Finding, Severity
from trainspotter.paths import shown_path
from trainspotter.report.base import TextReport
from trainspotter.report.common import detector_ids, log_label, step_range
from trainspotter.report.escape import format_number, xml_text


def _finding_line(finding: Finding) -> str:
    evidence = ", ".join(f"{k}={format_number(v)}" for k, v in finding.evidence.items())
    line = (
        f"{finding.id} {finding.severity.label} {step_range(finding)} [{finding.metric}] "
        f"{finding.title}: {finding.message}"
    )
    if evidence:
        line += f" Evidence: {evidence}."
    if finding.fixes:
        line += " Fix: " + " / ".join(finding.fixes)
    if finding.suppressed is not None:
        line += f" (suppressed: {finding.suppressed})"
    return xml_text(line)


def _suite(analysis: Analysis, fail_on: Severity, detectors: list[str]) -> ET.Element:
    path = shown_path(analysis.run.source_path)
    suite = ET.Element("testsuite", name=xml_text(log_label(analysis.run)))
    failures = skipped = 0
    for detector in detectors:
        found = [f for f in analysis.findings if f.detector == detector]
        case = ET.SubElement(
            suite, "testcase", name=xml_text(detector), classname=xml_text(f"trainspotter.{path}")
        )
        case.set("time", "0")
        check = next((c for c in analysis.checks if c.detector == detector), None)
        if not found and check is not None and check.status != RAN:
            ET.SubElement(case, "skipped", message=xml_text(f"{check.status}: {check.reason}"))
            skipped += 1
            continue
        if not found and detector not in analysis.detectors_run:
            ET.SubElement(case, "skipped", message="detector not enabled for this log")
            skipped += 1
            continue
        failing = [f for f in found if f.suppressed is None and f.severity >= fail_on]
        passing = [f for f in found if f not in failing]
        if failing:
            failures += 1
            failure = ET.SubElement(
                case,
                "failure",
                message=xml_text(f"{failing[0].title} ({step_range(failing[0])})"),
                type=failing[0].severity.label,
            )
            failure.text = "\n".join(_finding_line(f) for f in failing)
        out_lines = [_finding_line(f) for f in passing]
        if check is not None and check.metrics:
            out_lines.insert(0, xml_text("examined: " + ", ".join(check.metrics)))
        if out_lines:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(out_lines)
    suite.set("tests", str(len(detectors)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return suite


def render_junit(analyses: Sequence[Analysis], fail_on: Severity) -> str:
    """The XML document: `<testsuites>` with one `<testsuite>` per log."""
    detectors = detector_ids(analyses)
    root = ET.Element("testsuites", name="trainspotter")
    suites = [_suite(a, fail_on, detectors) for a in analyses]
    root.extend(suites)
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites)))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


REPORT = TextReport(
    "junit", "JUnit XML: one test case per detector per log, failing at --fail-on", render_junit
)
