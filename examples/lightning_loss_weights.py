"""Two real Lightning runs of one weighted-sum loss, logged by Lightning's own ``CSVLogger``.

A ``LightningModule`` (a 64-64-10 MLP on scikit-learn's digits, the split and
standardisation of ``examples/generate.py``) trains on
``loss = w["classification"] * cross_entropy + w["aug"] * aug_loss``, the weights read from
a config dict with ``.get(key, 0.0)`` (a term the config does not name is off). The
augmentation-consistency term is disabled in both runs (``augment=False``): ``aug_loss`` is
then a constant 0 and is logged as such, as scripts with optional loss terms do. Adam 1e-3,
batch 64, on CPU, seeded (``seed_everything``, one torch thread, ``deterministic=True``);
``train_loss`` and ``aug_loss`` logged once per epoch (``on_epoch=True``), ``val_loss`` and
``val_acc`` once per validation.

- ``lightning_zero_loss_weight``: the config names the cross-entropy weight ``"ce"`` (the key
  was renamed in the config, not in the module), so ``.get("classification", 0.0)`` gives 0:
  the loss is ``0 * ce + 0 * 0``, exactly 0.0 at every step, and its gradient is 0. Nothing
  trains: ``train_loss`` is 0.0 at all 9 epochs, ``val_acc`` repeats the untrained model's
  score (near 1/10, chance on 10 classes) and ``val_loss`` its loss.
- ``lightning_aug_loss_disabled_healthy``: the config names ``"classification"``: the model
  trains normally (``train_loss`` and ``val_loss`` fall) while ``aug_loss`` is 0.0 at every
  epoch, a disabled auxiliary term, not a dead run. Must be silent.

The ground truth is what the module measured in its hooks (the largest gradient norm of any
step, the loss it returned), never read back from the CSV::

    /tmp/examples-frameworks/bin/python examples/lightning_loss_weights.py    # ~1 min
"""

from __future__ import annotations

import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402
from generate import Digits, load_split_digits  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
BATCH = 64
LEARNING_RATE = 1e-3


class WeightedLossClassifier(L.LightningModule):
    """An MLP trained on a weighted sum of cross-entropy and an optional augmentation
    term, the weights read from a config dict. Records the largest gradient norm."""

    def __init__(self, loss_weights: dict[str, float], augment: bool) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        self.largest_grad_norm = 0.0
        self.train_losses: list[float] = []  # the loss returned by every step
        self.aug_losses: list[float] = []

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        logits = self.net(x)
        ce = F.cross_entropy(logits, y)
        if self.hparams["augment"]:  # consistency with a noisy view of the same digits
            noisy = self.net(x + 0.1 * torch.randn_like(x))
            aug = F.mse_loss(noisy.softmax(-1), logits.softmax(-1).detach())
        else:
            aug = torch.zeros((), device=x.device)
        weights = self.hparams["loss_weights"]
        loss = weights.get("classification", 0.0) * ce + weights.get("aug", 0.0) * aug
        self.train_losses.append(float(loss.detach()))
        self.aug_losses.append(float(aug))
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        self.log("aug_loss", aug, on_step=False, on_epoch=True)
        return loss

    def on_after_backward(self) -> None:
        norms = [p.grad.norm() for p in self.parameters() if p.grad is not None]
        total = float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0
        self.largest_grad_norm = max(self.largest_grad_norm, total)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", F.cross_entropy(logits, y), on_epoch=True)
        self.log("val_acc", (logits.argmax(-1) == y).float().mean(), on_epoch=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=LEARNING_RATE)


def train(
    name: str, data: Digits, loss_weights: dict[str, float], epochs: int
) -> tuple[WeightedLossClassifier, list[dict[str, float]], int]:
    """Fit into examples/<name>/lightning_logs; the module, the eval metrics of each epoch
    (Lightning's callback_metrics after each validation) and the number of steps."""
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    torch.set_num_threads(1)
    L.seed_everything(SEED, workers=True)
    log_root = HERE / name / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    model = WeightedLossClassifier(loss_weights, augment=False)
    per_epoch: list[dict[str, float]] = []

    class Record(L.Callback):
        def on_validation_epoch_end(self, trainer: L.Trainer, _: L.LightningModule) -> None:
            if not trainer.sanity_checking:
                metrics = trainer.callback_metrics
                per_epoch.append({k: float(v) for k, v in metrics.items()})

    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(HERE / name), name="lightning_logs"),
        callbacks=[Record()],
        deterministic=True,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    train_set = TensorDataset(torch.from_numpy(data.x_train), torch.from_numpy(data.y_train))
    val_set = TensorDataset(torch.from_numpy(data.x_eval), torch.from_numpy(data.y_eval))
    trainer.fit(
        model,
        DataLoader(train_set, batch_size=BATCH, shuffle=True),
        DataLoader(val_set, batch_size=256),
    )
    return model, per_epoch, int(trainer.global_step)


def lightning_layout(steps: int, epochs: int) -> dict[str, Any]:
    """expected.json's file and step fields of an epoch-logged Lightning run."""
    return {
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": steps // epochs,
        "eval_steps": steps // epochs,
    }


