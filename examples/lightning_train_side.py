"""Three real Lightning regression runs, logged by Lightning's own ``CSVLogger``: the train side
of trust (issue 10), where a loss that moves is not always a model that learns.

Each trains a ``LightningModule`` MLP on scikit-learn's bundled diabetes data (442 patients,
10 standardised features, a disease-progression target), on CPU, seeded (``seed_everything``,
one torch thread, ``deterministic=True``), with no validation, and writes
``lightning_logs/version_0/metrics.csv`` beside this script in the run's folder.

- ``lightning_lr_too_small``: the target left in its raw units (mean 152, so the mean squared
  error starts near 29,000), a 10-64-1 MLP, Adam at LR 1e-5, batch 64, 150 epochs,
  ``train_loss`` logged per epoch. The loss falls at every epoch, a significant trend, but by
  0.3% over the whole run: at this LR the output moves a few thousandths per step towards
  targets ~150 away. Not learning, however significant the trend.
- ``lightning_collapse_to_mean``: the target min-max scaled to [0, 1], a 10-64-64-1 ReLU MLP,
  full-batch SGD (momentum 0.9) at LR 1.0, far too high: the first updates kill every unit
  of the second hidden layer, and the output layer's bias alone goes on learning, to the
  mean of the targets. The loss falls from its early blow-up and then sits at the variance
  of the targets (the loss of predicting their mean) to 6-7 digits for the rest of the run:
  a collapse, which a converged run does not look like.
- ``lightning_full_batch_healthy``: the same data, network and full-batch SGD at LR 0.05:
  the loss drops fast and keeps creeping down to the end (a full-batch loss is smooth, but
  not frozen). Must be silent.
- ``lightning_burst_after_startup``: a short log (64 steps, every step logged) of a linear
  regression on scikit-learn's ``make_regression`` data with a large offset (bias 500, so
  the first losses are ~3e5 against a working level of ~25), SGD at LR 0.2; the five
  batches of steps 30-34 come from a shard whose targets are 10% off (another
  calibration): the loss bursts to ~100x its level for several steps and comes back. The
  burst is a tenth of the start-up's height: the spike rules must not measure it against
  the start-up. (This run uses ``make_regression``, not the diabetes data.) The start-up
  here falls 2-5x per log, never tenfold in one: the spikes detector's steep-stretch
  start-up rule (``startup_points``) is what keeps it out of the burst's reference.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_train_side.py        # all, ~3 min
    /tmp/examples-frameworks/bin/python examples/lightning_train_side.py lightning_lr_too_small

Each run replaces its folder's ``lightning_logs/`` and its own entry in
``examples/expected.json``; the ground truth is what the module measured in its hooks (the
losses it passed to ``self.log``, the dead units it counted), never read back from the CSV.
"""

from __future__ import annotations

import itertools
import shutil
import statistics
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.loggers import CSVLogger
from sklearn.datasets import load_diabetes, make_regression
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0


class Regressor(L.LightningModule):
    """A ReLU MLP with a mean-squared-error loss, logging `train_loss` per step or per epoch."""

    def __init__(
        self,
        hidden: tuple[int, ...],
        optimiser: Callable[[Any], torch.optim.Optimizer],
        per_epoch: bool,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = 10
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)
        self.optimiser = optimiser
        self.per_epoch = per_epoch
        self.step_losses: dict[int, float] = {}  # global step -> loss of that step's batch
        self.epoch_sums: list[tuple[float, int]] = []  # per epoch: (sum of loss x size, size)
        self.dead_last_hidden: dict[int, float] = {}  # global step -> share of dead units

    def on_train_epoch_start(self) -> None:
        self.epoch_sums.append((0.0, 0))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, targets = batch
        hidden = self.net[:-1](inputs)
        loss = nn.functional.mse_loss(self.net[-1](hidden), targets)
        # A unit is dead on this batch when it outputs 0 for every example of it.
        self.dead_last_hidden[self.global_step] = float((hidden.max(0).values <= 0).float().mean())
        self.step_losses[self.global_step] = loss.item()
        total, count = self.epoch_sums[-1]
        self.epoch_sums[-1] = (total + loss.item() * len(targets), count + len(targets))
        if self.per_epoch:
            self.log("train_loss", loss, on_step=False, on_epoch=True)
        else:
            self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.optimiser(self.parameters())


def load_data(target: str) -> tuple[np.ndarray, np.ndarray]:
    """Diabetes features standardised; the target raw, or min-max scaled to [0, 1]."""
    x, y = load_diabetes(return_X_y=True)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    if target == "minmax":
        y = (y - y.min()) / (y.max() - y.min())
    return x.astype(np.float32), y.astype(np.float32)[:, None]


