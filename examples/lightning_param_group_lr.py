"""A real Lightning run with two optimizer parameter groups, their learning rates logged by
Lightning's own ``LearningRateMonitor`` (one column per group, ``lr-Adam/pg1`` and
``lr-Adam/pg2``) and ``CSVLogger``.

``lightning_param_group_lr``: a 64-128-128-10 MLP on scikit-learn's bundled digits (the
split and standardisation of ``examples/generate.py``), Adam with two parameter groups (the
two hidden layers at LR 1e-3, the output layer at 3e-3, a usual split between a body and a
head), batch 64 (20 steps per epoch), 30 epochs: 600 steps, validated after every epoch.
The schedule, a ``LambdaLR`` stepped every batch, is a 10-step linear warmup then a linear
decay sized for a 150-step run: both groups' LR reaches 0 at step 150 and stays there for
the last 75% of the run, which trains nothing (the classic ``num_training_steps`` too
small). The LR checks must judge a parameter group's LR (the first group, read as `lr`)
and report the LR at ~0 from about step 150.

On CPU, seeded (``seed_everything``, one torch thread, ``deterministic=True``). The ground
truth is what the module measured in its hooks (each group's LR at every step, the step
from which it is 0), never read back from the CSV.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/python examples/lightning_param_group_lr.py     # ~15 s

It replaces its folder's ``lightning_logs/`` and its own entry in ``examples/expected.json``.
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402
from generate import load_split_digits  # noqa: E402

NAME = "lightning_param_group_lr"
LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
BATCH = 64
EPOCHS = 30
BODY_LR = 1e-3
HEAD_LR = 3e-3
WARMUP = 10
DECAY_END = 150  # the step the schedule was sized for: the LR is 0 from here


def schedule(step: int) -> float:
    """The LR multiplier at `step`: linear warmup, then a linear decay to 0 at DECAY_END."""
    if step < WARMUP:
        return (step + 1) / WARMUP
    return max(0.0, (DECAY_END - step) / (DECAY_END - WARMUP))


class TwoGroupClassifier(L.LightningModule):
    """An MLP whose body and head are two parameter groups with their own LR."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
        self.head = nn.Linear(128, 10)
        self.loss_function = nn.CrossEntropyLoss()
        self.group_lrs: list[tuple[int, float, float]] = []  # (global step, body, head)
        self.train_losses: list[float] = []

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        groups = self.trainer.optimizers[0].param_groups
        self.group_lrs.append((self.global_step, groups[0]["lr"], groups[1]["lr"]))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        loss = self.loss_function(self.head(self.body(inputs)), labels)
        self.log("train_loss", loss)
        self.train_losses.append(loss.item())
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        inputs, labels = batch
        self.log("val_loss", self.loss_function(self.head(self.body(inputs)), labels))

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(
            [
                {"params": self.body.parameters(), "lr": BODY_LR},
                {"params": self.head.parameters(), "lr": HEAD_LR},
            ]
        )
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }


def main() -> None:
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    L.seed_everything(SEED, workers=True)
    torch.set_num_threads(1)
    data = load_split_digits()
    folder = HERE / NAME
    log_root = folder / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    folder.mkdir(exist_ok=True)
    train_set = TensorDataset(torch.from_numpy(data.x_train), torch.from_numpy(data.y_train))
    eval_set = TensorDataset(torch.from_numpy(data.x_eval), torch.from_numpy(data.y_eval))
    model = TwoGroupClassifier()
    trainer = L.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(folder), name="lightning_logs"),
        callbacks=[LearningRateMonitor(logging_interval="step")],
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        deterministic=True,
        num_sanity_val_steps=0,
    )
    trainer.fit(
        model,
        DataLoader(train_set, batch_size=BATCH, shuffle=True),
        DataLoader(eval_set, batch_size=128),
    )
    write_entry(NAME, entry(model, int(trainer.global_step) - 1))
    print(NAME, "written")


def entry(model: TwoGroupClassifier, last_step: int) -> dict[str, Any]:
    """The run's expected.json entry, from what the module measured."""
    lrs = model.group_lrs
    zero_from = next(
        step
        for index, (step, body, head) in enumerate(lrs)
        if all(b == 0 for _, b, _ in lrs[index:])
    )
    body_peak = max(body for _, body, _ in lrs)
    head_peak = max(head for _, _, head in lrs)
    return {
        "summary": (
            "Lightning, two Adam parameter groups (body LR 1e-3, head 3e-3), their LRs logged "
            "by LearningRateMonitor as one column per group; a LambdaLR warmup + linear decay "
            f"sized for {DECAY_END} steps in a {last_step + 1}-step run: both LRs are 0 from "
            f"step {zero_from} to the end. The LR checks must read a parameter group's LR."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "premature_lr_decay",
                "detector": "lr_schedule",
                "metric": "lr",
                "log_column": "lr-Adam/pg1",
                "step": zero_from,
                "criterion": "the first step from which the module saw both groups' LR at 0",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "plateau": "the loss flattens once the LR is 0 (LR decayed to ~0 too early)",
        },
        "files": [LOG_FILE],
        "steps": last_step,
        "max_steps": last_step,
        "logging_steps": 1,
        "eval_steps": last_step // EPOCHS,
        "facts": {
            "step_convention": "Lightning's global_step: the first batch is step 0",
            "body_lr_peak": rounded(body_peak),
            "head_lr_peak": rounded(head_peak),
            "lr_zero_from_step": zero_from,
            "initial_train_loss": rounded(model.train_losses[0]),
            "train_loss_at_zero_step": rounded(model.train_losses[zero_from]),
            "final_train_loss": rounded(model.train_losses[-1]),
        },
    }


if __name__ == "__main__":
    main()
