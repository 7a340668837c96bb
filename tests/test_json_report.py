"""The JSON report is the public contract: real outputs validate against the shipped schema."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from trainspotter.analysis import analyze
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log
from trainspotter.report import REPORTS, RenderOptions

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LOGS = sorted(EXAMPLES.glob("*/trainer_state.json")) + sorted(EXAMPLES.glob("*/metrics.csv"))


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    text = resources.files("trainspotter").joinpath("schemas/report.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def _render(paths: list[Path]) -> dict[str, Any]:
    analyses = [analyze(read_log(p)) for p in paths]
    doc: dict[str, Any] = json.loads(REPORTS["json"].render(analyses, RenderOptions()))
    return doc


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_validates(schema: dict[str, Any], path: Path) -> None:
    doc = _render([path])
    jsonschema.validate(doc, schema)
    assert doc["summary"]["total_findings"] == len(
        [f for f in doc["findings"] if f["suppressed"] is None]
    )


def test_several_logs_validate_and_total(schema: dict[str, Any]) -> None:
    doc = _render(LOGS[:3])
    jsonschema.validate(doc, schema)
    assert len(doc["logs"]) == 3
    assert doc["summary"]["total_findings"] == sum(
        log["summary"]["total_findings"] for log in doc["logs"]
    )


def test_nonfinite_numbers_are_strings_and_output_is_strict_json(schema: dict[str, Any]) -> None:
    analysis = analyze(read_log(EXAMPLES / "divergence" / "trainer_state.json"))
    planted = Finding(
        "divergence",
        "t",
        Severity.ERROR,
        "train/loss",
        1,
        2,
        "m",
        evidence={"peak": float("nan"), "top": float("inf"), "low": float("-inf"), "n": 3},
        id="F99",
    )
    analysis = dataclasses.replace(analysis, findings=[*analysis.findings, planted])
    text = REPORTS["json"].render([analysis], RenderOptions())

    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    doc = json.loads(text, parse_constant=reject)
    jsonschema.validate(doc, schema)
    assert doc["findings"][-1]["evidence"] == {
        "peak": "NaN",
        "top": "Infinity",
        "low": "-Infinity",
        "n": 3,
    }
    assert doc["run"]["metrics"]["train/loss"]["nonfinite"] > 0


def test_schema_rejects_a_broken_document(schema: dict[str, Any]) -> None:
    doc = _render([EXAMPLES / "divergence" / "trainer_state.json"])
    doc["findings"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)
