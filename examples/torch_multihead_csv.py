"""A real hand-written torch loop with two heads, a class and a box, logging per-component
losses in the column layout of an Ultralytics YOLO ``results.csv`` with ``csv.writer``.

``torch_box_head_overfit``: a shared 64-256-256 ReLU trunk with a classification head (10
digits, cross-entropy) and a box head (4 sigmoid outputs, L1 to the digit's ink bounding
box), Adam 1e-3 (no weight decay, no dropout, no augmentation), on the first 60 training
digits of ``generate.py``'s split (batch 10, seeded shuffle), 150 epochs, validated after
every epoch on the 517 eval digits. The box of a digit is the bounding box of its pixels of
intensity 4 or more (of 16), in eighths of the image, plus a seeded Gaussian annotation jitter
(sd 0.08, train and eval alike, as a human annotator's boxes are): 60 boxes with jitter are
memorised, so the box head overfits. One row per epoch:
``epoch,train/box_loss,train/cls_loss,metrics/accuracy,metrics/IoU,val/box_loss,val/cls_loss,lr/pg0``
(``train/*`` the mean over the epoch's batches, ``metrics/*`` on the eval digits: the class
accuracy and the mean IoU of the predicted box with the annotated one).

``torch_multihead_healthy``, its healthy twin: the same loop, heads and columns on all 1,280
training digits, batch 64, 30 epochs, AdamW 1e-3 with weight decay 0.05. Must be silent.

This stands for a YOLO run's layout (``train/box_loss``, ``val/box_loss``, ...); no YOLO run
was made: Ultralytics downloads its weights and data sets at run time, which this machine
cannot. The ground truth (the epoch of each loss's lowest evaluation, the metrics' best
epochs) is what the loop measured while training, never read back from the CSV.

Environment: torch (CPU), numpy, scikit-learn (the framework venv of examples/README.md)::

    /tmp/examples-frameworks/bin/python examples/torch_multihead_csv.py    # both, ~1 min
"""

from __future__ import annotations

import csv
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402
from generate import DATA_SEED, TRAIN_SIZE, load_split_digits  # noqa: E402

NAME = "torch_box_head_overfit"
HEALTHY_NAME = "torch_multihead_healthy"
LOG_FILE = "results.csv"
SEED = 0
INK = 4.0  # a pixel of this intensity (of 16) or more is ink
BOX_JITTER = 0.08  # sd of the annotation jitter, in image widths
COLUMNS = [
    "epoch",
    "train/box_loss",
    "train/cls_loss",
    "metrics/accuracy",
    "metrics/IoU",
    "val/box_loss",
    "val/cls_loss",
    "lr/pg0",
]


@dataclass(frozen=True)
class Recipe:
    name: str
    rows: int  # the first `rows` training digits
    batch: int
    epochs: int
    learning_rate: float
    weight_decay: float


OVERFIT = Recipe(NAME, 60, 10, 150, 1e-3, 0.0)
HEALTHY = Recipe(HEALTHY_NAME, 1280, 64, 30, 1e-3, 0.05)


class TwoHeads(nn.Module):
    """A shared trunk, a class head (logits) and a box head (x0, y0, x1, y1 in [0, 1])."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
        self.cls = nn.Linear(256, 10)
        self.box = nn.Linear(256, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(x)
        return self.cls(features), torch.sigmoid(self.box(features))


def ink_boxes() -> tuple[np.ndarray, np.ndarray]:
    """The annotated boxes of the training and eval digits, in `load_split_digits`' order:
    the ink's bounding box in eighths of the image, plus seeded annotation jitter."""
    images = load_digits().images
    boxes = np.zeros((len(images), 4), dtype=np.float32)
    for i, image in enumerate(images):
        rows = np.flatnonzero((image >= INK).any(axis=1))
        cols = np.flatnonzero((image >= INK).any(axis=0))
        boxes[i] = (cols[0] / 8, rows[0] / 8, (cols[-1] + 1) / 8, (rows[-1] + 1) / 8)
    jitter = np.random.default_rng(SEED).normal(0.0, BOX_JITTER, boxes.shape)
    boxes = np.clip(boxes + jitter.astype(np.float32), 0.0, 1.0)
    order = np.random.default_rng(DATA_SEED).permutation(len(images))
    return boxes[order[:TRAIN_SIZE]], boxes[order[TRAIN_SIZE:]]


def mean_iou(predicted: torch.Tensor, target: torch.Tensor) -> float:
    """Mean IoU of boxes given as (x0, y0, x1, y1); an inverted predicted box has area 0."""
    low = torch.maximum(predicted[:, :2], target[:, :2])
    high = torch.minimum(predicted[:, 2:], target[:, 2:])
    inter = (high - low).clamp(min=0).prod(dim=1)

    def area(box: torch.Tensor) -> torch.Tensor:
        return (box[:, 2] - box[:, 0]).clamp(min=0) * (box[:, 3] - box[:, 1]).clamp(min=0)

    union = area(predicted) + area(target) - inter
    return float((inter / union.clamp(min=1e-9)).mean())


