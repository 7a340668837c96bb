"""overfitting on component losses: each eval component (`val/box_loss`) is judged against
its own train component (`train/box_loss`), and the bests of other logged quality metrics
(YOLO's `metrics/mAP50-95(B)`) are named beside the eval loss's best."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import synth

from trainspotter import names
from trainspotter.detectors import eval_pairs
from trainspotter.detectors.overfitting import DETECTOR, OverfittingParams, train_partner
from trainspotter.model import Finding, Run, Severity
from trainspotter.readers import read_log

PARAMS = OverfittingParams()
EPOCHS = np.arange(1, 101)


def detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def falling(start: float, end: float, seed: int) -> npt.NDArray[np.float64]:
    """A per-epoch train loss falling from `start` to `end`, 1% multiplicative noise."""
    level = end + (start - end) * np.exp(-EPOCHS / 30)
    return level * np.exp(np.random.default_rng(seed).normal(0.0, 0.01, EPOCHS.size))


def eval_turning(best: float, turn: int, rise: float, seed: int) -> npt.NDArray[np.float64]:
    """An eval loss falling to `best` at epoch `turn`, then up by `rise` (relative) by the
    last epoch, 1% multiplicative noise."""
    down = best * (1 + 0.3 * np.exp(-(EPOCHS - 1) / 2))
    up = best * (1 + rise * (EPOCHS - turn) / (EPOCHS[-1] - turn))
    level = np.where(turn < EPOCHS, up, down)
    return level * np.exp(np.random.default_rng(seed).normal(0.0, 0.01, EPOCHS.size))


def yolo_run(box_train: npt.NDArray[np.float64], **extra: npt.ArrayLike) -> Run:
    """YOLO's results.csv layout: train/ and val/ components, no total train/loss."""
    metrics: dict[str, tuple[npt.ArrayLike, npt.ArrayLike]] = {
        "train/box_loss": (EPOCHS, box_train),
        "train/cls_loss": (EPOCHS, falling(1.2, 0.6, seed=2)),
        "val/box_loss": (EPOCHS, eval_turning(1.23, 5, 0.13, seed=3)),  # +13%: overfits
        "val/cls_loss": (EPOCHS, eval_turning(1.20, 99, 0.0, seed=4)),  # falls: healthy
    }
    metrics.update({name: (EPOCHS, values) for name, values in extra.items()})
    return synth.make_run(metrics, fmt="csv")


def test_a_component_eval_loss_is_paired_with_its_own_train_component() -> None:
    """wild7/032 (YOLOv8 results.csv): val/box_loss +13% while train/box_loss falls, no
    `train/loss` column. Before, every eval loss was paired with `train/loss` only, so
    without it only a 20% rise was reported and this run was silent."""
    run = yolo_run(falling(1.13, 0.72, seed=1))
    assert train_partner(run, "val/box_loss") == "train/box_loss"
    assert set(DETECTOR.scope(run, PARAMS).metrics) >= {"train/box_loss", "train/cls_loss"}  # type: ignore[union-attr]
    [finding] = detect(run)
    assert finding.metric == "val/box_loss" and finding.severity is Severity.WARNING
    assert finding.title == (
        "val/box_loss rising from its minimum while train/box_loss falls (overfitting)"
    )
    assert "while train/box_loss kept falling" in finding.message
    assert names.TRAIN_LOSS not in finding.message
    assert finding.evidence["train_metric"] == "train/box_loss"


def test_the_own_component_wins_over_the_total_train_loss() -> None:
    """A total train/loss that falls does not make a moderate rise of val/box_loss
    overfitting when train/box_loss itself rose over the same epochs (before, train/loss
    was the only partner and this was called overfitting)."""
    rising = 0.8 * (1 + 0.3 * EPOCHS / EPOCHS[-1])
    run = yolo_run(rising, **{names.TRAIN_LOSS: falling(3.0, 1.5, seed=5)})
    assert train_partner(run, "val/box_loss") == "train/box_loss"
    assert train_partner(run, "val/dfl_loss") == names.TRAIN_LOSS  # no own: the total
    assert [f for f in detect(run) if "overfitting" in f.title] == []


def test_names_a_bounded_metric_logged_with_the_evaluations_and_its_best() -> None:
    """YOLO's `metrics/*` columns are measured at the evaluations but named neither train
    nor eval: mAP50-95 best at an early epoch and mAP50 best late are both named; a
    one-sided precision or recall is not."""
    map_early = np.concatenate(([0.50, 0.54], np.linspace(0.52, 0.50, EPOCHS.size - 2)))
    map_late = np.linspace(0.78, 0.83, EPOCHS.size)
    run = yolo_run(
        falling(1.13, 0.72, seed=1),
        **{
            "metrics/mAP50-95(B)": map_early,
            "metrics/mAP50(B)": map_late,
            "metrics/precision(B)": np.linspace(0.6, 0.8, EPOCHS.size),
        },
    )
    [finding] = detect(run)
    assert (
        "By metrics/mAP50-95(B) (logged at the same steps) the best value was 0.54 at step 2"
        in finding.message
    )
    assert (
        "By metrics/mAP50(B) (logged at the same steps) the best value was 0.83 at step 100"
        in finding.message
    )
    assert "precision" not in finding.message
    assert "by metrics/mAP50-95(B) the best checkpoint is step 2" in finding.fixes[0]


def test_an_other_metric_best_at_the_same_step_is_said_too() -> None:
    run = yolo_run(falling(1.13, 0.72, seed=1))
    [finding] = detect(run)
    best = int(finding.evidence["best_step"])
    iou = np.full(EPOCHS.size, 0.60)
    iou[best - 1] = 0.70
    [finding] = detect(yolo_run(falling(1.13, 0.72, seed=1), **{"metrics/IoU": iou}))
    assert (
        f"By metrics/IoU (logged at the same steps) the best value was 0.7 at step {best}, "
        "the same step." in finding.message
    )
    assert "metrics/IoU the best checkpoint" not in finding.fixes[0]


