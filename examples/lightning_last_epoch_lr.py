"""A real Lightning run whose last epoch blows up, logged by Lightning's own ``CSVLogger``:
a jump at the very end of a log, with nothing after it to show a recovery.

- ``lightning_last_epoch_lr``: a 64-64-10 MLP on scikit-learn's bundled digits (the split
  and standardisation of ``examples/generate.py``), Adam 1e-3, batch 64, 10 epochs,
  ``train_loss`` and ``val_loss`` logged once per epoch (a short, Keras-style log of 10
  points each). The LR schedule has a bug: a ``LambdaLR`` meant to decay the LR 100x for the
  last epoch multiplies it by 100 instead (``100.0`` where ``0.01`` was meant), so the last
  epoch trains at LR 0.1 and both losses jump at the last logged point. No LR is logged (as
  in many published Keras and Lightning logs), so the losses are all a reader has.

On CPU, seeded (``seed_everything``, one torch thread, ``deterministic=True``). The ground
truth is what the module measured in its hooks (the epoch means it passed to ``self.log``),
never read back from the CSV.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_last_epoch_lr.py     # ~20 s

It replaces its folder's ``lightning_logs/`` and its own entry in ``examples/expected.json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lightning_runs  # noqa: E402
from expected_entry import rounded  # noqa: E402
from generate import TRAIN_SIZE, Digits  # noqa: E402

NAME = "lightning_last_epoch_lr"
LOG_FILE = "lightning_logs/version_0/metrics.csv"
BATCH = 64
STEPS_PER_EPOCH = TRAIN_SIZE // BATCH  # 20
EPOCHS = 10
LR = 1e-3
LAST_EPOCH_FACTOR = 100.0  # the bug: 0.01 was meant (decay 100x for the last epoch)


def epoch_end_step(epoch: int) -> int:
    """The global step an epoch's logged values carry (the epoch's last training step)."""
    return (epoch + 1) * STEPS_PER_EPOCH - 1


def last_epoch_factor(epoch: int) -> float:
    """The LR multiplier of `epoch` as the buggy schedule gives it."""
    return LAST_EPOCH_FACTOR if epoch == EPOCHS - 1 else 1.0


class LastEpochLrClassifier(L.LightningModule):
    """64-64-10 MLP; per-epoch train and val losses; the LR schedule's last-epoch bug.
    Records the epoch means it logs and the LR of every epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        self.train_sums: list[tuple[float, int]] = []
        self.val_sums: list[tuple[float, int]] = []
        self.train_losses: list[float] = []
        self.val_losses: list[float] = []
        self.lrs: list[float] = []

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        loss = nn.functional.cross_entropy(self.net(inputs), labels)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        self.train_sums.append((float(loss.detach()) * len(labels), len(labels)))
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        inputs, labels = batch
        loss = nn.functional.cross_entropy(self.net(inputs), labels)
        self.log("val_loss", loss)
        self.val_sums.append((float(loss) * len(labels), len(labels)))

    def on_train_epoch_start(self) -> None:
        self.lrs.append(float(self.trainer.optimizers[0].param_groups[0]["lr"]))

    def on_train_epoch_end(self) -> None:
        self.train_losses.append(_mean(self.train_sums))
        self.train_sums = []

    def on_validation_epoch_end(self) -> None:
        self.val_losses.append(_mean(self.val_sums))
        self.val_sums = []

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=LR)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, last_epoch_factor)
        scheduler = {"scheduler": schedule, "interval": "epoch"}
        return {"optimizer": optimizer, "lr_scheduler": scheduler}


def _mean(sums: list[tuple[float, int]]) -> float:
    """The sample-weighted mean of (loss x batch size, batch size) per batch (Lightning's
    epoch mean weighs each batch by its size the same way)."""
    return sum(total for total, _ in sums) / sum(count for _, count in sums)


def lightning_last_epoch_lr(data: Digits) -> dict[str, Any]:
    L.seed_everything(0, workers=True)
    model = LastEpochLrClassifier()
    steps = lightning_runs.fit(NAME, model, data, TRAIN_SIZE, BATCH, EPOCHS)
    train, val = model.train_losses, model.val_losses
    assert len(train) == len(val) == EPOCHS, (train, val)
    assert model.lrs[-1] == LR * LAST_EPOCH_FACTOR and max(model.lrs[:-1]) == LR, model.lrs
    last = epoch_end_step(EPOCHS - 1)
    best_val = min(range(EPOCHS - 1), key=lambda i: val[i])
    return {
        "summary": (
            f"Lightning 64-64-10 MLP on digits, Adam {LR:g}, batch {BATCH}, {EPOCHS} epochs, "
            "train_loss and val_loss once per epoch (CSVLogger); a LambdaLR bug multiplies the "
            f"LR by {LAST_EPOCH_FACTOR:g} for the last epoch (0.01 was meant): train_loss "
            f"{train[-2]:.3g} -> {train[-1]:.3g} and val_loss {val[-2]:.3g} -> {val[-1]:.3g} at "
            f"the last logged step {last}. No LR logged."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "final_point_jump",
                "detector": "spikes",
                "metric": metric,
                "log_column": column,
                "step": last,
                "cause_step": epoch_end_step(EPOCHS - 2) + 1,
                "criterion": "the epoch the LR schedule multiplied by 100",
                "value_before": rounded(values[-2]),
                "value_last": rounded(values[-1]),
                "min_severity": "warning",
                "max_severity": "warning",
            }
            for metric, column, values in (
                ("train/loss", "train_loss", train),
                ("eval/loss", "val_loss", val),
            )
        ],
        "may_also_flag": {},
        "must_not_flag": [
            {
                "detector": "*",
                "metric": metric,
                "step_range": [0, epoch_end_step(EPOCHS - 2)],
                "why": "the first 9 epochs train normally at Adam 1e-3",
            }
            for metric in ("train/loss", "eval/loss")
        ],
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": STEPS_PER_EPOCH,
        "eval_steps": STEPS_PER_EPOCH,
        "facts": {
            "step_convention": "Lightning's global_step: the first batch is step 0; an "
            "epoch's logged values carry the epoch's last training step",
            "lr_per_epoch": model.lrs,
            "train_loss": [rounded(v) for v in train],
            "val_loss": [rounded(v) for v in val],
            "val_loss_best_step_before_last": epoch_end_step(best_val),
            "val_loss_best_before_last": rounded(val[best_val]),
        },
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {NAME: lightning_last_epoch_lr}


if __name__ == "__main__":
    lightning_runs.main(sys.argv[1:], RUNS)
