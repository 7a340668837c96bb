"""Two real Lightning runs of one binary classifier whose epoch F1 is averaged over batches
by hand, logged by Lightning's own ``CSVLogger``.

An MLP ``LightningModule`` (20-32-1, ``binary_cross_entropy_with_logits``) on
scikit-learn's ``make_classification`` data (1,300 examples, 20 features, 2 classes, 2% of
the labels random), split 1,000 / 300, Adam at LR 1e-3, batch 64 (the loaders keep the
partial last batch, ``drop_last=False``, the default), 20 epochs, on CPU, seeded
(``seed_everything``, one torch thread, ``deterministic=True``). Both runs log
``train_loss`` (epoch mean), ``val_loss``, ``val_acc`` and an epoch F1 of the positive
class, ``train_f1`` and ``val_f1``, from the hooks at the end of each epoch.

- ``lightning_f1_partial_batch``: the epoch F1 is the sum of the per-batch F1s divided by
  the number of FULL batches, ``len(dataset) // batch_size`` (15 for the 1,000 training
  examples, 4 for the 300 validation ones), while the sum also holds the partial last batch
  (40 and 44 examples): the mean is inflated by up to 16/15 and 5/4. Once the model is good,
  ``val_f1`` is above 1, an impossible F1, at most epochs.
- ``lightning_f1_partial_batch_healthy``: the same module and data, the epoch F1 computed
  from the epoch's counts (2 TP / (2 TP + FP + FN), as torchmetrics accumulates it): always
  in [0, 1]. Must be silent.

The ground truth is what the module computed in its hooks (every value it logged, the step
it logged it at, and the F1 from the epoch's counts beside it), never read back from the
CSV::

    /tmp/examples-frameworks/bin/python examples/lightning_f1_partial_batch.py   # ~1 min
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import lightning as L
import torch
from sklearn.datasets import make_classification
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402
from lightning_not_learning import fit  # noqa: E402  (CSVLogger, seeded, on CPU)

BUGGY = "lightning_f1_partial_batch"
HEALTHY = "lightning_f1_partial_batch_healthy"
LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
EPOCHS = 20
BATCH = 64
N_TRAIN = 1000
N_VAL = 300


def _counts(logits: torch.Tensor, y: torch.Tensor) -> tuple[int, int, int]:
    """True positives, false positives, false negatives of the positive class."""
    pred = logits.squeeze(1) > 0
    truth = y > 0.5
    return (
        int((pred & truth).sum()),
        int((pred & ~truth).sum()),
        int((~pred & truth).sum()),
    )


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


class Side:
    """One side's (train or val) running sums over an epoch."""

    def __init__(self, n_examples: int) -> None:
        self.full_batches = n_examples // BATCH
        self.reset()

    def reset(self) -> None:
        self.f1_sum = 0.0
        self.tp = self.fp = self.fn = 0

    def add(self, logits: torch.Tensor, y: torch.Tensor) -> None:
        tp, fp, fn = _counts(logits, y)
        self.f1_sum += _f1(tp, fp, fn)
        self.tp, self.fp, self.fn = self.tp + tp, self.fp + fp, self.fn + fn

    def buggy_f1(self) -> float:
        # The bug: divided by the number of full batches; the sum holds the partial one too.
        return self.f1_sum / self.full_batches

    def count_f1(self) -> float:
        return _f1(self.tp, self.fp, self.fn)


class Classifier(L.LightningModule):
    """A binary MLP that logs an epoch F1, by the buggy average or from counts; records
    every value it logged and the step it logged it at."""

    def __init__(self, buggy: bool) -> None:
        super().__init__()
        self.buggy = buggy
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1))
        self.train_side = Side(N_TRAIN)
        self.val_side = Side(N_VAL)
        self.logged: dict[str, list[tuple[int, float]]] = {"train_f1": [], "val_f1": []}
        self.count_f1: dict[str, list[float]] = {"train_f1": [], "val_f1": []}
        self.val_acc: list[float] = []
        self._val_right = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = F.binary_cross_entropy_with_logits(logits.squeeze(1), y)
        self.train_side.add(logits.detach(), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def on_validation_epoch_start(self) -> None:
        self.val_side.reset()
        self._val_right = 0

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.binary_cross_entropy_with_logits(logits.squeeze(1), y))
        right = int(((logits.squeeze(1) > 0) == (y > 0.5)).sum())
        self._val_right += right
        self.log("val_acc", right / y.size(0))
        self.val_side.add(logits, y)

    def _log_f1(self, name: str, side: Side) -> None:
        value = side.buggy_f1() if self.buggy else side.count_f1()
        self.log(name, value)
        # An epoch-end value is written at the epoch's last step (global_step counts from 1).
        self.logged[name].append((self.global_step - 1, value))
        self.count_f1[name].append(side.count_f1())

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        self._log_f1("val_f1", self.val_side)
        self.val_acc.append(self._val_right / N_VAL)

    def on_train_epoch_end(self) -> None:
        self._log_f1("train_f1", self.train_side)
        self.train_side.reset()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def train(name: str, buggy: bool) -> tuple[Classifier, int]:
    L.seed_everything(SEED, workers=True)
    x, y = make_classification(
        n_samples=N_TRAIN + N_VAL,
        n_features=20,
        n_informative=8,
        n_classes=2,
        class_sep=1.5,
        flip_y=0.02,
        random_state=SEED,
    )
    x_t, y_t = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    train_set = TensorDataset(x_t[:N_TRAIN], y_t[:N_TRAIN])
    val_set = TensorDataset(x_t[N_TRAIN:], y_t[N_TRAIN:])
    model = Classifier(buggy)
    trainer = fit(
        name,
        model,
        DataLoader(train_set, batch_size=BATCH, shuffle=True),
        DataLoader(val_set, batch_size=BATCH),
        EPOCHS,
        log_every=50,
    )
    return model, int(trainer.global_step)


