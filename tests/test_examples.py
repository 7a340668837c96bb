"""The real example runs: healthy ones are silent, sick ones are caught at the right steps.

Ground truth comes from examples/expected.json, which examples/generate.py (and each
framework run's own script) wrote from what it did to each training run (the step it jumped
the LR, the batch it corrupted, the first non-finite loss it measured), never from a
detector's output.

An expectation that trainspotter does not meet yet carries ``"open_issue": N`` in
expected.json (on the run for a healthy run, on the pathology or ``must_not_flag`` item
otherwise): its test is a strict xfail, so it shows in every test run and fails the suite as
soon as the detector work makes it pass, until the key is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainspotter.analysis import Analysis, analyze
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())
RUNS = {name: spec for name, spec in EXPECTED.items() if isinstance(spec, dict)}

_CACHE: dict[Path, Analysis] = {}


def _analysis(path: Path) -> Analysis:
    if path not in _CACHE:
        _CACHE[path] = analyze(read_log(path))
    return _CACHE[path]


def _open_issue(item: dict[str, Any], *case: object) -> Any:
    """The case as a pytest param, a strict xfail when the item names an open issue."""
    if "open_issue" not in item:
        return pytest.param(*case)
    reason = f"issue {item['open_issue']}: trainspotter does not meet this expectation yet"
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason))


def _cases(silent: bool) -> list[Any]:
    return [
        _open_issue(spec, name, file)
        for name, spec in RUNS.items()
        if bool(spec.get("must_be_silent")) == silent
        for file in spec["files"]
    ]


def _describe(findings: list[Finding]) -> str:
    return "; ".join(
        f"{f.severity.label} {f.detector} {f.metric} {f.step_start}-{f.step_end}: {f.title}"
        for f in findings
    )


@pytest.mark.parametrize(("run", "file"), _cases(silent=True))
def test_healthy_examples_give_no_warning_or_error(run: str, file: str) -> None:
    result = _analysis(EXAMPLES / run / file)
    loud = [f for f in result.findings if f.severity >= Severity.WARNING]
    assert not loud, _describe(loud)


def _expected_range(pathology: dict[str, Any]) -> tuple[int, int]:
    if "step_range" in pathology:
        lo, hi = pathology["step_range"]
        return int(lo), int(hi)
    for key in ("step", "first_step", "best_step"):
        if pathology.get(key) is not None:
            return int(pathology[key]), int(pathology[key])
    raise AssertionError(f"no step in {pathology}")


def _pathology_cases() -> list[Any]:
    cases = []
    for name, spec in RUNS.items():
        if spec.get("must_be_silent"):
            continue
        for index, pathology in enumerate(spec["pathologies"]):
            visible = pathology.get("visible_in", spec["files"])
            cases.extend(_open_issue(pathology, name, file, index) for file in visible)
    return cases


@pytest.mark.parametrize(("run", "file", "index"), _pathology_cases())
def test_pathological_examples_are_caught_at_the_right_steps(
    run: str, file: str, index: int
) -> None:
    pathology = RUNS[run]["pathologies"][index]
    result = _analysis(EXAMPLES / run / file)
    lo, hi = _expected_range(pathology)
    span = int(RUNS[run].get("steps", hi))
    # Tolerance: a finding may start a few logged points early or late (windows, coarse
    # logging), never far from where the generator put the cause.
    tolerance = max(5, round(0.03 * span))
    # A pathology that needs acting on says so with "min_severity": an info note that calls
    # it normal (say, "recognised a cyclic LR schedule") is not a catch.
    least = Severity[pathology.get("min_severity", "info").upper()]
    matches = [
        f
        for f in result.findings
        if f.detector in _detectors(pathology)
        and f.severity >= least
        and f.step_start <= hi + tolerance
        and f.step_end >= lo - tolerance
    ]
    assert matches, (
        f"{run}/{file}: expected {pathology['detector']} near steps {lo}-{hi} "
        f"({pathology['kind']}); got: {_describe(result.findings) or 'nothing'}"
    )
    # Severity follows evidence (issue 10 class 12): a pathology that rests on few points
    # ("max_severity": "warning", say 3 evaluations) is not an error on that evidence alone.
    if "max_severity" in pathology:
        most = Severity[pathology["max_severity"].upper()]
        assert all(f.severity <= most for f in matches), _describe(matches)


def _detectors(pathology: dict[str, Any]) -> tuple[str, ...]:
    """The detector ids that may report a pathology: one, or a list when either is right
    (an eval loss that doubled while the train loss did not fall: overfitting's 'rose and
    stayed there' or divergence)."""
    named = pathology["detector"]
    return (named,) if isinstance(named, str) else tuple(named)


def _must_not_flag_cases() -> list[Any]:
    return [
        _open_issue(item, name, file, index)
        for name, spec in RUNS.items()
        for index, item in enumerate(spec.get("must_not_flag", []))
        for file in spec["files"]
    ]


@pytest.mark.parametrize(("run", "file", "index"), _must_not_flag_cases())
def test_harmless_parts_of_sick_examples_get_no_warning(run: str, file: str, index: int) -> None:
    """What the generator knows is harmless (early batch noise, a per-batch validation
    column) is not flagged at warning or error by the named detector ("*": any) on the named
    metric (any when absent) in the step range, even in a run that has a real problem."""
    item = RUNS[run]["must_not_flag"][index]
    lo, hi = (int(step) for step in item["step_range"])
    loud = [
        f
        for f in _analysis(EXAMPLES / run / file).findings
        if item["detector"] in ("*", f.detector)
        and item.get("metric", f.metric) == f.metric
        and f.severity >= Severity.WARNING
        and f.step_start <= hi
        and f.step_end >= lo
    ]
    assert not loud, _describe(loud)


@pytest.mark.parametrize(
    "path",
    sorted(EXAMPLES.glob("*/trainer_state.json")) + sorted(EXAMPLES.glob("*/metrics.csv")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_finding_says_where_why_and_what_to_do(path: Path) -> None:
    for finding in _analysis(path).findings:
        assert finding.step_start <= finding.step_end
        assert finding.title and finding.message and finding.evidence, finding
        assert any(ch.isdigit() for ch in finding.message), f"no number in: {finding.message}"
        if finding.severity >= Severity.WARNING:  # an info note may need no action
            assert finding.fixes, f"{finding.detector} gives no fix"
        assert all(fix[:1].isupper() for fix in finding.fixes), finding.fixes