def epoch_means(values: list[float], epochs: int) -> list[float]:
    """Per-epoch means of per-step values (every batch the same size: 1,280 = 20 x 64), as
    Lightning's on_epoch=True logs them."""
    return [float(np.mean(part)) for part in np.split(np.array(values), epochs)]


def series(per_epoch: list[dict[str, float]], key: str) -> list[float | str]:
    return [rounded(epoch[key]) for epoch in per_epoch]


ZERO_EPOCHS = 9


def lightning_zero_loss_weight(data: Digits) -> dict[str, Any]:
    name = "lightning_zero_loss_weight"
    # The bug: the config calls the cross-entropy weight "ce", the module reads
    # "classification" (default 0.0): the only live term is weighted 0.
    model, per_epoch, steps = train(name, data, {"ce": 1.0, "aug": 0.0}, ZERO_EPOCHS)
    per = steps // ZERO_EPOCHS
    val_acc = [epoch["val_acc"] for epoch in per_epoch]
    # What the run is for: every loss returned was exactly 0 and no gradient was ever
    # non-zero, so val_acc repeats the untrained model's score.
    assert set(model.train_losses) == {0.0} and model.largest_grad_norm == 0.0
    assert len(set(val_acc)) == 1 and len(per_epoch) == ZERO_EPOCHS, per_epoch
    return {
        "summary": (
            "Lightning 64-64-10 MLP on digits, loss = w['classification'] * ce + w['aug'] "
            "* aug_loss with the weights read by .get(key, 0.0) from a config that names the "
            "cross-entropy weight 'ce': the only live term is weighted 0, the loss is exactly "
            f"0.0 at every step and nothing trains; train_loss 0.0 at all {ZERO_EPOCHS} "
            f"epochs, val_acc {val_acc[0]:.6g} (the untrained model) at every one. CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "train/loss",
                "log_column": "train_loss",
                "step_range": [per - 1, steps - 1],
                "constant_value": 0.0,
                "constant_points": ZERO_EPOCHS,
                "criterion": "the loss returned by training_step, exactly 0.0 at every step, "
                "and the largest gradient norm of any step, 0.0 (on_after_backward)",
                "largest_grad_norm": model.largest_grad_norm,
                "min_severity": "warning",
            },
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "val_acc",
                "log_column": "val_acc",
                "step_range": [per - 1, steps - 1],
                "constant_value": rounded(val_acc[0]),
                "constant_points": ZERO_EPOCHS,
                "criterion": "no parameter ever changed (every gradient 0): the same model "
                "evaluated at every epoch",
                "min_severity": "warning",
            },
        ],
        "may_also_flag": {
            "plateau": "val_loss repeats one exact value, the untrained model's: true",
        },
        **lightning_layout(steps, ZERO_EPOCHS),
        "facts": {
            "step_convention": "Lightning's global_step: an epoch value is logged at the "
            "epoch's last step",
            "loss_weights_in_config": {"ce": 1.0, "aug": 0.0},
            "val_loss": series(per_epoch, "val_loss"),
            "val_acc": series(per_epoch, "val_acc"),
            "framework": "lightning",
        },
    }


HEALTHY_EPOCHS = 12


def lightning_aug_loss_disabled_healthy(data: Digits) -> dict[str, Any]:
    name = "lightning_aug_loss_disabled_healthy"
    model, per_epoch, steps = train(name, data, {"classification": 1.0, "aug": 0.0}, HEALTHY_EPOCHS)
    train_loss = epoch_means(model.train_losses, HEALTHY_EPOCHS)
    val_loss = [epoch["val_loss"] for epoch in per_epoch]
    # What the run is for: aug_loss 0.0 at every step beside a train loss and an eval
    # loss that fall (the last well below the first).
    assert set(model.aug_losses) == {0.0}, model.aug_losses
    assert train_loss[-1] < 0.25 * train_loss[0] and val_loss[-1] < 0.5 * val_loss[0]
    assert model.largest_grad_norm > 0.0
    return {
        "summary": (
            "Lightning 64-64-10 MLP on digits, loss = ce + 0 * aug_loss (the augmentation "
            "term disabled, logged as aug_loss 0.0 at every epoch): train_loss falls "
            f"{train_loss[0]:.4g} -> {train_loss[-1]:.4g} and val_loss {val_loss[0]:.4g} -> "
            f"{val_loss[-1]:.4g} over {HEALTHY_EPOCHS} epochs. A disabled auxiliary loss, "
            "not a dead run. CSVLogger. Healthy."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        **lightning_layout(steps, HEALTHY_EPOCHS),
        "facts": {
            "step_convention": "Lightning's global_step: an epoch value is logged at the "
            "epoch's last step",
            "train_loss": [rounded(v) for v in train_loss],
            "val_loss": series(per_epoch, "val_loss"),
            "val_acc": series(per_epoch, "val_acc"),
            "framework": "lightning",
        },
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {
    "lightning_zero_loss_weight": lightning_zero_loss_weight,
    "lightning_aug_loss_disabled_healthy": lightning_aug_loss_disabled_healthy,
}


if __name__ == "__main__":
    write_runs(RUNS, sys.argv[1:], load_split_digits())
