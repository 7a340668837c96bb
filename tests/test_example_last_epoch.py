"""A jump at the very end of a log, pinned on a real Lightning run
(examples/lightning_last_epoch_lr.py): an LR schedule bug multiplies the LR by 100 for the
last of 10 epochs, and both per-epoch losses jump at the last logged step, with nothing
after it to show a recovery.

Checked against the raw values in the CSV Lightning wrote (read with the csv module, not
through trainspotter) and the ground truth the training script measured (expected.json).
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from trainspotter.analysis import analyze
from trainspotter.detectors.base import fmt
from trainspotter.model import Severity
from trainspotter.readers import read_log

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RUN = "lightning_last_epoch_lr"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())[RUN]
LOG = EXAMPLES / RUN / EXPECTED["files"][0]


def _column(column: str) -> list[tuple[int, float]]:
    """(step, value) of every row where `column` has a cell, as Lightning wrote it."""
    with LOG.open(newline="", encoding="utf-8") as handle:
        return [(int(r["step"]), float(r[column])) for r in csv.DictReader(handle) if r[column]]


@pytest.mark.parametrize(
    ("metric", "column"), [("eval/loss", "val_loss"), ("train/loss", "train_loss")]
)
def test_the_last_epochs_jump_is_a_warning_at_the_last_logged_step(
    metric: str, column: str
) -> None:
    rows = _column(column)
    truth = next(p for p in EXPECTED["pathologies"] if p["metric"] == metric)
    last_step, last = rows[-1]
    assert last_step == truth["step"] == EXPECTED["steps"] - 1  # the last logged step
    found = [f for f in analyze(read_log(LOG)).findings if f.metric == metric]
    assert len(found) == 1, found
    f = found[0]
    assert f.detector == "spikes" and f.severity is Severity.WARNING
    assert (f.step_start, f.step_end) == (last_step, last_step)
    assert f.evidence["rule"] == "end_of_log" and f.evidence["recovered"] == "unknown"
    level = statistics.median(v for _, v in rows[-6:-1])
    assert f"jumped from {fmt(level)} (median of the 5 points before) to {fmt(last)}" in f.message
    prev_step, prev = rows[-2]
    assert f"It is {fmt(last / prev)}x the point before it ({fmt(prev)} at step {prev_step})" in (
        f.message
    )
    assert "It is the last logged point: nothing after it can show" in f.message
    assert "final checkpoint may be worse than an earlier one" in f.message
    assert "rose above the median" in f.message  # no earlier point did: a falling curve


def test_the_eval_finding_names_the_lowest_earlier_evaluation() -> None:
    rows = _column("val_loss")
    best_step, best = min(rows[:-1], key=lambda row: row[1])
    assert best_step == EXPECTED["facts"]["val_loss_best_step_before_last"]
    (f,) = [f for f in analyze(read_log(LOG)).findings if f.metric == "eval/loss"]
    assert f"the lowest eval/loss before it was {fmt(best)} at step {best_step}." in f.message
    assert f.evidence["best_earlier_step"] == best_step
    assert any(f"checkpoint from step {best_step}" in fix for fix in f.fixes)


def test_nothing_else_in_the_run_is_a_warning() -> None:
    loud = [f for f in analyze(read_log(LOG)).findings if f.severity >= Severity.WARNING]
    assert {(f.detector, f.metric, f.step_start) for f in loud} == {
        ("spikes", "eval/loss", EXPECTED["steps"] - 1),
        ("spikes", "train/loss", EXPECTED["steps"] - 1),
    }
