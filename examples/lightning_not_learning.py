"""Real Lightning runs that do not learn, logged by Lightning's own ``CSVLogger`` with
``self.log("train_loss", loss, on_step=True, on_epoch=True)`` at Lightning's default
``log_every_n_steps=50``: the per-step column holds one batch's loss every 50 steps, so the
curve is short and noisy, and its twin ``train_loss_epoch`` is dropped by the reader.

- ``lightning_noisy_not_learning``: a 64-64-10 ReLU MLP on scikit-learn's digits (1,437
  training and 360 validation images, raw pixel values 0-16, so the first logits are large
  and each batch's loss scatters widely), Adam at LR 1e-7 (four orders of magnitude too
  small), batch 4, 5 epochs: 36 logged per-batch losses, scattered ~15% around a level that
  does not fall; ``val_acc`` is the same at every evaluation. Not learning; a 5-point
  smoothed minimum of such a curve dips more than 10% below its start by chance.
- ``lightning_lm_lr_too_small``: a character-level MLP language model (16 characters of
  context) on the dataset descriptions bundled with scikit-learn (its ``descr/*.rst``),
  Adam at LR 1e-8, batch 64, 4 epochs, validated every quarter epoch: the weights hardly
  move, so ``val_token_accuracy`` (hits over every validation character) stays in a band a
  few hundredths wide far below 1, never exactly constant. Stuck.

Each run replaces its folder's ``lightning_logs/`` and its own entry in
``examples/expected.json``.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_not_learning.py

The ground truth is what the module measured in its hooks (the losses it passed to
``self.log``, the accuracies it counted), never read back from the CSV.
"""

from __future__ import annotations

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
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0


class Classifier(L.LightningModule):
    """A ReLU MLP classifier; records the loss of every step and each validation's accuracy."""

    def __init__(self, features: int, classes: int, lr: float) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, classes)
        )
        self.lr = lr
        self.step_losses: dict[int, float] = {}  # global step -> loss of that step's batch
        self.val_acc: dict[int, float] = {}  # global step of the validation -> accuracy
        self._hits = 0
        self._seen = 0

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        loss = nn.functional.cross_entropy(self.net(inputs), labels)
        self.step_losses[self.global_step] = loss.item()
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        inputs, labels = batch
        logits = self.net(inputs)
        self.log("val_loss", nn.functional.cross_entropy(logits, labels), on_epoch=True)
        hits = int((logits.argmax(1) == labels).sum())
        self._hits += hits
        self._seen += len(labels)
        self.log("val_acc", hits / len(labels), on_epoch=True, batch_size=len(labels))

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self.val_acc[self.global_step] = self._hits / self._seen
        self._hits = self._seen = 0

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def fit(
    name: str,
    model: L.LightningModule,
    train: Any,
    val: DataLoader[Any],
    epochs: int,
    log_every: int = 1,
    val_every: float = 1.0,
) -> L.Trainer:
    """Train into ``examples/<name>/lightning_logs`` with ``CSVLogger``, one torch thread,
    deterministic; the trainer, for its ``global_step``."""
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    torch.set_num_threads(1)
    log_root = HERE / name / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(HERE / name), name="lightning_logs"),
        log_every_n_steps=log_every,
        val_check_interval=val_every,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        deterministic=True,
    )
    trainer.fit(model, train, val)
    return trainer


def noisy_not_learning(_: object) -> dict[str, Any]:
    name = "lightning_noisy_not_learning"
    L.seed_everything(SEED, workers=True)
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)  # raw pixel values 0-16: the logits start large and confident
    order = np.random.default_rng(SEED).permutation(len(y))
    x, y = x[order], y[order]
    split = 1437
    train = DataLoader(
        TensorDataset(torch.from_numpy(x[:split]), torch.from_numpy(y[:split]).long()),
        batch_size=4,
        shuffle=True,
    )
    val = DataLoader(
        TensorDataset(torch.from_numpy(x[split:]), torch.from_numpy(y[split:]).long()),
        batch_size=120,
    )
    lr, epochs, log_every = 1e-7, 5, 50
    model = Classifier(64, 10, lr)
    fit(name, model, train, val, epochs, log_every=log_every)
    losses = model.step_losses
    steps = len(losses)
    per_epoch = steps // epochs
    logged = [losses[s] for s in range(log_every - 1, steps, log_every)]
    third = len(logged) // 3
    accs = list(model.val_acc.values())
    return {
        "summary": (
            "Lightning 64-64-10 MLP on the digits data with raw pixel values (0-16), Adam at "
            f"LR {lr:g} (four orders of magnitude too small), batch 4, {epochs} epochs, "
            "train_loss logged with "
            "on_step=True and on_epoch=True at Lightning's default log_every_n_steps=50 "
            f"(CSVLogger): {len(logged)} per-step points, each one batch's loss, scattered "
            "widely around a level that does not fall. Not learning."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "not_learning_noisy_loss",
                "detector": "plateau",
                "metric": "train/loss",
                "min_severity": "warning",
                "step_range": [log_every - 1, steps - 1],
                "criterion": "the whole run: the median of the first third of the logged "
                "per-step losses and of the last third differ by less than their scatter "
                "(losses measured in training_step at the logged steps)",
                "median_logged_loss_first_third": rounded(statistics.median(logged[:third])),
                "median_logged_loss_last_third": rounded(statistics.median(logged[-third:])),
                "stdev_logged_loss": rounded(statistics.stdev(logged)),
            }
        ],
        "may_also_flag": {
            "plateau": f"val_acc takes {len(set(accs))} distinct value(s) over the "
            f"{len(accs)} evaluations: the weights hardly move, so the predictions do not",
        },
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": log_every,
        "eval_steps": per_epoch,
        "facts": {
            "logged_train_loss_points": len(logged),
            "val_acc_first": rounded(accs[0]),
            "val_acc_last": rounded(accs[-1]),
            "step_convention": "Lightning's global_step: the first batch is step 0",
        },
    }


