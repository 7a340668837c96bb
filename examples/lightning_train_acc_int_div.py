"""A real Lightning run whose train accuracy is exactly 0 at every step: the module computes
it with an integer division, ``correct // total``, logged by Lightning's own ``CSVLogger``.

``lightning_train_acc_int_div``: an MLP ``LightningModule`` (20-64-4, cross-entropy) on
scikit-learn's ``make_classification`` data (3,000 examples, 20 features, 4 classes, 10%
of the labels random, so no batch is ever all right), split 2,000 / 1,000, Adam at LR 1e-3,
batch 64, 20 epochs, on CPU, seeded (``seed_everything``, one torch thread,
``deterministic=True``), ``log_every_n_steps=10``. ``training_step`` logs ``train_loss``
and ``train_acc``, the latter as ``(preds == y).sum() // y.size(0)``: a tensor of right
answers floor-divided by the batch size, 0 unless every example of the batch is right.
``validation_step`` computes ``val_acc`` correctly (``.float().mean()``), and the model
learns: ``val_acc`` rises, ``val_loss`` and ``train_loss`` fall. Only ``train_acc`` is
broken, and a reader of the CSV sees 0.0 at every row.

The ground truth is what the module saw in memory: the value it logged at every step (all
0) and the true batch accuracy beside it (its largest value, under 1), never read back from
the CSV.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/python examples/lightning_train_acc_int_div.py   # ~30 s
"""

from __future__ import annotations

import sys
from pathlib import Path

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

NAME = "lightning_train_acc_int_div"
LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
EPOCHS = 20
BATCH = 64
LOG_EVERY = 10


class Classifier(L.LightningModule):
    """An MLP whose train accuracy is an integer division; records what it logged."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
        self.logged_train_acc: list[float] = []  # every training step's logged value
        self.true_train_acc: list[float] = []  # the batch accuracy it should have been
        self.val_acc: list[float] = []  # per validation (sanity check excluded)
        self._val: list[tuple[int, int]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        preds = logits.argmax(dim=1)
        correct = (preds == y).sum()
        acc = correct // y.size(0)  # the bug: floor division of a count by the batch size
        self.logged_train_acc.append(float(acc))
        self.true_train_acc.append(float(correct) / y.size(0))
        self.log("train_loss", loss)
        self.log("train_acc", acc)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        x, y = batch
        logits = self(x)
        preds = logits.argmax(dim=1)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (preds == y).float().mean())
        self._val.append((int((preds == y).sum()), y.size(0)))

    def on_validation_epoch_end(self) -> None:
        right, seen = (sum(column) for column in zip(*self._val, strict=True))
        self._val = []
        if not self.trainer.sanity_checking:
            self.val_acc.append(right / seen)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main() -> None:
    L.seed_everything(SEED, workers=True)
    x, y = make_classification(
        n_samples=3000,
        n_features=20,
        n_informative=10,
        n_classes=4,
        class_sep=1.0,
        flip_y=0.1,
        random_state=SEED,
    )
    x_t, y_t = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64)
    train = TensorDataset(x_t[:2000], y_t[:2000])
    val = TensorDataset(x_t[2000:], y_t[2000:])
    model = Classifier()
    trainer = fit(
        NAME,
        model,
        DataLoader(train, batch_size=BATCH, shuffle=True),
        DataLoader(val, batch_size=256),
        EPOCHS,
        log_every=LOG_EVERY,
    )
    steps = int(trainer.global_step)
    assert max(model.logged_train_acc) == 0.0, max(model.logged_train_acc)
    assert max(model.true_train_acc) < 1.0, max(model.true_train_acc)
    first_logged = LOG_EVERY - 1  # Lightning logs a step when (global_step + 1) % n == 0
    last_logged = steps - steps % LOG_EVERY - 1
    write_entry(
        NAME,
        {
            "summary": "Lightning MLP on 4-class make_classification data (10% random labels): "
            "training_step logs train_acc as (preds == y).sum() // y.size(0), an integer "
            f"division that is 0 unless the whole batch is right, so train_acc is exactly 0 "
            f"at every logged step while the model learns (val_acc {model.val_acc[0]:.3f} at "
            f"the first evaluation, {model.val_acc[-1]:.3f} at the last; the true batch "
            f"accuracy reached {max(model.true_train_acc):.3f}).",
            "healthy": False,
            "must_be_silent": False,
            "pathologies": [
                {
                    "kind": "stuck_metric",
                    "detector": "plateau",
                    "metric": "train_acc",
                    "min_severity": "warning",
                    "first_step": first_logged,
                    "step_range": [first_logged, last_logged],
                    "criterion": "the value training_step logged at every step, kept in "
                    "memory: 0 at every one",
                    "logged_train_acc_max": rounded(max(model.logged_train_acc)),
                    "true_train_acc_max": rounded(max(model.true_train_acc)),
                }
            ],
            "may_also_flag": {},
            "files": [LOG_FILE],
            "steps": steps,
            "max_steps": steps,
            "logging_steps": LOG_EVERY,
            "eval_steps": steps // EPOCHS,
            "facts": {
                "evaluations": EPOCHS,
                "val_acc": [rounded(v) for v in model.val_acc],
                "step_convention": "Lightning's global_step (the first batch is step 0); "
                "train metrics at every LOG_EVERY-th step, an epoch's values at its last step",
                "framework": "lightning",
            },
        },
    )
    print(NAME, "written")


if __name__ == "__main__":
    main()