def test_a_train_accuracy_is_not_named_as_an_eval_metric() -> None:
    """Keras's `accuracy` is the train half of `val_accuracy`; an accuracy logged at steps
    without an evaluation is not measured at them; neither is quoted."""
    steps = np.arange(1, 201)
    run = yolo_run(
        falling(1.13, 0.72, seed=1),
        accuracy=np.linspace(0.5, 0.99, EPOCHS.size),
        val_accuracy=np.linspace(0.5, 0.9, EPOCHS.size),
    )
    [finding] = detect(run)
    assert "By accuracy" not in finding.message
    assert "By val_accuracy the best evaluation was 0.9 at step 100" in finding.message
    per_step = synth.make_run(
        {
            **{
                name: (s.steps, s.values)
                for name, s in yolo_run(falling(1.13, 0.72, 1)).metrics.items()
            },
            "metrics/acc": (steps, np.linspace(0.5, 0.99, steps.size)),
        }
    )
    [finding] = detect(per_step)
    assert "metrics/acc" not in finding.message
    # A train accuracy named by a word, without a separator after it (wild7/059's
    # `TrainAcc` beside `ValAcc`), is not quoted; its eval twin is.
    camel = yolo_run(
        falling(1.13, 0.72, seed=1),
        TrainAcc=np.linspace(50.0, 99.0, EPOCHS.size),
        ValAcc=np.linspace(50.0, 90.0, EPOCHS.size),
        **{"acc/train": np.linspace(0.5, 0.99, EPOCHS.size)},
    )
    [finding] = detect(camel)
    assert "TrainAcc" not in finding.message and "acc/train" not in finding.message
    assert "By ValAcc (logged at the same steps) the best value was 90 at step 100" in (
        finding.message
    )


def keras_epoch_csv(path: Path, columns: dict[str, npt.NDArray[np.float64]]) -> Path:
    """A hand-written per-epoch CSV (`epoch` first, then `columns`), as Keras's CSVLogger
    writes one."""
    epochs = np.arange(next(iter(columns.values())).size)
    rows = [",".join(["epoch", *columns])]
    rows += [",".join([str(e), *(f"{v[e]:.4f}" for v in columns.values())]) for e in epochs]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_bare_train_accuracy_beside_val_loss_is_not_quoted(tmp_path: Path) -> None:
    """An epoch CSV `epoch,loss,acc,val_loss` (no `val_acc`): `acc` is Keras's train
    accuracy, logged at every epoch like the eval loss. It was quoted as "By acc (logged at
    the same steps) the best value was 0.98 at step 14" and the fix said "by acc the best
    checkpoint is step 14", the step where val_loss was worst: a train metric picking the
    most overfit checkpoint. A bare name (no side, no eval namespace) is not quoted."""
    epochs = np.arange(15.0)
    val_loss = np.where(
        epochs <= 6, 1.45 - 0.14 * epochs, 0.61 + 0.06 * np.clip(epochs - 6, 0, None) ** 1.5
    )
    path = keras_epoch_csv(
        tmp_path / "training.log",
        {
            "loss": 1.02 * np.exp(-epochs / 5),
            "acc": 0.99 - 0.49 * np.exp(-epochs / 4),
            "val_loss": val_loss,
        },
    )
    run = read_log(path)
    assert "acc" in run.metrics
    [finding] = detect(run)
    assert finding.evidence["best_step"] == 6
    assert "acc" not in finding.message.replace("accuracy", "")
    assert "by acc" not in finding.fixes[0] and "step 14" not in finding.fixes[0]


def test_a_metric_whose_side_the_name_does_not_say_is_never_quoted() -> None:
    """Bounded metrics named neither train nor eval, logged only at the eval loss's steps,
    best at another step than the eval loss: without an eval namespace (YOLO's
    `metrics/`) or an eval word (`ValAcc`, `acc/val`) their side is unknown (a train
    accuracy at every epoch looks the same), so they are neither said nor in the fix."""
    bare = {
        "accuracy": np.linspace(0.5, 0.99, EPOCHS.size),
        "f1": np.linspace(0.4, 0.95, EPOCHS.size),
        "top1_acc": np.linspace(40.0, 97.0, EPOCHS.size),
    }
    [finding] = detect(yolo_run(falling(1.13, 0.72, seed=1), **bare))
    for name in bare:
        assert f"By {name} " not in finding.message
        assert f"by {name} " not in finding.fixes[0]
    said = yolo_run(
        falling(1.13, 0.72, seed=1),
        **{"acc/val": np.linspace(0.5, 0.9, EPOCHS.size), "metrics/f1": bare["f1"]},
    )
    [finding] = detect(said)
    assert "By acc/val (logged at the same steps) the best value was 0.9 at step 100" in (
        finding.message
    )
    assert "by metrics/f1 the best checkpoint is step 100" in finding.fixes[0]


def test_the_train_words_are_names_train_prefixes() -> None:
    """`eval_pairs` keeps its own copy of the train words (names' is private): the same."""
    assert frozenset(names._TRAIN_PREFIXES) == eval_pairs._TRAIN_WORDS


def test_the_judged_eval_metrics_are_eval_losses_and_error_rates() -> None:
    run = yolo_run(
        falling(1.13, 0.72, seed=1),
        val_wer=np.linspace(0.5, 0.2, EPOCHS.size),
        val_accuracy=np.linspace(0.5, 0.9, EPOCHS.size),
    )
    assert eval_pairs.judged_eval_metrics(run) == ["val/box_loss", "val/cls_loss", "val_wer"]
