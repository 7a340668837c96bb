"""Real example runs whose log itself carries a mistake the training script made, each
pinned against the raw values in the file (read with the csv module, not through
trainspotter) and the ground truth its script counted while training (expected.json):

- `torch_epoch_step_overfit` (and its healthy twin `torch_epoch_step_healthy`): a
  hand-written loop writes the batch index within the epoch as `step`
  (`readers/_epoch_steps.py` counts it across epochs);
- `lightning_train_acc_int_div`: `training_step` logs its accuracy as an integer division,
  0 at every step (`stuck.is_train_rate`: plateau checks a train accuracy for an exact
  repeat);
- `lightning_f1_partial_batch` (and its healthy twin `lightning_f1_partial_batch_healthy`):
  the epoch F1 is a sum of per-batch F1s divided by the number of full batches while the
  partial last batch is summed too, above 1 (`divergence/metric_range.py`).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_example_classes import EXPECTED, csv_column, log_of, loud

from trainspotter.model import Severity
from trainspotter.readers import read_log


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(
    ("example", "row_count"), [("torch_epoch_step_overfit", 100), ("torch_epoch_step_healthy", 30)]
)
def test_a_per_epoch_step_column_is_counted_across_epochs(example: str, row_count: int) -> None:
    """torch_epoch_step_*: 2 csv.writer rows per epoch, `step` 9 or 19 in each (the healthy
    twin: silent, tests/test_examples.py)."""
    path = log_of(example)
    truth = EXPECTED[example]
    rows = rows_of(path)
    assert len(rows) == truth["facts"]["rows"] == row_count
    assert {row["step"] for row in rows} == {"9", "19"}  # the file's step restarts each epoch
    run = read_log(path)
    # Every row is a point, at the global step the training loop counted for it.
    for metric, column in (("eval/loss", "val_loss"), ("train/loss", "train_loss")):
        series = run.metrics[metric]
        assert series.steps.tolist() == truth["facts"]["global_steps"], metric
        assert series.values.tolist() == [float(row[column]) for row in rows], metric
    assert run.meta["steps_per_epoch"] == truth["facts"]["steps_per_epoch"]
    assert any("'step' starts again at every new 'epoch'" in note for note in run.notes())


def test_the_overfitting_of_a_per_epoch_step_log_is_found_at_its_global_steps() -> None:
    """The eval loss's minimum and the rise after it are placed by the loop's global step
    (read as global steps, the file is 2 points and was reported healthy)."""
    path = log_of("torch_epoch_step_overfit")
    truth = EXPECTED["torch_epoch_step_overfit"]
    pathology = truth["pathologies"][0]
    val_loss = [float(row["val_loss"]) for row in rows_of(path)]
    best = min(range(len(val_loss)), key=val_loss.__getitem__)
    assert truth["facts"]["global_steps"][best] == pathology["best_step"]
    found = loud(path)
    assert [(f.detector, f.metric) for f in found] == [("overfitting", "eval/loss")]
    finding = found[0]
    assert finding.severity is Severity.WARNING
    assert finding.step_start >= pathology["best_step"]
    assert finding.step_end == truth["facts"]["global_steps"][-1]
    best_step = pathology["best_step"]
    keep = f"Load the checkpoint at step {best_step} (best eval/loss {val_loss[best]:.4g})"
    assert finding.fixes[0].startswith(keep), finding.fixes[0]


def test_a_train_accuracy_floor_divided_to_zero_is_the_only_warning() -> None:
    """lightning_train_acc_int_div: `(preds == y).sum() // y.size(0)` logged by
    `self.log` in `training_step` is 0.0 at every CSVLogger row while val_acc rises."""
    path = log_of("lightning_train_acc_int_div")
    truth = EXPECTED["lightning_train_acc_int_div"]
    pathology = truth["pathologies"][0]
    rows = rows_of(path)
    train_acc = [(int(row["step"]), float(row["train_acc"])) for row in rows if row["train_acc"]]
    val_acc = [float(row["val_acc"]) for row in rows if row["val_acc"]]
    assert {value for _, value in train_acc} == {0.0}
    assert pathology["true_train_acc_max"] > 0.5  # the model was right often: the metric is not
    assert val_acc[-1] - val_acc[0] > 0.2  # the model learns
    found = loud(path)
    assert [(f.detector, f.metric) for f in found] == [("plateau", "train_acc")]
    finding = found[0]
    assert finding.severity is Severity.WARNING
    assert "stuck at exactly 0" in finding.title
    assert (finding.step_start, finding.step_end) == (train_acc[0][0], train_acc[-1][0])
    assert (finding.step_start, finding.step_end) == tuple(pathology["step_range"])
    assert f"0 at all {len(train_acc)} logged points" in finding.message
    fixes = " ".join(finding.fixes)
    assert "batches it is computed on" in fixes and "integer division" in fixes


@pytest.mark.parametrize("metric", ["val_f1", "train_f1"])
def test_an_f1_averaged_over_full_batches_only_is_reported_above_1(metric: str) -> None:
    """lightning_f1_partial_batch: each F1 the module logged above 1 (kept in memory,
    expected.json) is a point above 1 in the CSV, and the warning quotes the largest at its
    step and counts them; the twin, F1 from the epoch's counts, stays in [0, 1] (silent,
    tests/test_examples.py)."""
    path = log_of("lightning_f1_partial_batch")
    truth = next(
        p for p in EXPECTED["lightning_f1_partial_batch"]["pathologies"] if p["metric"] == metric
    )
    logged = csv_column(path, metric)
    above = [(step, value) for step, value in logged if value > 1]
    assert len(above) == truth["out_of_range_points"]
    assert (above[0][0], above[-1][0]) == tuple(truth["step_range"])
    worst_step, worst = max(above, key=lambda point: point[1])
    assert (worst_step, round(worst, 5)) == (truth["largest_step"], round(truth["largest"], 5))
    (finding,) = [f for f in loud(path) if f.metric == metric]
    assert finding.detector == "divergence" and finding.severity is Severity.WARNING
    assert (finding.step_start, finding.step_end) == tuple(truth["step_range"])
    assert f"{metric} is {worst:.4g} at step {worst_step}, above 1" in finding.message
    assert f"at {len(above)} of its {len(logged)} logged points" in finding.message
    healthy = csv_column(log_of("lightning_f1_partial_batch_healthy"), metric)
    assert healthy and all(0 <= value <= 1 for _, value in healthy)
