"""Which checks ran (issue 10 class 10): every detector says what it examined or why it
abstained, analysis records it, and every report shows it; nothing checked is never green."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from synth import every, make_run

from trainspotter.analysis import ABSTAINED, DISABLED, RAN, Analysis, AnalysisSettings, analyze
from trainspotter.detectors import DETECTORS
from trainspotter.detectors.base import Abstain
from trainspotter.model import Run
from trainspotter.readers import read_log
from trainspotter.report import REPORTS, RenderOptions

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(
    p for p in (ROOT / "examples").iterdir() if p.is_dir() and p.name != "compare"
)  # examples/compare holds pairs of runs, each a log of its own (tests/test_compare.py)


def accuracy_only_run() -> Run:
    """A log whose only metric is a validation accuracy (no loss, no LR, no timing)."""
    steps = every(2000, 100)
    rng = np.random.default_rng(0)
    accuracy = 0.9 - 0.4 * np.exp(-steps / 500) + rng.normal(0, 0.002, steps.size)
    return make_run({"val_accuracy": (steps, accuracy)}, fmt="csv")


def render(name: str, analysis: Analysis) -> str:
    return REPORTS[name].render([analysis], RenderOptions())


def test_every_registered_detector_gets_one_check() -> None:
    analysis = analyze(read_log(ROOT / "examples" / "healthy"))
    single_run = [n for n, d in DETECTORS.items() if not d.needs_baseline]
    assert [c.detector for c in analysis.checks] == single_run
    ran = {c.detector: c for c in analysis.checks if c.status == RAN}
    assert ran["spikes"].metrics and "train/loss" in ran["spikes"].metrics
    assert analysis.detectors_run == list(ran)


def test_an_abstaining_detector_says_why_and_is_not_run() -> None:
    analysis = analyze(accuracy_only_run())
    by_id = {c.detector: c for c in analysis.checks}
    assert by_id["eval_noise"].status == RAN and by_id["eval_noise"].metrics == ("val_accuracy",)
    for detector in ("spikes", "lr_schedule", "throughput", "grad_norm"):
        assert by_id[detector].status == ABSTAINED, detector
        assert by_id[detector].reason
    assert by_id["throughput"].reason is not None
    assert "throughput" in by_id["throughput"].reason
    assert not any(f.detector == "spikes" for f in analysis.findings)


def test_a_disabled_detector_is_listed_as_disabled() -> None:
    settings = AnalysisSettings(enabled=frozenset({"spikes"}))
    analysis = analyze(read_log(ROOT / "examples" / "healthy"), settings)
    statuses = {c.detector: c.status for c in analysis.checks}
    assert statuses["spikes"] == RAN
    assert {s for d, s in statuses.items() if d != "spikes"} == {DISABLED}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_an_abstaining_scope_never_hides_a_finding(example: Path) -> None:
    """Scope is a cheap promise: where a detector abstains, its detect finds nothing."""
    if not any(example.glob("*.json")) and not any(example.rglob("*.csv")):
        pytest.skip("no log in this folder")
    run = read_log(example)
    for name, detector in DETECTORS.items():
        params = detector.Params()
        if isinstance(detector.scope(run, params), Abstain):
            assert detector.detect(run, params) == [], name


def test_nothing_checked_is_never_called_healthy_in_any_format() -> None:
    analysis = analyze(accuracy_only_run())
    assert analysis.worst is None  # nothing was found, but no loss was examined either
    terminal = render("terminal", analysis)
    assert "healthy" not in terminal
    assert "no loss metric was examined" in terminal
    assert "Not checked: " in terminal and "spikes: no loss metric" in terminal
    markdown = render("markdown", analysis)
    assert "healthy" not in markdown and "not checked" in markdown
    assert "spikes: no loss metric" in markdown
    html = render("html", analysis)
    assert "looks healthy" not in html and ">healthy<" not in html
    assert "<h3>Checks</h3>" in html and "no loss metric" in html
    doc = json.loads(render("json", analysis))
    checks = {c["detector"]: c for c in doc["checks"]}
    assert checks["spikes"] == {
        "detector": "spikes",
        "status": "abstained",
        "metrics": [],
        "reason": "no loss metric",
    }
    assert checks["eval_noise"]["metrics"] == ["val_accuracy"]


def test_junit_marks_an_abstaining_detector_skipped_with_its_reason() -> None:
    analysis = analyze(accuracy_only_run())
    root = ET.fromstring(render("junit", analysis).encode("utf-8"))
    cases = {case.get("name"): case for case in root.iter("testcase")}
    skipped = cases["throughput"].find("skipped")
    assert skipped is not None
    assert "abstained" in skipped.get("message", "")
    assert "throughput" in skipped.get("message", "")
    assert cases["eval_noise"].find("skipped") is None
    out = cases["eval_noise"].find("system-out")
    assert out is not None and "examined: val_accuracy" in (out.text or "")


def test_a_healthy_run_reads_healthy_and_lists_its_checks() -> None:
    analysis = analyze(read_log(ROOT / "examples" / "healthy"))
    terminal = render("terminal", analysis)
    assert terminal.startswith("PASSED") and ": healthy, 1000 steps" in terminal
    verbose = REPORTS["terminal"].render([analysis], RenderOptions(verbose=True))
    assert "Checked: " in verbose and "spikes (" in verbose
    markdown = render("markdown", analysis)
    assert "passed, 1000 steps, no warnings or errors" in markdown and "Checked: " in markdown


def test_check_text_from_the_log_is_escaped() -> None:
    steps = every(1000, 10)
    hostile = "<script>alert(1)</script>_loss"
    run = make_run({hostile: (steps, 2.0 * np.exp(-steps / 300.0) + 0.1)})
    analysis = analyze(run)
    assert any(hostile in c.metrics for c in analysis.checks)
    assert "<script>" not in render("html", analysis)
    assert "<script>" not in render("markdown", analysis)
