"""A real Lightning run where one batch arrives with its inputs scaled 100x; CSVLogger log.

A ``LightningModule`` MLP (64 -> 64 -> 10, ReLU) is trained on scikit-learn's bundled digits
(the split and standardisation of ``examples/generate.py``) with SGD + momentum (LR 0.02), batch
64 (20 steps per epoch), 30 epochs (600 steps), Gaussian input-noise augmentation (std 1.0,
so every batch keeps some misclassified samples), validating on the 517 eval digits at the end
of every epoch. The batch of global step ``FAULT_STEP`` is multiplied by ``FAULT_SCALE`` inside
``training_step`` (a batch whose normalisation was skipped): its loss jumps, the large
gradient throws the weights off, and the loss takes tens of steps to come back.

Logging is Lightning's own ``CSVLogger`` (``log_every_n_steps=1``), as real users log:
``train_loss`` with ``on_step=True, on_epoch=True`` (so ``train_loss_step`` and
``train_loss_epoch`` columns), ``val_loss`` with ``on_step=True, on_epoch=True`` (per
validation batch ``val_loss_step`` and per epoch ``val_loss_epoch``), and the LR.

Environment (see examples/README.md; one venv can serve all the framework runs)::

    python3 -m venv /tmp/examples-frameworks
    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_input_spike/train.py

The script replaces ``lightning_logs/`` beside it and its own entry in
``examples/expected.json``.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import warnings
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from expected_entry import rounded, write_entry  # noqa: E402
from generate import load_split_digits  # noqa: E402

NAME = HERE.name
SEED = 5
EPOCHS = 30
BATCH_SIZE = 64
LEARNING_RATE = 0.02
NOISE_STD = 1.0  # Gaussian input-noise augmentation: the model never fits every batch exactly
FAULT_STEP = 300  # Lightning's global_step of the corrupted batch (the CSV's `step`)
FAULT_SCALE = 100.0


class DigitsClassifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        self.loss_function = nn.CrossEntropyLoss()
        self.step_losses: dict[int, float] = {}  # global_step -> loss, measured here

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        inputs = inputs + NOISE_STD * torch.randn_like(inputs)
        if self.global_step == FAULT_STEP:
            inputs = inputs * FAULT_SCALE
        loss = self.loss_function(self.net(inputs), labels)
        self.step_losses[self.global_step] = loss.item()
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"], on_step=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        inputs, labels = batch
        loss = self.loss_function(self.net(inputs), labels)
        self.log("val_loss", loss, on_step=True, on_epoch=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=LEARNING_RATE, momentum=0.9)


def main() -> None:
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    L.seed_everything(SEED, workers=True)
    torch.set_num_threads(1)
    data = load_split_digits()
    train_set = TensorDataset(torch.from_numpy(data.x_train), torch.from_numpy(data.y_train))
    eval_set = TensorDataset(torch.from_numpy(data.x_eval), torch.from_numpy(data.y_eval))
    log_root = HERE / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    model = DigitsClassifier()
    trainer = L.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(HERE), name="lightning_logs"),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        deterministic=True,
    )
    trainer.fit(
        model,
        DataLoader(train_set, batch_size=BATCH_SIZE, shuffle=True),
        DataLoader(eval_set, batch_size=128),
    )

    losses = model.step_losses
    after_fault = range(FAULT_STEP, FAULT_STEP + 80)
    print("from the fault:", " ".join(f"{losses[step]:.3g}" for step in after_fault))
    write_entry(NAME, ground_truth(losses, trainer.global_step))


def ground_truth(losses: dict[int, float], steps: int) -> dict[str, object]:
    """What the fault did, from the per-step losses measured in ``training_step``."""
    baseline = statistics.median(losses[step] for step in range(FAULT_STEP - 50, FAULT_STEP))
    peak_step = max(range(FAULT_STEP, FAULT_STEP + 20), key=lambda step: losses[step])
    recovered = next(
        step
        for step in range(peak_step + 1, steps - 5)
        if all(losses[later] <= 2 * baseline for later in range(step, step + 5))
    )
    early = range(1, FAULT_STEP)
    bump_step = max(early, key=lambda step: losses[step] - losses[step - 1])
    ratio_step = max(early, key=lambda step: losses[step] / losses[step - 1])
    return {
        "summary": (
            "Lightning MLP on digits, SGD+momentum, input-noise augmentation, CSVLogger; the "
            "batch of step "
            f"{FAULT_STEP} has its inputs scaled {FAULT_SCALE:g}x (normalisation skipped): "
            "the large gradient throws the weights off and train_loss_step jumps, then takes "
            "tens of steps to come back; the early bumps of ordinary batch noise are harmless."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "loss_spike",
                "detector": "spikes",
                "metric": "train/loss",
                "cause_step": FAULT_STEP,
                "step": peak_step,
                "step_range": [FAULT_STEP, recovered],
                "loss_at_cause_step": rounded(losses[FAULT_STEP]),
                "peak_loss": rounded(losses[peak_step]),
                "median_loss_50_steps_before": rounded(baseline),
                "recovered_step": recovered,
                "recovery_criterion": "first step after the peak from which 5 consecutive "
                "losses are <= 2x the median of the 50 steps before the fault",
                "log_column": "train_loss_step",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "spikes": "val_loss_epoch (eval/loss) of the fault's epoch is higher too: the "
            "weights were thrown off for most of that epoch",
        },
        "must_not_flag": [
            {
                "detector": "spikes",
                "metric": "train/loss",
                "step_range": [0, FAULT_STEP - 1],
                "why": "ordinary batch-to-batch noise while the loss falls fast early on",
                "largest_rise_step": bump_step,
                "largest_rise": rounded(losses[bump_step] - losses[bump_step - 1]),
                "largest_ratio_step": ratio_step,
                "largest_ratio": rounded(losses[ratio_step] / losses[ratio_step - 1]),
            },
            {
                # Per-validation-batch values, their `step` the batch index (0-4) or the
                # training step of the epoch's end: not a series of evaluations.
                "detector": "*",
                "metric": "val_loss_step",
                "step_range": [0, steps],
                "why": "val_loss_step is one value per validation batch, not an evaluation",
            },
            {
                "detector": "*",
                "metric": "train_loss_epoch",
                "step_range": [0, steps],
                "why": "the epoch twin of train_loss_step: one finding per quantity",
            },
        ],
        "files": ["lightning_logs/version_0/metrics.csv"],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": steps // EPOCHS,
        "facts": {
            "initial_train_loss": rounded(losses[0]),
            "final_train_loss_mean_last_50_steps": rounded(
                statistics.fmean(losses[step] for step in range(steps - 50, steps))
            ),
            "max_lr": LEARNING_RATE,
            "step_convention": "Lightning's global_step: the first batch is step 0",
        },
    }


if __name__ == "__main__":
    main()
