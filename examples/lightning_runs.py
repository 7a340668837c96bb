"""Three real Lightning runs logged by Lightning's own ``CSVLogger``: what a report must say.

Each trains a ``LightningModule`` MLP on scikit-learn's bundled digits (the split and
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
- ``lightning_finetune_lr_too_high``: a 64-128-10 MLP pretrained in plain torch on every
  training digit (the "pretrained checkpoint"), validated with ``trainer.validate`` before
  ``fit``, then fine-tuned on 100 digits with input-noise augmentation at Adam 4e-3 (four
  times the pretraining LR; 10 epochs, batch 32): ``val_loss`` is best at the first epoch
  and its last evaluations stay 30-45% above it while the train loss does not fall. The
  report must say the eval degrades while the train loss is flat, not call it overfitting.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_runs.py          # all, ~2 min

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
                # The step the epoch's row is logged at (0 for a validate() before fit).
                "step": float(max(self.global_step - 1, 0)),
                "val_loss": sum(loss for loss, _, _ in self.val_batches) / total,
                "val_acc": sum(correct for _, correct, _ in self.val_batches) / total,
            }
        )
        self.val_batches.clear()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def fit(
    name: str,
    model: Classifier,
    data: Digits,
    rows: int,
    batch: int,
    epochs: int,
    validate_first: bool = False,
) -> int:
    """Train with CSVLogger into ``examples/<name>/lightning_logs``; the last global step.
    ``validate_first``: one ``trainer.validate`` before ``fit`` (the starting model's
    score, logged at step 0 by the same logger)."""
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
    eval_loader = DataLoader(eval_set, batch_size=128)
    if validate_first:
        trainer.validate(model, eval_loader, verbose=False)
    trainer.fit(model, DataLoader(train_set, batch_size=batch, shuffle=True), eval_loader)
    return int(trainer.global_step)


def epoch_log_layout(steps: int, epochs: int) -> dict[str, Any]:
    """expected.json's file and step fields of a run validated once per epoch."""
    return {
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": steps // epochs,
    }


def val_loss_rise(kind: str, best: dict[str, float], last: dict[str, float]) -> dict[str, Any]:
    """expected.json's fields of a val_loss that ends above its best (overfitting's id)."""
    return {
        "kind": kind,
        "detector": "overfitting",
        "metric": "eval/loss",
        "log_column": "val_loss",
        "best_step": int(best["step"]),
        "step_range": [int(best["step"]), int(last["step"])],
        "best_eval_loss": rounded(best["val_loss"]),
        "last_eval_loss": rounded(last["val_loss"]),
    }


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
                **val_loss_rise("overfitting", best, last),
                "best_val_acc_step": int(best_acc["step"]),
                "best_val_acc": rounded(best_acc["val_acc"]),
                "val_acc_at_best_eval_loss": rounded(best["val_acc"]),
                "framework": "lightning",
                "min_severity": "warning",
            }
        ],
        **epoch_log_layout(steps, OVERFIT_EPOCHS),
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
        **epoch_log_layout(steps, ACCURACY_EPOCHS),
        "facts": {
            "logged": ["train_acc", "val_acc"],
            "val_acc": [rounded(value) for value in accuracy],
        },
    }


FINETUNE_ROWS = 100
FINETUNE_EPOCHS = 10
FINETUNE_LR = 4e-3
FINETUNE_NOISE = 1.0
PRETRAIN_EPOCHS = 15


class NoisyFinetune(Classifier):
    """A fine-tune with input-noise augmentation (std `FINETUNE_NOISE` on standardised
    pixels) and Adam at `FINETUNE_LR`, four times the pretraining LR, after an 8-step warmup:
    the mistake of this run is the LR."""

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> torch.Tensor:
        inputs, labels = batch
        return super().training_step(
            (inputs + FINETUNE_NOISE * torch.randn_like(inputs), labels), index
        )

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=FINETUNE_LR)
        warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 8))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": warmup, "interval": "step"}}


def pretrain(net: nn.Module, data: Digits, seed: int) -> None:
    """Plain torch, before the logged run: Adam 1e-3, batch 64, `PRETRAIN_EPOCHS` epochs on
    every training digit (the "pretrained checkpoint" the logged fine-tune starts from)."""
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    inputs, labels = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    order = torch.Generator().manual_seed(seed)
    for _ in range(PRETRAIN_EPOCHS):
        permutation = torch.randperm(len(inputs), generator=order)
        for start in range(0, len(inputs), 64):
            rows = permutation[start : start + 64]
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(inputs[rows]), labels[rows]).backward()
            optimizer.step()


def lightning_finetune_lr_too_high(data: Digits) -> dict[str, Any]:
    L.seed_everything(0, workers=True)
    model = NoisyFinetune((128,), log_loss=True)
    pretrain(model.net, data, 0)
    name = "lightning_finetune_lr_too_high"
    steps = fit(name, model, data, FINETUNE_ROWS, 32, FINETUNE_EPOCHS, validate_first=True)
    epochs = model.epochs
    best = min(epochs, key=lambda e: e["val_loss"])
    last = epochs[-1]
    assert best["step"] <= epochs[1]["step"], (best, epochs[:2])  # best at the start
    assert min(e["val_loss"] for e in epochs[-3:]) > 1.2 * best["val_loss"], epochs[-3:]
    return {
        "summary": (
            f"Lightning MLP (64-128-10) pretrained on every training digit (plain torch, "
            f"Adam 1e-3, {PRETRAIN_EPOCHS} epochs), validated, then fine-tuned on "
            f"{FINETUNE_ROWS} digits with input-noise augmentation (std {FINETUNE_NOISE}) at "
            f"Adam {FINETUNE_LR:g} (four times the pretraining LR) for {FINETUNE_EPOCHS} "
            f"epochs; CSVLogger. The LR wrecks the pretrained model: val_loss is best at "
            f"step {int(best['step'])} and ends {last['val_loss'] / best['val_loss']:.1f}x "
            "it, while the train loss on the augmented batches does not improve."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                **val_loss_rise("eval_worse_train_flat", best, last),
                "framework": "lightning",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "plateau": "the train loss on the noise-augmented batches does not improve: true, "
            "and the same story (an LR that keeps the loss bouncing on one level)"
        },
        **epoch_log_layout(steps, FINETUNE_EPOCHS),
        "facts": {
            "step_convention": "Lightning's global_step; the validate() before fit is logged "
            "at step 0, each epoch's validation row at the epoch's last training step",
            "val_loss": [rounded(e["val_loss"]) for e in epochs],
            "val_acc": [rounded(e["val_acc"]) for e in epochs],
        },
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {
    "lightning_overfit_acc": lightning_overfit_acc,
    "lightning_accuracy_only": lightning_accuracy_only,
    "lightning_finetune_lr_too_high": lightning_finetune_lr_too_high,
}


def main(names: list[str], runs: dict[str, Callable[[Digits], dict[str, Any]]] = RUNS) -> None:
    """Train the named `runs` (all without names); other scripts pass their own."""
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    torch.set_num_threads(1)
    write_runs(runs, names, load_split_digits())


if __name__ == "__main__":
    main(sys.argv[1:])