def train(
    name: str, model: Regressor, data: tuple[np.ndarray, np.ndarray], batch_size: int, epochs: int
) -> None:
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*val_dataloader.*")
    torch.set_num_threads(1)
    log_root = HERE / name / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    x, y = data
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(HERE / name), name="lightning_logs"),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        deterministic=True,
    )
    loader = DataLoader(
        TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=batch_size, shuffle=True
    )
    trainer.fit(model, loader)


def log_fields(steps: int, logging_steps: int, facts: dict[str, Any]) -> dict[str, Any]:
    """The entry's keys about its log, in expected.json's order (no evaluation)."""
    return {
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": logging_steps,
        "eval_steps": None,
        "facts": facts,
    }


def lr_too_small(_: object) -> dict[str, Any]:
    name = "lightning_lr_too_small"
    L.seed_everything(SEED, workers=True)
    data = load_data("raw")
    lr, epochs = 1e-5, 150
    model = Regressor((64,), lambda params: torch.optim.Adam(params, lr=lr), per_epoch=True)
    train(name, model, data, batch_size=64, epochs=epochs)
    per_epoch = [total / count for total, count in model.epoch_sums]
    steps_per_epoch = len(model.step_losses) // epochs
    last_step = len(model.step_losses) - 1
    first, last = per_epoch[0], per_epoch[-1]
    falls = sum(b < a for a, b in itertools.pairwise(per_epoch))
    return {
        "summary": (
            "Lightning 10-64-1 MLP on the diabetes data with the target in raw units (mean "
            f"152), Adam at LR {lr:g}, batch 64, {epochs} epochs, train_loss logged per epoch "
            "(CSVLogger): the loss falls at every epoch but by "
            f"{100 * (first - last) / first:.2f}% over the run; the LR is far too small for "
            "the target's scale. Not learning, however significant the trend."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "not_learning_tiny_trend",
                "detector": "plateau",
                "metric": "train/loss",
                "min_severity": "warning",
                "step_range": [steps_per_epoch - 1, last_step],
                "criterion": "the whole run: the epoch-mean loss measured in training_step",
                "epoch_loss_first": rounded(first),
                "epoch_loss_last": rounded(last),
                "relative_fall": rounded((first - last) / first),
                "epochs_lower_than_the_one_before": falls,
            }
        ],
        "may_also_flag": {},
        **log_fields(
            last_step + 1,
            steps_per_epoch,
            {
                "initial_train_loss": rounded(model.step_losses[0]),
                "target_mean": rounded(float(data[1].mean())),
                "max_lr": lr,
                "step_convention": "Lightning's global_step: the first batch is step 0; an epoch "
                "value is logged at the epoch's last step",
            },
        ),
    }


def full_batch_sgd(
    name: str, lr: float, steps: int
) -> tuple[Regressor, tuple[np.ndarray, np.ndarray]]:
    """The 10-64-64-1 MLP trained full-batch (one step per epoch) with SGD + momentum 0.9
    on the diabetes data, target scaled to [0, 1]."""
    L.seed_everything(SEED, workers=True)
    data = load_data("minmax")
    model = Regressor((64, 64), lambda p: torch.optim.SGD(p, lr=lr, momentum=0.9), per_epoch=False)
    train(name, model, data, batch_size=len(data[0]), epochs=steps)
    return model, data


