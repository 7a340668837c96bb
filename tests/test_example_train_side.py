"""Issue 10's train-side classes pinned on real runs (examples/lightning_train_side.py, and
the real Keras CSVLogger(append=True) fixture): the finding, its severity, its steps and
the numbers its message quotes, against the raw log (csv module) and the ground truth the
training script measured (expected.json).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from trainspotter.analysis import analyze
from trainspotter.batch import analyze_paths
from trainspotter.config import Config
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log, read_runs

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())
KERAS_APPENDED = REPO / "tests" / "data" / "keras" / "appended_runs.csv"


def log_of(run: str) -> Path:
    return EXAMPLES / run / EXPECTED[run]["files"][0]


def raw_column(path: Path, column: str) -> list[tuple[int, float]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [(int(r["step"]), float(r[column])) for r in csv.DictReader(handle) if r[column]]


def plateau_of(run: str) -> Finding:
    found = [f for f in analyze(read_log(log_of(run))).findings if f.detector == "plateau"]
    assert len(found) == 1, [f.title for f in found]
    return found[0]


def test_a_tiny_significant_fall_is_not_learning() -> None:
    """Class 1: the loss falls at every epoch (a significant trend) by 0.27% over the run:
    an LR far too small for the target's scale. Not learning, and the message says why."""
    truth = EXPECTED["lightning_lr_too_small"]["pathologies"][0]
    assert truth["epochs_lower_than_the_one_before"] >= 140  # the trend is real
    rows = raw_column(log_of("lightning_lr_too_small"), "train_loss")
    f = plateau_of("lightning_lr_too_small")
    assert f.severity is Severity.WARNING and "not learning" in f.title
    assert (f.step_start, f.step_end) == (rows[0][0], rows[-1][0])
    assert f"{rows[0][1]:.4g} at step {rows[0][0]}" in f.message
    assert f"{rows[-1][1]:.4g} at step {rows[-1][0]}" in f.message
    assert "trend down, but by too little" in f.message and "learning needs 5%" in f.message
    assert float(f.evidence["drop_fraction_of_start"]) < 0.01


def test_a_slow_but_material_fall_is_learning() -> None:
    """The healthy side of class 1: the full-batch run and its 96% fall are not touched,
    and no example that learns is called not learning."""
    for run, spec in EXPECTED.items():
        if not isinstance(spec, dict) or not spec.get("healthy"):
            continue
        for file in spec["files"]:
            titles = [f.title for f in analyze(read_log(EXAMPLES / run / file)).findings]
            assert not [t for t in titles if "not learning" in t], (run, titles)


def test_a_collapse_to_the_mean_is_not_convergence() -> None:
    """Class 2: after the early blow-up every unit of the last hidden layer dies and the
    loss sits at the targets' variance (the loss of predicting their mean)."""
    truth = EXPECTED["lightning_collapse_to_mean"]["pathologies"][0]
    rows = raw_column(log_of("lightning_collapse_to_mean"), "train_loss")
    f = plateau_of("lightning_collapse_to_mean")
    assert f.severity is Severity.WARNING and "collapsed to a constant" in f.title
    # It freezes once the output bias has converged, after the units died.
    assert truth["first_step"] <= f.step_start <= rows[-1][0] // 2
    assert f.step_end == rows[-1][0]
    assert float(f.evidence["frozen_max"]) == pytest.approx(truth["target_variance"], rel=1e-4)
    tail = [v for step, v in rows if step >= f.step_start]
    assert f"between {min(tail):.7g} and {max(tail):.7g}" in f.message
    peak = max(rows[: len(rows) - len(tail)], key=lambda row: row[1])
    assert f"as high as {peak[1]:.4g} at step {peak[0]}" in f.message
    assert "constant prediction" in f.fixes[0]


def test_a_healthy_full_batch_loss_is_smooth_but_not_frozen() -> None:
    f = plateau_of("lightning_full_batch_healthy")
    assert f.severity is Severity.INFO and "frozen_since_step" not in f.evidence


def test_appended_keras_runs_are_each_a_log_in_the_report() -> None:
    """Class 4, on Keras' own CSVLogger(append=True) written by two fit() calls: both runs
    are analysed, each as its own log whose note says which run it is."""
    runs = read_runs(KERAS_APPENDED)
    assert [r.meta["run_name"] for r in runs] == ["2", "1"]
    logs = analyze_paths([str(KERAS_APPENDED)], Config())
    assert len(logs) == 2
    notes = [" ".join(log.run.notes()) for log in logs]
    assert "this is run 2 of 2 (the latest)" in notes[0] and "this is run 1 of 2," in notes[1]
    first_losses = [v for _, v in raw_column_epoch(KERAS_APPENDED, "loss")][:12]
    assert runs[1].metrics["train/loss"].values.tolist() == pytest.approx(first_losses)


def raw_column_epoch(path: Path, column: str) -> list[tuple[int, float]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [(int(r["epoch"]), float(r[column])) for r in csv.DictReader(handle)]
