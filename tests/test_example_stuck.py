"""The stuck rules for values with few digits, each pinned on a real example run.

An exact repeat counts as stuck only when the value shows 3+ significant digits (0.0 or 0.2
repeat by rounding), with exceptions whose exact value has a meaning of its own. Two of them
get a real run here (examples/README.md), checked against the raw log (read with the csv
module, not through trainspotter) and the ground truth the training script measured
(expected.json):

- an accuracy at exactly 1/k at every evaluation (`keras_uint8_inputs_chance`: every input
  truncated to zero, one class predicted for every example of a balanced 5-class set);
- the run's train loss at exactly 0 from its first point (`lightning_zero_loss_weight`: the
  only live loss term weighted 0, so no gradient);
- and the healthy twin the second rule must leave alone: a disabled auxiliary loss logged as
  0.0 beside a falling train loss (`lightning_aug_loss_disabled_healthy`).
"""

from __future__ import annotations

import csv
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter import names
from trainspotter.analysis import Analysis, analyze
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())


@cache
def analysis_of(run: str) -> Analysis:
    return analyze(read_log(EXAMPLES / run / EXPECTED[run]["files"][0]))


def column(run: str, name: str) -> list[tuple[int, float]]:
    """(step, value) of every row of the run's log where `name` is logged (a Keras log has
    no step column: the epoch is the step)."""
    path = EXAMPLES / run / EXPECTED[run]["files"][0]
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    step = "step" if "step" in rows[0] else "epoch"
    return [(int(row[step]), float(row[name])) for row in rows if row.get(name)]


def stuck_on(run: str, metric: str) -> Finding:
    found = [
        f
        for f in analysis_of(run).findings
        if f.detector == "plateau" and f.metric == metric and "stuck at exactly" in f.title
    ]
    described = [f"{f.detector} {f.metric}: {f.title}" for f in analysis_of(run).findings]
    assert len(found) == 1, described
    return found[0]


def test_an_accuracy_at_exactly_one_in_k_at_every_epoch_is_stuck() -> None:
    """keras_uint8_inputs_chance: `(x / 255.0).astype(np.uint8)` makes every input the zero
    vector, so the model predicts one class for every digit of a balanced 5-class
    validation set: val_accuracy is 1/5 in float32 at all 8 epochs while val_loss is never
    one repeated value (the repeat rule alone cannot see it: 0.2 has 1 digit)."""
    run = "keras_uint8_inputs_chance"
    truth = EXPECTED[run]["pathologies"][0]
    accuracy = column(run, "val_accuracy")
    val_loss = [value for _, value in column(run, "val_loss")]
    classes = truth["classes"]
    # The log: exactly 1/k (as float32) at every epoch; the loss moves.
    assert all(value == float(np.float32(1 / classes)) for _, value in accuracy), accuracy
    assert len(set(val_loss)) > 1 and len(accuracy) == truth["constant_points"]
    # The ground truth: one class predicted for the whole validation set at every epoch.
    assert len(EXPECTED[run]["facts"]["predicted_class_per_epoch"]) == len(accuracy)
    finding = stuck_on(run, "val_accuracy")
    assert finding.severity == Severity.WARNING
    assert finding.title == "val_accuracy is stuck at exactly 0.2"
    assert (finding.step_start, finding.step_end) == (accuracy[0][0], accuracy[-1][0])
    assert finding.evidence["constant_points"] == len(accuracy) == 8
    assert f"exactly 1/{classes} at every point" in finding.message
    assert "predicts one class for every example" in finding.message
    assert f"at all {len(accuracy)} logged points" in finding.message
    # The moving loss is not itself called stuck.
    eval_loss = [f for f in analysis_of(run).findings if f.metric == names.EVAL_LOSS]
    assert not [f for f in eval_loss if "stuck" in f.title], eval_loss


def test_a_train_loss_at_exactly_zero_from_its_first_epoch_trained_nothing() -> None:
    """lightning_zero_loss_weight: `w.get("classification", 0.0) * ce` with a config that
    calls the weight "ce": the loss is 0.0 at every step and no gradient is ever non-zero;
    Lightning's CSVLogger writes train_loss 0.0 at all 9 epochs."""
    run = "lightning_zero_loss_weight"
    truth = EXPECTED[run]["pathologies"][0]
    train_loss = column(run, "train_loss")
    assert [value for _, value in train_loss] == [0.0] * truth["constant_points"]
    assert truth["largest_grad_norm"] == 0.0  # measured in on_after_backward
    finding = stuck_on(run, names.TRAIN_LOSS)
    assert finding.severity == Severity.WARNING
    assert finding.title == "train/loss is stuck at exactly 0"
    assert (finding.step_start, finding.step_end) == (train_loss[0][0], train_loss[-1][0])
    assert (finding.step_start, finding.step_end) == tuple(truth["step_range"])
    assert "nothing was trained" in finding.message
    assert "multiplied by a weight of 0" in finding.message
    assert any("loss weights" in fix for fix in finding.fixes)
    # The untrained model's accuracy repeats one value with many digits: stuck too.
    val_acc = column(run, "val_acc")
    assert len({value for _, value in val_acc}) == 1
    assert stuck_on(run, "val_acc").evidence["constant_value"] == val_acc[0][1]


def test_a_disabled_auxiliary_loss_at_zero_beside_a_falling_loss_is_no_finding() -> None:
    """lightning_aug_loss_disabled_healthy: the same module with the weight named right;
    aug_loss (the augmentation term, disabled) is 0.0 at every epoch while train_loss and
    val_loss fall. The zero-loss rule is the run's train loss only: no finding of any
    severity on aug_loss, and none on the train loss."""
    run = "lightning_aug_loss_disabled_healthy"
    aug = [value for _, value in column(run, "aug_loss")]
    train = [value for _, value in column(run, "train_loss")]
    assert aug == [0.0] * len(train) and len(train) == 12
    assert train[-1] < 0.25 * train[0]
    expected_train = EXPECTED[run]["facts"]["train_loss"]
    assert all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(train, expected_train, strict=True))
    findings = analysis_of(run).findings
    assert not [f for f in findings if f.metric == "aug_loss"], findings
    assert not [f for f in findings if f.severity >= Severity.WARNING], findings
