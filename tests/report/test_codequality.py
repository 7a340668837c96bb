"""GitLab Code Quality: the fields GitLab reads, no BOM, stable and distinct fingerprints."""

from __future__ import annotations

import dataclasses
import json

from trainspotter.analysis import Analysis
from trainspotter.report import REPORTS, RenderOptions


def render(analyses: list[Analysis]) -> str:
    return REPORTS["codequality"].render(analyses, RenderOptions())


def test_issue_fields(divergent: Analysis) -> None:
    text = render([divergent])
    assert not text.startswith("\ufeff")
    text.encode("ascii")  # json.dumps escapes non-ASCII: no BOM can appear
    issues = json.loads(text)
    assert len(issues) == 3
    for issue in issues:
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["location"] == {
            "path": "runs/divergent/trainer_state.json",
            "lines": {"begin": 1},
        }
    by_check = {i["check_name"]: i for i in issues}
    assert by_check["divergence"]["severity"] == "critical"
    assert by_check["lr_schedule"]["severity"] == "major"
    assert by_check["plateau"]["severity"] == "info"
    assert len({i["fingerprint"] for i in issues}) == 3


def test_fingerprint_is_stable_across_wording_and_runs(divergent: Analysis) -> None:
    first = json.loads(render([divergent]))
    reworded = dataclasses.replace(
        divergent,
        findings=[
            dataclasses.replace(f, title="x", message="y", step_end=f.step_end + 5)
            for f in divergent.findings
        ],
    )
    second = json.loads(render([reworded]))
    assert [i["fingerprint"] for i in first] == [i["fingerprint"] for i in second]


def test_hostile_and_suppressed(hostile: Analysis) -> None:
    text = render([hostile])
    issues = json.loads(text)
    assert len(issues) == len([f for f in hostile.findings if f.suppressed is None])
    assert "\\u001b" not in text and "\\n" not in text


def test_healthy_is_an_empty_array(healthy: Analysis) -> None:
    assert json.loads(render([healthy])) == []
