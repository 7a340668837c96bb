"""Two real Lightning runs of a character-level sequence model that log a character error
rate (``val_cer``) at each epoch through Lightning's own ``CSVLogger``: one learns, one
cannot.

The task: reverse a string of 8 symbols drawn uniformly from a 10-symbol alphabet. The model
is a tiny bidirectional GRU (embedding 16, hidden 48 per direction) with a linear head
giving one symbol per position; cross-entropy per position. 4,000 training strings, 500
validation strings, Adam, batch 64, 30 epochs, on CPU, seeded (``seed_everything``, one
torch thread, ``deterministic=True``). ``train_loss`` is logged every 10 steps;
``val_loss`` and ``val_cer`` (the Levenshtein distance between the predicted and the true
reversed string, summed over the validation set, over the true strings' total length: a
fraction, 0 perfect) once per validation.

- ``lightning_cer_healthy``: Adam at LR 3e-3. The CER falls from ~0.85 towards 0: healthy,
  it must be silent.
- ``lightning_cer_shuffled_labels``: the same, except each training string's target is the
  reversal of *another* training string (the label column shuffled against the inputs; the
  validation targets are right). Nothing in an input says anything about its target, so the
  CER stays where an input-blind guess leaves it (~0.9 for 10 symbols) at every epoch.

The ground truth is what the script measured in its own hooks (the CER it computed at each
validation), never read back from the CSV.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_char_error_rate.py [run ...]
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
EPOCHS = 30
LENGTH = 8
SYMBOLS = 10
TRAIN, VAL = 4000, 500
BATCH = 64
LR = 3e-3


def levenshtein(a: list[int], b: list[int]) -> int:
    """Edit distance (insertions, deletions, substitutions) between two symbol strings."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


class Reverser(L.LightningModule):
    """A bidirectional GRU that emits one symbol per position; records its CER per epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(SYMBOLS, 16)
        self.gru = nn.GRU(16, 48, batch_first=True, bidirectional=True)
        self.head = nn.Linear(96, SYMBOLS)
        self.loss = nn.CrossEntropyLoss()
        self.cer: list[float] = []
        self._errors = 0
        self._chars = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.embed(x))
        return self.head(hidden)  # (batch, length, symbols)

    def _loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = batch
        logits = self(x)
        return self.loss(logits.reshape(-1, SYMBOLS), y.reshape(-1)), logits

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        loss, _ = self._loss(batch)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        loss, logits = self._loss(batch)
        self.log("val_loss", loss, on_epoch=True)
        predicted = logits.argmax(-1)
        for guess, truth in zip(predicted.tolist(), batch[1].tolist(), strict=True):
            self._errors += levenshtein(guess, truth)
            self._chars += len(truth)

    def on_validation_epoch_end(self) -> None:
        cer = self._errors / self._chars
        self._errors = self._chars = 0
        if not self.trainer.sanity_checking:
            self.cer.append(cer)
        self.log("val_cer", cer)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=LR)


def _data(shuffle_labels: bool) -> tuple[TensorDataset, TensorDataset]:
    generator = torch.Generator().manual_seed(SEED)
    strings = torch.randint(0, SYMBOLS, (TRAIN + VAL, LENGTH), generator=generator)
    targets = strings.flip(1)
    train_targets = targets[:TRAIN]
    if shuffle_labels:
        train_targets = train_targets[torch.randperm(TRAIN, generator=generator)]
    return (
        TensorDataset(strings[:TRAIN], train_targets),
        TensorDataset(strings[TRAIN:], targets[TRAIN:]),
    )


def _train(name: str, shuffle_labels: bool) -> tuple[Reverser, int]:
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    torch.set_num_threads(1)
    L.seed_everything(SEED, workers=True)
    train, val = _data(shuffle_labels)
    log_root = HERE / name / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    model = Reverser()
    trainer = L.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(HERE / name), name="lightning_logs"),
        log_every_n_steps=10,
        deterministic=True,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(
        model,
        DataLoader(train, batch_size=BATCH, shuffle=True),
        DataLoader(val, batch_size=VAL),
    )
    return model, int(trainer.global_step)


def _entry(name: str, model: Reverser, steps: int, healthy: bool) -> dict[str, Any]:
    per_epoch = steps // EPOCHS
    cer = model.cer
    best = min(range(len(cer)), key=cer.__getitem__)
    facts: dict[str, Any] = {
        "evaluations": EPOCHS,
        "val_cer_first": rounded(cer[0]),
        "val_cer_best": rounded(cer[best]),
        "val_cer_best_epoch": best + 1,
        "val_cer_last": rounded(cer[-1]),
        "step_convention": "Lightning's global_step: an epoch value is logged at the "
        "epoch's last step",
    }
    common = {
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 10,
        "eval_steps": per_epoch,
        "facts": facts,
    }
    if healthy:
        assert cer[-1] < 0.5 * cer[0], cer
        return {
            "summary": "Lightning bidirectional GRU that learns to reverse 8-symbol strings: "
            f"val_cer falls from {cer[0]:.3f} to {cer[-1]:.3g} over {EPOCHS} epochs.",
            "healthy": True,
            "must_be_silent": True,
            "pathologies": [],
            "may_also_flag": {},
            **common,
        }
    assert min(cer) > 0.5, cer
    return {
        "summary": "The same GRU with each training string's target taken from another "
        "training string (labels shuffled against inputs; validation targets right): "
        f"val_cer stays between {min(cer):.3f} and {max(cer):.3f} at all {EPOCHS} "
        "evaluations, never materially below its first.",
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "eval_not_learning",
                "detector": ["overfitting", "plateau"],
                "metric": "val_cer",
                "min_severity": "warning",
                "first_step": per_epoch - 1,
                "step_range": [per_epoch - 1, steps - 1],
                "criterion": "the CER the module computed at each validation "
                "(on_validation_epoch_end): above 0.5 at every one, the training targets "
                "unrelated to their inputs",
                "val_cer_min": rounded(min(cer)),
                "val_cer_max": rounded(max(cer)),
            }
        ],
        "may_also_flag": {},
        **common,
    }


RUNS = {"lightning_cer_healthy": False, "lightning_cer_shuffled_labels": True}


def main() -> None:
    for name in sys.argv[1:] or list(RUNS):
        shuffled = RUNS[name]
        model, steps = _train(name, shuffled)
        print(name, [round(c, 4) for c in model.cer])
        write_entry(name, _entry(name, model, steps, healthy=not shuffled))
        print(name, "written")


if __name__ == "__main__":
    main()
