"""A real hand-written torch loop that overfits, logging the batch index within the epoch as
``step`` with Python's ``csv`` module, two rows per epoch.

``torch_epoch_step_overfit``: an ``nn.Sequential`` MLP (64-128-128-10), AdamW 3e-3 with
weight decay 0 (Adam), no dropout, on the first 200 training digits of ``generate.py``'s
split (batch 10, 20 batches per epoch, seeded shuffle), 50 epochs, validated on the 517
eval digits at batches 9 and 19 of every epoch. The loop writes ``training_log.csv`` as
such scripts do: ``csv.writer``, a header
``epoch,step,train_loss,train_acc,val_loss,val_acc``, then one row per logging point,
``step`` being the loop's batch index within the epoch (so it starts again at 9 in every
epoch) and ``train_loss``/``train_acc`` the mean over the batches since the last row. The
200 digits are memorised: the train loss goes to ~0 while the eval loss bottoms out within
the first epochs and rises for the rest of the run.

A reader that takes ``step`` for a global step keeps only the last epoch's two rows (the
last-wins rule for a repeated step); counted across epochs, the 100 rows are 100 points.
The ground truth (the global step of every row, the eval loss minimum) is what the loop
counted while training, never read back from the CSV.

``torch_epoch_step_healthy``, its healthy twin: the same loop and rows on all 1,280
training digits, batch 64 (20 batches per epoch), 15 epochs, AdamW 1e-3 with weight decay
0.05: the eval loss falls and levels off. Must be silent.

Environment (the framework venv of examples/README.md; torch, numpy, scikit-learn)::

    /tmp/examples-frameworks/bin/python examples/torch_epoch_step_csv.py    # both, ~20 s
    /tmp/examples-frameworks/bin/python examples/torch_epoch_step_csv.py torch_epoch_step_healthy
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
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402
from generate import load_split_digits  # noqa: E402

NAME = "torch_epoch_step_overfit"
HEALTHY_NAME = "torch_epoch_step_healthy"
LOG_FILE = "training_log.csv"
SEED = 0
ROWS = 200
BATCH = 10
EPOCHS = 50
LOG_EVERY = 10  # batches: rows at batch indices 9 and 19 of every epoch
LEARNING_RATE = 3e-3


@dataclass(frozen=True)
class Recipe:
    name: str
    rows: int  # the first `rows` training digits
    batch: int
    epochs: int
    learning_rate: float
    weight_decay: float


OVERFIT = Recipe(NAME, ROWS, BATCH, EPOCHS, LEARNING_RATE, 0.0)
HEALTHY = Recipe(HEALTHY_NAME, 1280, 64, 15, 1e-3, 0.05)


def main() -> None:
    wanted = sys.argv[1:] or [OVERFIT.name, HEALTHY.name]
    for recipe in (OVERFIT, HEALTHY):
        if recipe.name in wanted:
            steps, train, val = train_and_log(recipe)
            make = entry if recipe is OVERFIT else healthy_entry
            write_entry(recipe.name, make(steps, train, val))
            print(recipe.name, "written")


def train_and_log(recipe: Recipe) -> tuple[list[int], list[float], list[float]]:
    """Train as the recipe says, writing the run's training_log.csv; the loop's global step
    (batches done, minus one), train loss and eval loss of every row written."""
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    data = load_split_digits()
    x_train = torch.tensor(data.x_train[: recipe.rows])
    y_train = torch.tensor(data.y_train[: recipe.rows])
    x_val, y_val = torch.tensor(data.x_eval), torch.tensor(data.y_eval)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
    model.append(nn.Linear(128, 10))
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.learning_rate, weight_decay=recipe.weight_decay
    )
    criterion = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(SEED)
    batches = recipe.rows // recipe.batch

    out_dir = HERE / recipe.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir()
    global_steps: list[int] = []
    val_losses: list[float] = []
    train_losses: list[float] = []
    done = 0
    with (out_dir / LOG_FILE).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["epoch", "step", "train_loss", "train_acc", "val_loss", "val_acc"])
        for epoch in range(1, recipe.epochs + 1):
            order = torch.randperm(recipe.rows, generator=generator)
            running_loss, running_correct, running_seen = 0.0, 0, 0
            for step in range(batches):
                index = order[step * recipe.batch : (step + 1) * recipe.batch]
                model.train()
                logits = model(x_train[index])
                loss = criterion(logits, y_train[index])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                done += 1
                running_loss += loss.item() * len(index)
                running_correct += int((logits.argmax(1) == y_train[index]).sum())
                running_seen += len(index)
                if (step + 1) % LOG_EVERY == 0:
                    model.eval()
                    with torch.no_grad():
                        val_logits = model(x_val)
                        val_loss = criterion(val_logits, y_val).item()
                        val_acc = (val_logits.argmax(1) == y_val).float().mean().item()
                    train_loss = running_loss / running_seen
                    writer.writerow(
                        [
                            epoch,
                            step,
                            round(train_loss, 6),
                            round(running_correct / running_seen, 4),
                            round(val_loss, 6),
                            round(val_acc, 4),
                        ]
                    )
                    handle.flush()
                    global_steps.append(done - 1)
                    val_losses.append(round(val_loss, 6))
                    train_losses.append(round(train_loss, 6))
                    running_loss, running_correct, running_seen = 0.0, 0, 0
    return global_steps, train_losses, val_losses


def entry(steps: list[int], train: list[float], val: list[float]) -> dict[str, Any]:
    best = int(np.argmin(val))
    last_third = val[-len(val) // 3 :]
    return {
        "summary": "Hand-written torch loop, 64-128-128-10 MLP, AdamW 3e-3 with weight decay 0, "
        "no regularisation, "
        f"on {ROWS} training digits (batch {BATCH}), {EPOCHS} epochs, two csv.writer rows per "
        "epoch whose `step` is the batch index within the epoch (9, 19): the eval loss "
        f"bottoms out at {val[best]:.4g} (global step {steps[best]}) and rises to "
        f"{val[-1]:.4g} while the train loss goes to ~0. Read as global steps, only the last "
        "epoch's two rows would remain.",
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "overfitting",
                "detector": "overfitting",
                "metric": "eval/loss",
                "log_column": "val_loss",
                "best_step": steps[best],
                "step_range": [steps[best], steps[-1]],
                "best_eval_loss": rounded(val[best]),
                "eval_loss_at_last_eval": rounded(val[-1]),
                "median_val_loss_last_third": rounded(float(np.median(last_third))),
                "criterion": "the global step the loop counted (batches done, minus one) of "
                "the lowest eval loss, and of the last row",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {},
        "files": [LOG_FILE],
        "steps": steps[-1],
        "max_steps": EPOCHS * (ROWS // BATCH) - 1,
        "logging_steps": LOG_EVERY,
        "eval_steps": LOG_EVERY,
        "facts": {
            "step_convention": "the CSV's `step` is the batch index within the epoch (0-based); "
            "the steps here are the loop's global count, (epoch - 1) x "
            f"{ROWS // BATCH} + step",
            "rows": len(steps),
            "steps_per_epoch": ROWS // BATCH,
            "global_steps": steps,
            "val_loss": val,
            "train_loss": train,
            "framework": "torch (hand-written loop, csv module)",
        },
    }


def healthy_entry(steps: list[int], train: list[float], val: list[float]) -> dict[str, Any]:
    return {
        "summary": "The same hand-written loop and csv.writer rows (`step` the batch index "
        f"within the epoch, 9 and 19) on all 1280 training digits, batch 64, "
        f"{HEALTHY.epochs} epochs, AdamW 1e-3 with weight decay {HEALTHY.weight_decay}: the "
        f"eval loss falls to {min(val):.4g} and stays there. Must be silent.",
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        "may_also_flag": {},
        "files": [LOG_FILE],
        "steps": steps[-1],
        "max_steps": HEALTHY.epochs * (HEALTHY.rows // HEALTHY.batch) - 1,
        "logging_steps": LOG_EVERY,
        "eval_steps": LOG_EVERY,
        "facts": {
            "step_convention": "the CSV's `step` is the batch index within the epoch (0-based); "
            "the steps here are the loop's global count, (epoch - 1) x "
            f"{HEALTHY.rows // HEALTHY.batch} + step",
            "rows": len(steps),
            "steps_per_epoch": HEALTHY.rows // HEALTHY.batch,
            "global_steps": steps,
            "val_loss": val,
            "train_loss": train,
            "framework": "torch (hand-written loop, csv module)",
        },
    }


if __name__ == "__main__":
    main()
