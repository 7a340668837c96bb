"""SARIF 2.1.0: valid against the official schema, one rule per detector, one result per
finding, the log file as the location."""

from __future__ import annotations

import json
from typing import Any

import pytest
from report_fixtures import HOSTILE_TEXT, SARIF_SCHEMA, sarif_validator

from trainspotter.analysis import Analysis
from trainspotter.detectors import DETECTORS
from trainspotter.report import REPORTS, RenderOptions
from trainspotter.report.common import finding_fingerprint


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/errata01/os/schemas/sarif-schema-2.1.0.json")
    return sarif_validator()


def render(analyses: list[Analysis]) -> dict[str, Any]:
    return json.loads(REPORTS["sarif"].render(analyses, RenderOptions()))  # type: ignore[no-any-return]


def test_valid_against_the_official_schema(
    validator: Any, divergent: Analysis, healthy: Analysis, hostile: Analysis
) -> None:
    for analyses in ([divergent], [healthy], [hostile], [divergent, healthy, hostile]):
        validator.validate(render(analyses))


def test_rules_and_results(divergent: Analysis) -> None:
    log = render([divergent])
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    rule_ids = [r["id"] for r in rules]
    assert rule_ids[: len(DETECTORS)] == list(DETECTORS)  # one rule per registered detector
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"]
    results = run["results"]
    assert len(results) == len(divergent.findings)
    for result, finding in zip(results, divergent.findings, strict=True):
        assert result["ruleId"] == finding.detector == rule_ids[result["ruleIndex"]]
        assert (
            result["level"]
            == {"error": "error", "warning": "warning", "info": "note"}[finding.severity.label]
        )
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "runs/divergent/trainer_state.json"
        assert result["properties"]["stepStart"] == finding.step_start
        assert result["partialFingerprints"]["trainspotterFinding/v1"] == finding_fingerprint(
            finding, divergent.run.source_path
        )
    divergence = next(r for r in results if r["ruleId"] == "divergence")
    assert divergence["properties"]["evidence"]["growth"] == "Infinity"


def test_registered_detector_docs_become_rules() -> None:
    if not DETECTORS:
        pytest.skip("no detector registered yet")
    name, detector = next(iter(DETECTORS.items()))
    rule = render([])["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["id"] == name and rule["shortDescription"]["text"] == detector.summary


def test_hostile_text_stays_plain(hostile: Analysis) -> None:
    log = render([hostile])
    result = log["runs"][0]["results"][0]
    text = result["message"]["text"]
    assert "\x1b" not in text and "\n" not in text
    assert "[x](" not in text and "\\[x\\](javascript" in text  # no embedded link
    assert result["suppressions"][0]["kind"] == "external"
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert " " not in uri and "<" not in uri and uri.startswith("logs/")
    raw = REPORTS["sarif"].render([hostile], RenderOptions())
    assert "\\u001b" not in raw and "\\u0000" not in raw  # no control character, even escaped
    assert HOSTILE_TEXT not in raw