def train_and_log(recipe: Recipe) -> dict[str, list[float]]:
    """Train as the recipe says, writing the run's results.csv; every column as written."""
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    data = load_split_digits()
    box_train, box_val = ink_boxes()
    x_train = torch.tensor(data.x_train[: recipe.rows])
    y_train = torch.tensor(data.y_train[: recipe.rows])
    b_train = torch.tensor(box_train[: recipe.rows])
    x_val, y_val = torch.tensor(data.x_eval), torch.tensor(data.y_eval)
    b_val = torch.tensor(box_val)
    model = TwoHeads()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.learning_rate, weight_decay=recipe.weight_decay
    )
    cls_criterion, box_criterion = nn.CrossEntropyLoss(), nn.L1Loss()
    generator = torch.Generator().manual_seed(SEED)
    batches = recipe.rows // recipe.batch

    out_dir = HERE / recipe.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir()
    log: dict[str, list[float]] = {column: [] for column in COLUMNS}
    with (out_dir / LOG_FILE).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for epoch in range(1, recipe.epochs + 1):
            order = torch.randperm(recipe.rows, generator=generator)
            box_sum, cls_sum = 0.0, 0.0
            model.train()
            for step in range(batches):
                index = order[step * recipe.batch : (step + 1) * recipe.batch]
                logits, boxes = model(x_train[index])
                cls_loss = cls_criterion(logits, y_train[index])
                box_loss = box_criterion(boxes, b_train[index])
                optimizer.zero_grad()
                (cls_loss + box_loss).backward()
                optimizer.step()
                box_sum += box_loss.item()
                cls_sum += cls_loss.item()
            model.eval()
            with torch.no_grad():
                val_logits, val_boxes = model(x_val)
                row = {
                    "epoch": epoch,
                    "train/box_loss": round(box_sum / batches, 6),
                    "train/cls_loss": round(cls_sum / batches, 6),
                    "metrics/accuracy": round(
                        (val_logits.argmax(1) == y_val).float().mean().item(), 5
                    ),
                    "metrics/IoU": round(mean_iou(val_boxes, b_val), 5),
                    "val/box_loss": round(box_criterion(val_boxes, b_val).item(), 6),
                    "val/cls_loss": round(cls_criterion(val_logits, y_val).item(), 6),
                    "lr/pg0": recipe.learning_rate,
                }
            writer.writerow([row[column] for column in COLUMNS])
            for column in COLUMNS:
                log[column].append(float(row[column]))
    return log


def best(values: list[float], higher: bool) -> int:
    """Index of the first best value."""
    return int(np.argmax(values) if higher else np.argmin(values))


def facts(log: dict[str, list[float]]) -> dict[str, Any]:
    epochs = [int(e) for e in log["epoch"]]
    out: dict[str, Any] = {
        "framework": "torch (hand-written loop, csv module)",
        "epochs": epochs[-1],
    }
    for column in COLUMNS[1:-1]:
        i = best(log[column], higher=column.startswith("metrics/"))
        out[column] = {
            "best_step": epochs[i],
            "best": rounded(log[column][i]),
            "first": rounded(log[column][0]),
            "last": rounded(log[column][-1]),
        }
    return out


def entry(log: dict[str, list[float]]) -> dict[str, Any]:
    epochs = [int(e) for e in log["epoch"]]
    val_box, train_box = log["val/box_loss"], log["train/box_loss"]
    k = best(val_box, higher=False)
    iou = best(log["metrics/IoU"], higher=True)
    return {
        "summary": "Hand-written torch loop, a shared 64-256-256 trunk with a class head and a "
        f"box head, Adam 1e-3 without weight decay, on {OVERFIT.rows} training digits whose "
        f"ink boxes carry annotation jitter, {OVERFIT.epochs} epochs, one csv.writer row per "
        "epoch in the layout of a YOLO results.csv: val/box_loss is lowest at "
        f"{val_box[k]:.4g} (epoch {epochs[k]}) and ends at {val_box[-1]:.4g} while "
        f"train/box_loss falls {train_box[0]:.4g} -> {train_box[-1]:.4g}; metrics/IoU is best "
        f"at epoch {epochs[iou]}. Stands for a YOLO run; no YOLO run was made (Ultralytics "
        "downloads its weights and data at run time).",
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "overfitting",
                "detector": "overfitting",
                "metric": "val/box_loss",
                "train_metric": "train/box_loss",
                "best_step": epochs[k],
                "step_range": [epochs[k], epochs[-1]],
                "best_val_box_loss": rounded(val_box[k]),
                "val_box_loss_at_last_eval": rounded(val_box[-1]),
                "best_iou_step": epochs[iou],
                "best_iou": rounded(log["metrics/IoU"][iou]),
                "criterion": "the epoch of the lowest val/box_loss the loop measured, and the "
                "last epoch",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "overfitting": f"val/cls_loss may rise too: the {OVERFIT.rows} digits are memorised "
            "by the class head as well (its own pair, train/cls_loss)",
        },
        "files": [LOG_FILE],
        "steps": epochs[-1],
        "max_steps": OVERFIT.epochs,
        "logging_steps": 1,
        "eval_steps": 1,
        "facts": facts(log),
    }


def healthy_entry(log: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "summary": "The same two-headed loop and results.csv columns on all 1280 training "
        f"digits, batch 64, {HEALTHY.epochs} epochs, AdamW 1e-3 with weight decay "
        f"{HEALTHY.weight_decay}: both eval losses fall and level off. Must be silent.",
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        "may_also_flag": {},
        "files": [LOG_FILE],
        "steps": int(log["epoch"][-1]),
        "max_steps": HEALTHY.epochs,
        "logging_steps": 1,
        "eval_steps": 1,
        "facts": facts(log),
    }


def main() -> None:
    wanted = sys.argv[1:] or [OVERFIT.name, HEALTHY.name]
    for recipe, make in ((OVERFIT, entry), (HEALTHY, healthy_entry)):
        if recipe.name in wanted:
            write_entry(recipe.name, make(train_and_log(recipe)))
            print(recipe.name, "written")


if __name__ == "__main__":
    main()