def collapse_to_mean(_: object) -> dict[str, Any]:
    lr, steps = 1.0, 600
    model, data = full_batch_sgd("lightning_collapse_to_mean", lr, steps)
    dead = model.dead_last_hidden
    # The first step from which every unit of the last hidden layer is dead to the end.
    dead_from = next(s for s in range(steps) if all(dead[t] == 1.0 for t in range(s, steps)))
    variance = float(np.var(data[1].astype(np.float64)))
    losses = model.step_losses
    tail = [losses[s] for s in range(steps // 2, steps)]
    return {
        "summary": (
            "Lightning 10-64-64-1 ReLU MLP on the diabetes data (target scaled to [0, 1]), "
            f"full-batch SGD with momentum 0.9 at LR {lr:g}, far too high: every unit of the "
            f"second hidden layer is dead from step {dead_from}, the output bias alone learns "
            "the targets' mean, and train_loss sits at their variance (the loss of predicting "
            "the mean) for the rest of the run. A collapse, not convergence."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "collapse_to_mean",
                "detector": "plateau",
                "metric": "train/loss",
                "min_severity": "warning",
                "first_step": dead_from,
                "step_range": [dead_from, steps - 1],
                "criterion": "first step from which every unit of the second hidden layer "
                "outputs 0 on every example, to the end of the run (counted in training_step)",
                "target_variance": rounded(variance),
                "loss_median_second_half": rounded(statistics.median(tail)),
                "loss_spread_second_half": rounded(max(tail) - min(tail)),
            }
        ],
        "may_also_flag": {
            "spikes": "the loss blows up in the first steps, before the units die",
            "divergence": "the loss rises in the first steps, before the units die",
            "lr_schedule": "a constant LR of 1.0 from step 0 has no warmup",
        },
        **log_fields(
            steps,
            1,
            {
                "initial_train_loss": rounded(losses[0]),
                "max_train_loss": rounded(max(losses.values())),
                "max_lr": lr,
                "step_convention": "Lightning's global_step: the first batch is step 0",
            },
        ),
    }


def full_batch_healthy(_: object) -> dict[str, Any]:
    lr, steps = 0.05, 600
    model, data = full_batch_sgd("lightning_full_batch_healthy", lr, steps)
    losses = model.step_losses
    return {
        "summary": (
            "Lightning 10-64-64-1 ReLU MLP on the diabetes data (target scaled to [0, 1]), "
            f"full-batch SGD with momentum 0.9 at LR {lr:g}: the loss drops fast, then keeps "
            "creeping down to the end. A full-batch loss is smooth, but not frozen: healthy."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        "may_also_flag": {},
        **log_fields(
            steps,
            1,
            {
                "initial_train_loss": rounded(losses[0]),
                "train_loss_at_half": rounded(losses[steps // 2]),
                "final_train_loss": rounded(losses[steps - 1]),
                "target_variance": rounded(float(np.var(data[1].astype(np.float64)))),
                "max_lr": lr,
                "step_convention": "Lightning's global_step: the first batch is step 0",
            },
        ),
    }


class ShardedRegressor(L.LightningModule):
    """A linear regression whose batches of steps `BURST_STEPS` carry targets scaled by
    `BURST_SCALE` (a shard written with another calibration), logging every step's loss."""

    def __init__(self, lr: float) -> None:
        super().__init__()
        self.net = nn.Linear(10, 1)
        self.lr = lr
        self.step_losses: dict[int, float] = {}

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, targets = batch
        if self.global_step in BURST_STEPS:
            targets = targets * BURST_SCALE
        loss = nn.functional.mse_loss(self.net(inputs), targets)
        self.step_losses[self.global_step] = loss.item()
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


BURST_STEPS = range(30, 35)
BURST_SCALE = 1.1


def burst_after_startup(_: object) -> dict[str, Any]:
    name = "lightning_burst_after_startup"
    L.seed_everything(SEED, workers=True)
    x, y = make_regression(n_samples=512, n_features=10, noise=5.0, bias=500.0, random_state=0)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    data = (x.astype(np.float32), y.astype(np.float32)[:, None])
    lr, epochs = 0.2, 4
    model = ShardedRegressor(lr)
    train(name, model, data, batch_size=32, epochs=epochs)
    losses = model.step_losses
    steps = len(losses)
    first, last = BURST_STEPS[0], BURST_STEPS[-1]
    before = statistics.median(losses[s] for s in range(first - 10, first))
    peak_step = max(range(first, first + 10), key=lambda s: losses[s])
    # Back: the first step after the shard from which 3 consecutive losses are under 2x
    # the median of the 10 steps before it.
    back = next(
        s
        for s in range(last + 1, steps - 3)
        if all(losses[t] < 2 * before for t in range(s, s + 3))
    )
    return {
        "summary": (
            "Lightning linear regression on make_regression data with a large offset (bias "
            f"500), SGD at LR {lr:g}, every step logged (CSVLogger), {steps} steps: the "
            f"first losses are ~3e5 against a working level of ~25; the batches of steps "
            f"{first}-{last} carry targets {100 * (BURST_SCALE - 1):.0f}% off (another "
            "shard's calibration) and the loss bursts to ~100x its level for several steps, "
            "then comes back. A burst a tenth of the start-up's height."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "loss_burst",
                "detector": "spikes",
                "metric": "train/loss",
                "min_severity": "warning",
                "cause_step": first,
                "step": peak_step,
                "step_range": [first, back - 1],
                "criterion": "from the first corrupted batch to the step before the first of "
                "3 consecutive losses under 2x the median of the 10 steps before it",
                "median_loss_10_steps_before": rounded(before),
                "peak_loss": rounded(losses[peak_step]),
                "back_step": back,
            }
        ],
        "may_also_flag": {
            "divergence": "the loss rises over the corrupted batches",
        },
        "must_not_flag": [
            {
                "detector": "spikes",
                "metric": "train/loss",
                "step_range": [first + 15, steps - 1],
                "why": "ordinary batch noise at the working level after the burst",
            }
        ],
        **log_fields(
            steps,
            1,
            {
                "initial_train_loss": rounded(losses[0]),
                "train_loss_steps_0_to_5": [rounded(losses[s]) for s in range(6)],
                "max_lr": lr,
                "step_convention": "Lightning's global_step: the first batch is step 0",
            },
        ),
    }


RUNS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "lightning_lr_too_small": lr_too_small,
    "lightning_collapse_to_mean": collapse_to_mean,
    "lightning_full_batch_healthy": full_batch_healthy,
    "lightning_burst_after_startup": burst_after_startup,
}

if __name__ == "__main__":
    write_runs(RUNS, sys.argv[1:], None)
