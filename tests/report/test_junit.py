"""JUnit XML: one test case per detector per log, failures at --fail-on, always valid XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from trainspotter.analysis import Analysis
from trainspotter.model import Severity
from trainspotter.report import REPORTS, RenderOptions
from trainspotter.report.common import detector_ids


def render(analyses: list[Analysis], fail_on: Severity = Severity.ERROR) -> ET.Element:
    text = REPORTS["junit"].render(analyses, RenderOptions(fail_on=fail_on))
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    return ET.fromstring(text.encode("utf-8"))


def cases(suite: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in suite.iter("testcase")}


def test_one_case_per_detector_per_log(divergent: Analysis, healthy: Analysis) -> None:
    root = render([divergent, healthy])
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "runs/divergent/trainer_state.json",
        "runs/healthy/metrics.csv",
    ]
    expected = detector_ids([divergent, healthy])
    for suite in suites:
        assert list(cases(suite)) == expected
        assert suite.get("tests") == str(len(expected))


def test_failures_follow_fail_on(divergent: Analysis) -> None:
    suite = render([divergent], Severity.ERROR).find("testsuite")
    assert suite is not None
    by_name = cases(suite)
    failure = by_name["divergence"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("train/loss diverged")
    assert by_name["lr_schedule"].find("failure") is None
    out = by_name["lr_schedule"].find("system-out")
    assert out is not None and "lr jumped" in (out.text or "")
    assert suite.get("failures") == "1"
    suite = render([divergent], Severity.WARNING).find("testsuite")
    assert suite is not None and suite.get("failures") == "2"


def test_detector_that_did_not_run_is_skipped(healthy: Analysis) -> None:
    suite = render([healthy]).find("testsuite")
    assert suite is not None
    by_name = cases(suite)
    assert by_name["spikes"].find("skipped") is None  # ran, found nothing: passed
    for name in set(by_name) - set(healthy.detectors_run):
        assert by_name[name].find("skipped") is not None


def test_hostile_text_gives_valid_xml(hostile: Analysis) -> None:
    text = REPORTS["junit"].render([hostile], RenderOptions(fail_on=Severity.INFO))
    root = ET.fromstring(text.encode("utf-8"))
    assert "\x1b" not in text and "\x00" not in text and "<script>" not in text
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and "<script>alert(1)</script>" in (failure.text or "")
