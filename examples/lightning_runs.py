"""Two real Lightning runs logged by Lightning's own ``CSVLogger``: what a report must say.

Both train a ``LightningModule`` MLP on scikit-learn's bundled digits (the split and
standardisation of ``examples/generate.py``) on CPU, seeded (``seed_everything``, one torch
thread, ``deterministic=True``), validating on the 517 eval digits after every epoch, and
write ``lightning_logs/version_0/metrics.csv`` beside this script's run folder.

- ``lightning_overfit_acc``: a 64-256-256-10 MLP, Adam 1e-3, no regularisation, on only the
  first 100 training digits (batch 10, 10 steps per epoch), 120 epochs. ``val_loss`` is best
  early and then rises as the model grows over-confident on the digits it gets wrong, while
  ``val_acc`` peaks at another epoch: the report must name both best checkpoints, in
  Lightning's words (``ModelCheckpoint``), never transformers' ``load_best_model_at_end``.
- ``lightning_accuracy_only``: a healthy 64-64-10 MLP (Adam 1e-3, batch 64, 15 epochs, 300
  steps) whose ``LightningModule`` logs only ``train_acc`` (per step) and ``val_acc`` (per
  epoch), no loss: a report on it must not read "healthy", but say that no loss was checked.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_runs.py          # both, ~2 min

Each run replaces its folder's ``lightning_logs/`` and its own entry in
``examples/expected.json``; the ground truth is what the module measured in its hooks (the
values it passed to ``self.log``), never read back from the CSV.
"""

from __future__ import annotations

import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402
from generate import Digits, load_split_digits  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"


class Classifier(L.LightningModule):
    """An MLP whose logging is chosen per run: the losses, the accuracies, or both."""

    def __init__(self, hidden: tuple[int, ...], log_loss: bool) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = 64
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, 10))
        self.net = nn.Sequential(*layers)
        self.loss_function = nn.CrossEntropyLoss()
        self.log_loss = log_loss
        self.val_batches: list[tuple[float, float, int]] = []  # (loss sum, correct, count)
        self.epochs: list[dict[str, float]] = []  # per validation epoch, measured here

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        logits = self.net(inputs)
        loss = self.loss_function(logits, labels)
        accuracy = (logits.argmax(dim=1) == labels).float().mean()
        if self.log_loss:
            self.log("train_loss", loss)
        self.log("train_acc", accuracy)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        inputs, labels = batch
        logits = self.net(inputs)
        loss = self.loss_function(logits, labels)
        accuracy = (logits.argmax(dim=1) == labels).float().mean()
        if self.log_loss:
            self.log("val_loss", loss)  # on_epoch by default in validation: one row per epoch
        self.log("val_acc", accuracy)
        count = int(labels.numel())
        self.val_batches.append((loss.item() * count, float(accuracy.item()) * count, count))

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            self.val_batches.clear()
            return
        total = sum(count for _, _, count in self.val_batches)
        self.epochs.append(
            {
                "step": float(self.global_step - 1),  # the step the epoch's row is logged at
                "val_loss": sum(loss for loss, _, _ in self.val_batches) / total,
                "val_acc": sum(correct for _, correct, _ in self.val_batches) / total,
            }
        )
        self.val_batches.clear()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def fit(name: str, model: Classifier, data: Digits, rows: int, batch: int, epochs: int) -> int:
    """Train with CSVLogger into ``examples/<name>/lightning_logs``; the last global step."""
    folder = HERE / name
    log_root = folder / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    folder.mkdir(exist_ok=True)
    train_set = TensorDataset(
        torch.from_numpy(data.x_train[:rows]), torch.from_numpy(data.y_train[:rows])
    )
    eval_set = TensorDataset(torch.from_numpy(data.x_eval), torch.from_numpy(data.y_eval))
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(folder), name="lightning_logs"),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        deterministic=True,
        num_sanity_val_steps=0,
    )
    trainer.fit(
        model,
        DataLoader(train_set, batch_size=batch, shuffle=True),
        DataLoader(eval_set, batch_size=128),
    )
    return int(trainer.global_step)


OVERFIT_ROWS = 100
OVERFIT_EPOCHS = 120


def lightning_overfit_acc(data: Digits) -> dict[str, Any]:
    L.seed_everything(3, workers=True)
    model = Classifier((256, 256), log_loss=True)
    steps = fit("lightning_overfit_acc", model, data, OVERFIT_ROWS, 10, OVERFIT_EPOCHS)
    epochs = model.epochs
    best = min(epochs, key=lambda e: e["val_loss"])
    best_acc = max(epochs, key=lambda e: e["val_acc"])  # the first epoch at the maximum
    last = epochs[-1]
    assert best["step"] != best_acc["step"], (best, best_acc)
    assert last["val_loss"] > 1.1 * best["val_loss"], (best, last)
    return {
        "summary": (
            f"Lightning MLP (64-256-256-10), Adam 1e-3, no regularisation, on {OVERFIT_ROWS} "
            f"training digits for {OVERFIT_EPOCHS} epochs; CSVLogger. val_loss is best at step "
            f"{int(best['step'])} and rises after it, val_acc is best at step "
            f"{int(best_acc['step'])}: the two best checkpoints differ."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "overfitting",
                "detector": "overfitting",
                "metric": "eval/loss",
                "log_column": "val_loss",
                "best_step": int(best["step"]),
                "step_range": [int(best["step"]), int(last["step"])],
                "best_eval_loss": rounded(best["val_loss"]),
                "last_eval_loss": rounded(last["val_loss"]),
                "best_val_acc_step": int(best_acc["step"]),
                "best_val_acc": rounded(best_acc["val_acc"]),
                "val_acc_at_best_eval_loss": rounded(best["val_acc"]),
                "framework": "lightning",
                "min_severity": "warning",
            }
        ],
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": steps // OVERFIT_EPOCHS,
        "facts": {
            "step_convention": "Lightning's global_step: the first batch is step 0; the "
            "epoch's validation row is logged at the epoch's last training step",
            "val_loss": [rounded(e["val_loss"]) for e in epochs],
            "val_acc": [rounded(e["val_acc"]) for e in epochs],
        },
    }


ACCURACY_EPOCHS = 15


def lightning_accuracy_only(data: Digits) -> dict[str, Any]:
    L.seed_everything(4, workers=True)
    model = Classifier((64,), log_loss=False)
    steps = fit("lightning_accuracy_only", model, data, len(data.x_train), 64, ACCURACY_EPOCHS)
    accuracy = [e["val_acc"] for e in model.epochs]
    assert accuracy[-1] > 0.9, accuracy
    return {
        "summary": (
            "Healthy Lightning MLP on digits whose module logs only train_acc and val_acc "
            f"(no loss), {ACCURACY_EPOCHS} epochs; CSVLogger. Nothing is wrong with the run, "
            "but a report on it checked no loss: it must not read healthy."
        ),
        "healthy": True,
        "must_be_silent": True,
        "no_loss_logged": True,
        "pathologies": [],
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": steps // ACCURACY_EPOCHS,
        "facts": {
            "logged": ["train_acc", "val_acc"],
            "val_acc": [rounded(value) for value in accuracy],
        },
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {
    "lightning_overfit_acc": lightning_overfit_acc,
    "lightning_accuracy_only": lightning_accuracy_only,
}


def main(names: list[str]) -> None:
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    torch.set_num_threads(1)
    write_runs(RUNS, names, load_split_digits())


if __name__ == "__main__":
    main(sys.argv[1:])
