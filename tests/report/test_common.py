"""What all formats share: paths, URIs, fingerprints, counting and ordering."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from report_fixtures import divergent_run

from trainspotter.analysis import Analysis
from trainspotter.model import Severity
from trainspotter.paths import shown_path
from trainspotter.report.common import (
    counts_phrase,
    detector_doc,
    finding_fingerprint,
    findings_root_cause_first,
    log_file,
    path_uri,
    plural,
    total_counts,
)


def test_shown_path_is_relative_inside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert shown_path(str(tmp_path / "runs" / "a.csv")) == "runs/a.csv"
    assert shown_path("./runs/a.csv") == "runs/a.csv"
    assert shown_path("/elsewhere/a.csv") == "/elsewhere/a.csv"


def test_path_uri() -> None:
    assert path_uri("runs/my run/<a>.csv") == "runs/my%20run/%3Ca%3E.csv"
    assert path_uri("/elsewhere/a b.csv").startswith("file:///")


def test_log_file_joins_the_file_a_reader_picked_in_a_folder() -> None:
    run = divergent_run()
    run.source_path = "output"
    assert log_file(run) == "output"
    run.meta["file"] = "checkpoint-400/trainer_state.json"
    assert log_file(run) == "output/checkpoint-400/trainer_state.json"


def test_fingerprint_ignores_wording_not_identity(divergent: Analysis) -> None:
    finding = divergent.findings[0]
    same = dataclasses.replace(finding, title="other", message="x", severity=Severity.INFO)
    assert finding_fingerprint(finding, "a.json") == finding_fingerprint(same, "./a.json")
    moved = dataclasses.replace(finding, step_start=finding.step_start + 1)
    assert finding_fingerprint(finding, "a.json") != finding_fingerprint(moved, "a.json")
    assert finding_fingerprint(finding, "a.json") != finding_fingerprint(finding, "b.json")


def test_counts_and_order(divergent: Analysis, healthy: Analysis) -> None:
    totals = total_counts([divergent, healthy])
    assert list(totals) == [Severity.ERROR, Severity.WARNING, Severity.INFO]
    assert counts_phrase(totals) == "1 error, 1 warning, 1 info"
    assert plural(2, "warning") == "2 warnings" and plural(3, "info") == "3 info"
    ordered = findings_root_cause_first(divergent)
    assert ordered[0].detector == "lr_schedule"  # the root cause, though only a warning
    assert sorted(f.id for f in ordered) == sorted(f.id for f in divergent.findings)


def test_unregistered_detector_gets_a_placeholder_doc() -> None:
    doc = detector_doc("no_such_detector")
    assert doc.id == "no_such_detector" and doc.summary and doc.full
