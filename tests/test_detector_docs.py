"""Every detector's documentation has one shape, names every parameter, and its example is
true: the bundled log it names is flagged at the step it says, the healthy one is quiet.

`trainspotter explain ID` prints that documentation, so what is checked here is what a
user reads.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from trainspotter.cli import main
from trainspotter.detectors import DETECTORS
from trainspotter.model import Severity
from trainspotter.readers import read_log
from trainspotter.report.terminal_doc import inline_text, render_doc

REPO = Path(__file__).resolve().parents[1]
SECTIONS = (
    "**What it finds.**",
    "**Algorithm.**",
    "**Defaults and why.**",
    "**False-positive modes.**",
    "**Example.**",
)
FLAGGED = re.compile(r"`(examples/[^`]+)`: [^`]*?\bsteps? (\d+)")
"""The first example: "`examples/x/log`: a warning at step 400" (its first step named)."""


def _doc(name: str) -> str:
    return inspect.getdoc(type(DETECTORS[name])) or ""


@pytest.mark.parametrize("name", list(DETECTORS))
def test_detector_doc_has_every_section_in_order(name: str) -> None:
    doc = _doc(name)
    at = [doc.find(section) for section in SECTIONS]
    assert -1 not in at, f"{name}: missing {[s for s in SECTIONS if s not in doc]}"
    assert at == sorted(at), f"{name}: sections out of order"


@pytest.mark.parametrize("name", list(DETECTORS))
def test_detector_doc_names_every_parameter(name: str) -> None:
    doc = _doc(name)
    for field in dataclasses.fields(DETECTORS[name].Params):
        assert f"`{field.name}`" in doc, f"{name}.{field.name} is not explained"


@pytest.mark.parametrize("name", list(DETECTORS))
def test_detector_doc_example_is_what_the_detector_does(name: str) -> None:
    detector = DETECTORS[name]
    example = _doc(name).split("**Example.**", 1)[1]
    flagged = FLAGGED.search(example)
    assert flagged, f"{name}: the example names no bundled log and step"
    path, step = REPO / flagged.group(1), int(flagged.group(2))
    baseline = re.search(r"against\s+`(examples/[^`]+)`", example)
    if detector.needs_baseline:  # compares two runs: name both
        assert baseline, f"{name}: the example names no baseline"
        _check_comparison_example(name, path, REPO / baseline.group(1), step, example)
        return
    found = detector.detect(read_log(path), detector.Params())
    assert step in [f.step_start for f in found], (name, path, [f.step_start for f in found])

    silent = re.search(r"Silent on\s+`(examples/[^`]+)`", example)
    only_info = re.search(r"On\s+`(examples/[^`]+)`\s+only info", example)
    assert silent or only_info, f"{name}: the example names no healthy log it is quiet on"
    if silent:
        assert detector.detect(read_log(REPO / silent.group(1)), detector.Params()) == []
    if only_info:
        quiet = detector.detect(read_log(REPO / only_info.group(1)), detector.Params())
        assert quiet and all(f.severity is Severity.INFO for f in quiet)


def _check_comparison_example(
    name: str, candidate: Path, baseline: Path, step: int, example: str
) -> None:
    """A detector that compares runs: its findings on the candidate against the baseline
    start at the step named, and it is silent on the run named as silent."""
    from trainspotter.compare.command import compare_paths
    from trainspotter.config import Config

    def found(log: Path) -> list[int]:
        (analysis,) = compare_paths(str(log), str(baseline), Config())
        return [f.step_start for f in analysis.findings if f.detector == name]

    assert step in found(candidate), (name, candidate, found(candidate))
    silent = re.search(r"Silent on\s+`(examples/[^`]+)`", example)
    assert silent, f"{name}: the example names no run it is quiet on"
    assert found(REPO / silent.group(1)) == []


@pytest.mark.parametrize("name", list(DETECTORS))
def test_explain_prints_the_documentation(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["explain", name]) == 0
    out = capsys.readouterr().out
    head = " ".join(out.split("\n\n", 1)[0].split())
    assert head == f"{name}: {inline_text(DETECTORS[name].summary)}"
    # the whole docstring, rendered for an 80-column terminal (terminal_doc.py)
    assert render_doc(_doc(name), 80) in out
