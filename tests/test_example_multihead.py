"""`torch_box_head_overfit`: a real two-headed torch run logged in the column layout of a
YOLO `results.csv` (`train/box_loss`, `val/box_loss`, `metrics/...`; no `train/loss`),
pinned against the raw values in the file (read with the csv module) and the ground truth
its script measured while training (expected.json). Its healthy twin
`torch_multihead_healthy` must stay silent (tests/test_examples.py).

Before component pairing, every eval loss was judged against `train/loss` only: this run
logs none, so its +14% box-loss rise was below the 20% asked of an eval loss without a
falling train loss, and the report was silent on it (as on the published YOLOv8 log of the
wild7 audit, 032).
"""

from __future__ import annotations

from test_example_classes import EXPECTED, csv_column, log_of, loud, only, texts

EXAMPLE = "torch_box_head_overfit"


def test_the_box_head_overfitting_is_judged_against_train_box_loss() -> None:
    path = log_of(EXAMPLE)
    truth = EXPECTED[EXAMPLE]["pathologies"][0]
    val_box = csv_column(path, "val/box_loss")
    best_step, best = min(val_box, key=lambda r: r[1])
    assert best_step == truth["best_step"]
    finding = only(loud(path), "overfitting", "val/box_loss")
    assert finding.step_start <= best_step <= finding.step_end == val_box[-1][0]
    assert "while train/box_loss falls (overfitting)" in finding.title
    assert "train/box_loss kept falling" in finding.message
    assert "train/loss" not in texts(finding)  # the run logs no total train loss
    assert finding.evidence["train_metric"] == "train/box_loss"
    assert f"The best evaluation was {best:.4g} at step {best_step}." in finding.message
    # The train levels quoted are the file's raw values at the steps named.
    train_box = dict(csv_column(path, "train/box_loss"))
    last = val_box[-1][0]
    assert f"{train_box[last]:.4g} at step {last})" in finding.message


def test_the_bounded_metrics_best_steps_are_said_beside_the_losses() -> None:
    """metrics/IoU and metrics/accuracy are measured at the evaluations but named neither
    train nor eval, as YOLO's metrics/mAP50-95(B): their bests are said, and the fix names
    each best checkpoint that differs from the loss's."""
    path = log_of(EXAMPLE)
    truth = EXPECTED[EXAMPLE]["pathologies"][0]
    finding = only(loud(path), "overfitting", "val/box_loss")
    for column in ("metrics/IoU", "metrics/accuracy"):
        step, value = max(csv_column(path, column), key=lambda r: r[1])
        said = (
            f"By {column} (logged at the same steps) the best value was {value:.4g} at step {step}"
        )
        assert said in finding.message
        differs = f"by {column} the best checkpoint is step {step}" in finding.fixes[0]
        assert differs == (step != truth["best_step"])
    assert truth["best_iou_step"] == max(csv_column(path, "metrics/IoU"), key=lambda r: r[1])[0]
    # A CSV with `epoch` as its step and `/` in its column names is not Keras's CSVLogger.
    assert "Keras" not in finding.fixes[0]


def test_every_overfitting_finding_names_its_own_train_component() -> None:
    for finding in loud(log_of(EXAMPLE)):
        if finding.detector == "overfitting":
            own = finding.metric.replace("val/", "train/", 1)
            assert finding.evidence["train_metric"] == own
            assert own in finding.title