class CharModel(L.LightningModule):
    """A character-level MLP language model: the next character from the previous CONTEXT;
    records each validation's token accuracy (hits over every validation token)."""

    def __init__(self, vocab: int, lr: float) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Embedding(vocab, 16),
            nn.Flatten(),
            nn.Linear(16 * CONTEXT, 256),
            nn.ReLU(),
            nn.Linear(256, vocab),
        )
        self.lr = lr
        self.step_losses: dict[int, float] = {}
        self.token_acc: dict[int, float] = {}  # step of the validation's row -> accuracy
        self._hits = 0
        self._seen = 0

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        context, target = batch
        loss = nn.functional.cross_entropy(self.net(context), target)
        self.step_losses[self.global_step] = loss.item()
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        context, target = batch
        logits = self.net(context)
        self.log("val_loss", nn.functional.cross_entropy(logits, target), on_epoch=True)
        self._hits += int((logits.argmax(1) == target).sum())
        self._seen += len(target)

    def on_validation_epoch_end(self) -> None:
        accuracy = self._hits / self._seen
        if not self.trainer.sanity_checking:
            # Lightning writes a validation's row at the last training step before it.
            self.token_acc[self.global_step - 1] = accuracy
        self.log("val_token_accuracy", accuracy)
        self._hits = self._seen = 0

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)


CONTEXT = 16


def char_windows(text: str, vocab: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    codes = torch.tensor([vocab[c] for c in text])
    windows = codes.unfold(0, CONTEXT + 1, 1)
    return windows[:, :CONTEXT].contiguous(), windows[:, CONTEXT].contiguous()


def lm_lr_too_small(_: object) -> dict[str, Any]:
    import sklearn.datasets

    name = "lightning_lm_lr_too_small"
    L.seed_everything(SEED, workers=True)
    descr = Path(sklearn.datasets.__file__).parent / "descr"
    text = "\n".join(f.read_text(encoding="utf-8") for f in sorted(descr.glob("*.rst")))
    vocab = {c: i for i, c in enumerate(sorted(set(text)))}
    split = int(0.8 * len(text))
    train_x, train_y = char_windows(text[:split], vocab)
    val_x, val_y = char_windows(text[split:], vocab)
    train = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
    val = DataLoader(TensorDataset(val_x, val_y), batch_size=1024)
    lr, epochs, log_every = 1e-8, 4, 50
    model = CharModel(len(vocab), lr)
    fit(name, model, train, val, epochs, log_every=log_every, val_every=0.25)
    steps = len(model.step_losses)
    logged = [model.step_losses[s] for s in range(log_every - 1, steps, log_every)]
    accs = list(model.token_acc.items())
    values = [a for _, a in accs]
    top = max(set(text[split:]), key=text[split:].count)
    return {
        "summary": (
            "Lightning character-level MLP language model (16 characters of context, "
            f"{len(vocab)} characters) on the dataset descriptions bundled with scikit-learn, "
            f"Adam at LR {lr:g} (so small the weights hardly move), batch 64, {epochs} epochs, "
            "validation every "
            "quarter epoch (CSVLogger): the token accuracy stays within a band of "
            f"{max(values) - min(values):.4f} around {statistics.median(values):.4f} over all "
            f"{len(values)} evaluations, far below what a character model reaches (the most "
            "frequent character alone scores "
            f"{text[split:].count(top) / (len(text) - split):.3f}). "
            "Stuck, not learning."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "stuck_metric_band",
                "detector": "plateau",
                "metric": "val_token_accuracy",
                "min_severity": "warning",
                "step_range": [accs[0][0], accs[-1][0]],
                "criterion": "token accuracy counted over the whole validation text at each "
                "evaluation (on_validation_epoch_end): every value within a band far "
                "narrower than its distance to 1",
                "token_accuracy_min": rounded(min(values)),
                "token_accuracy_max": rounded(max(values)),
                "evaluations": len(values),
                "validation_tokens": len(val_y),
            },
            {
                "kind": "not_learning_noisy_loss",
                "detector": "plateau",
                "metric": "train/loss",
                "min_severity": "warning",
                "step_range": [log_every - 1, steps - 1],
                "criterion": "the whole run (losses measured in training_step at the logged steps)",
                "loss_first_logged": rounded(logged[0]),
                "loss_last_logged": rounded(logged[-1]),
                "loss_min_logged": rounded(min(logged)),
            },
        ],
        "may_also_flag": {},
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": log_every,
        "eval_steps": steps // (4 * epochs),
        "facts": {
            "most_frequent_validation_character_share": rounded(
                text[split:].count(top) / (len(text) - split)
            ),
            "step_convention": "Lightning's global_step: the first batch is step 0",
        },
    }


RUNS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "lightning_lm_lr_too_small": lm_lr_too_small,
    "lightning_noisy_not_learning": noisy_not_learning,
}

if __name__ == "__main__":
    write_runs(RUNS, sys.argv[1:], None)