def _facts(model: Classifier) -> dict[str, Any]:
    return {
        "f1_steps": [step for step, _ in model.logged["val_f1"]],
        "val_f1_logged": [rounded(v) for _, v in model.logged["val_f1"]],
        "val_f1_from_counts": [rounded(v) for v in model.count_f1["val_f1"]],
        "train_f1_logged": [rounded(v) for _, v in model.logged["train_f1"]],
        "train_f1_from_counts": [rounded(v) for v in model.count_f1["train_f1"]],
        "val_acc": [rounded(v) for v in model.val_acc],
        "step_convention": "Lightning's global_step: an epoch value is logged at the "
        "epoch's last step",
        "framework": "lightning",
    }


def _entry(
    summary: str,
    healthy: bool,
    pathologies: list[dict[str, Any]],
    steps: int,
    facts: dict[str, Any],
) -> dict[str, Any]:
    return {
        "summary": summary,
        "healthy": healthy,
        "must_be_silent": healthy,
        "pathologies": pathologies,
        "may_also_flag": {},
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": steps // EPOCHS,
        "eval_steps": steps // EPOCHS,
        "facts": facts,
    }


def _out_of_range(model: Classifier, name: str, hook: str) -> dict[str, Any]:
    """The pathology of one logged F1: the values its hook logged above 1, from memory."""
    out = [(step, value) for step, value in model.logged[name] if value > 1.0]
    assert out, f"{name} never above 1"
    assert max(model.count_f1[name]) <= 1.0
    worst_step, worst = max(out, key=lambda point: point[1])
    return {
        "kind": "metric_out_of_range",
        "detector": "divergence",
        "metric": name,
        "min_severity": "warning",
        "first_step": out[0][0],
        "step_range": [out[0][0], out[-1][0]],
        "criterion": f"the value {hook} logged, kept in memory, above 1",
        "out_of_range_points": len(out),
        "largest": rounded(worst),
        "largest_step": worst_step,
    }


def main() -> None:
    model, steps = train(BUGGY, buggy=True)
    val = _out_of_range(model, "val_f1", "on_validation_epoch_end")
    train_side = _out_of_range(model, "train_f1", "on_train_epoch_end")
    val_steps = [step for step, _ in model.logged["val_f1"]]
    worst_counts = model.count_f1["val_f1"][val_steps.index(val["largest_step"])]
    write_entry(
        BUGGY,
        _entry(
            "Lightning binary MLP on make_classification data: the epoch F1 is the sum of the "
            "per-batch F1s divided by the number of FULL batches (len(dataset) // 64) while "
            f"the partial last batch is summed too, so val_f1 is above 1 at "
            f"{val['out_of_range_points']} of {EPOCHS} epochs (largest {val['largest']} at "
            f"step {val['largest_step']}; the F1 from that epoch's counts was "
            f"{worst_counts:.4f}) and train_f1 at {train_side['out_of_range_points']} "
            f"(largest {train_side['largest']} at step {train_side['largest_step']}). "
            "CSVLogger.",
            False,
            [val, train_side],
            steps,
            _facts(model),
        ),
    )
    print(BUGGY, "written")
    model, steps = train(HEALTHY, buggy=False)
    assert all(0.0 <= v <= 1.0 for name in model.logged for _, v in model.logged[name])
    write_entry(
        HEALTHY,
        _entry(
            "Lightning binary MLP on make_classification data, the epoch F1 computed from the "
            "epoch's counts (2TP / (2TP + FP + FN)): val_f1 "
            f"{model.logged['val_f1'][0][1]:.4f} at the first evaluation, "
            f"{model.logged['val_f1'][-1][1]:.4f} at the last. CSVLogger. Healthy.",
            True,
            [],
            steps,
            _facts(model),
        ),
    )
    print(HEALTHY, "written")


if __name__ == "__main__":
    main()
