"""A real ultralytics (YOLO) training run, for the learning rates its ``results.csv`` logs
once per epoch and per optimizer parameter group: ``lr/pg0``, ``lr/pg1``, ``lr/pg2``.

``yolo_param_groups``: YOLOv8n built from its model yaml (no pretrained weights: nothing is
downloaded), trained on CPU on a small generated detection set (one class, ``square``:
64x64 noise images each holding one bright square of side 12-27 px, 256 for training and
32 for validation, YOLO-format labels), ``imgsz=64``, batch 8 (32 steps per epoch), 30
epochs, ultralytics' defaults otherwise (``optimizer=auto``, which picks AdamW at LR 0.002
for a run this short; a warmup of max(3 epochs, 100 steps); a linear decay to
``lrf`` = 1% of the peak), ``plots=False``, seeded and ``deterministic=True``.

In ultralytics 8.4 the groups are, in order, the weights with decay (pg0), the BatchNorm
weights (pg1) and the biases (pg2). The biases' warmup starts at ``warmup_bias_lr`` (0.1 by
default), but ``optimizer=auto`` sets it to 0, so here the three groups hold one LR at
every epoch: one warmup-then-decay schedule, healthy, that the LR checks must read
(``lr/pg0`` as ``lr``) and leave silent.

Only ``results.csv`` is kept (``args.yaml`` names the scratch folder, the weights are large
and beside the point). The ground truth is what the training wrote and what the
optimizer held at the end of each epoch (a callback), never read back from the CSV.

Environment: a venv with ultralytics (it brings torch, torchvision and opencv)::

    python3 -m venv /tmp/examples-yolo
    /tmp/examples-yolo/bin/pip install -r examples/yolo_requirements.txt
    YOLO_OFFLINE=1 /tmp/examples-yolo/bin/python examples/yolo_param_groups.py    # ~1 min
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402

NAME = "yolo_param_groups"
SEED = 0
TRAIN_IMAGES = 256
VAL_IMAGES = 32
SIZE = 64
EPOCHS = 30
BATCH = 8
KEPT = ("results.csv",)


def make_dataset(root: Path) -> Path:
    """The generated square-detection set in YOLO layout; the data.yaml path."""
    rng = np.random.default_rng(SEED)
    for split, count in (("train", TRAIN_IMAGES), ("val", VAL_IMAGES)):
        (root / "images" / split).mkdir(parents=True)
        (root / "labels" / split).mkdir(parents=True)
        for index in range(count):
            image = (rng.random((SIZE, SIZE, 3)) * 60).astype(np.uint8)
            side = int(rng.integers(12, 28))
            x, y = (int(v) for v in rng.integers(0, SIZE - side, size=2))
            image[y : y + side, x : x + side] = 220
            Image.fromarray(image).save(root / "images" / split / f"{index}.png")
            box = ((x + side / 2) / SIZE, (y + side / 2) / SIZE, side / SIZE, side / SIZE)
            label = "0 " + " ".join(f"{v:.6f}" for v in box) + "\n"
            (root / "labels" / split / f"{index}.txt").write_text(label)
    data = root / "data.yaml"
    data.write_text(f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n  0: square\n")
    return data


def main() -> None:
    os.environ.setdefault("YOLO_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.setdefault("YOLO_CONFIG_DIR", str(Path(scratch) / "config"))
        from ultralytics import YOLO  # after YOLO_CONFIG_DIR: settings go to the scratch dir

        data = make_dataset(Path(scratch) / "data")
        group_lrs: list[list[float]] = []
        model = YOLO("yolov8n.yaml")
        model.add_callback(
            "on_train_epoch_end",
            lambda trainer: group_lrs.append([g["lr"] for g in trainer.optimizer.param_groups]),
        )
        model.train(
            data=str(data),
            epochs=EPOCHS,
            imgsz=SIZE,
            batch=BATCH,
            workers=0,
            device="cpu",
            plots=False,
            amp=False,
            seed=SEED,
            deterministic=True,
            project=str(Path(scratch) / "runs"),
            name=NAME,
            exist_ok=True,
            verbose=False,
        )
        out = HERE / NAME
        if out.exists():
            shutil.rmtree(out)
        out.mkdir()
        for kept in KEPT:
            shutil.copy(Path(scratch) / "runs" / NAME / kept, out / kept)
    write_entry(NAME, entry(group_lrs))
    print(NAME, "written")


def entry(group_lrs: list[list[float]]) -> dict[str, Any]:
    """The run's expected.json entry, from the LRs the optimizer held at each epoch's end."""
    first = [lrs[0] for lrs in group_lrs]
    peak = max(first)
    return {
        "summary": (
            "A real ultralytics YOLOv8n run (from its yaml, no weights downloaded) on 256 "
            f"generated 64x64 square-detection images, {EPOCHS} epochs: results.csv logs "
            f"lr/pg0, lr/pg1, lr/pg2 once per epoch; warmup to {peak:.3g} at epoch "
            f"{first.index(peak) + 1}, then a linear decay to {first[-1]:.3g}. Healthy "
            "schedule: the LR checks must read lr/pg0 as lr and stay silent on it."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        "may_also_flag": {},
        "must_not_flag": [
            {
                "detector": "lr_schedule",
                "metric": "lr",
                "step_range": [1, EPOCHS],
                "why": "ultralytics' own warmup then linear decay, the same in every group",
            }
        ],
        "files": ["results.csv"],
        "steps": EPOCHS,
        "max_steps": EPOCHS,
        "logging_steps": 1,
        "eval_steps": 1,
        "facts": {
            "step_convention": "results.csv's epoch column, from 1",
            "param_groups": len(group_lrs[0]),
            "lr_pg0": [rounded(v) for v in first],
            "lr_pg0_peak": rounded(peak),
            "lr_pg0_peak_epoch": first.index(peak) + 1,
            "groups_equal_from_epoch": next(
                epoch + 1
                for epoch in range(len(group_lrs))
                if all(len(set(lrs)) == 1 for lrs in group_lrs[epoch:])
            ),
            "framework": "ultralytics 8.4.190 (YOLOv8n), CPU",
        },
    }


if __name__ == "__main__":
    main()
