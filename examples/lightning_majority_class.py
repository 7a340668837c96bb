"""A real Lightning run whose eval F1 is exactly 0 at every evaluation: the classifier
predicts the majority class for every example, logged by Lightning's own ``CSVLogger``.

A logistic-regression ``LightningModule`` (one linear layer, ``BCEWithLogitsLoss``) on
scikit-learn's ``make_classification`` data: 3,000 examples, 20 features, 5% positives,
weakly separable (``class_sep=0.3``, 5% of labels flipped), the output bias started at
the prior's log-odds (the usual recipe for imbalanced classes), split 2,000 / 1,000, Adam at
LR 1e-3, batch 64, 30 epochs, on CPU, seeded (``seed_everything``, one torch thread,
``deterministic=True``). ``train_loss`` is logged per step; ``val_loss``, ``val_acc`` and
``val_f1`` (F1 of the positive class over the whole validation set, 0 when nothing is
predicted positive, sklearn's ``zero_division=0``) once per validation.

The loss falls and the accuracy sits near the majority share (~0.95), which looks fine;
the model never predicts the minority class, which only the F1 shows: 0.0 at every
evaluation. The ground truth is what the module counted in its hooks (positive predictions
per validation), never read back from the CSV.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_majority_class.py
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger
from sklearn.datasets import make_classification
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402

NAME = "lightning_majority_class"
LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
EPOCHS = 30


class Classifier(L.LightningModule):
    """Logistic regression; counts its positive predictions on each validation."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(20, 1)
        # The usual recipe for imbalanced data: start the output at the prior's log-odds.
        with torch.no_grad():
            self.net.bias.fill_(float(torch.logit(torch.tensor(0.05))))
        self.loss = nn.BCEWithLogitsLoss()
        self.predicted_positive: list[int] = []  # per validation: examples predicted 1
        self.f1: list[float] = []
        self._outputs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        loss = self.loss(self.net(x).squeeze(1), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        x, y = batch
        logits = self.net(x).squeeze(1)
        self.log("val_loss", self.loss(logits, y), on_epoch=True)
        self._outputs.append(((logits > 0).float(), y))

    def on_validation_epoch_end(self) -> None:
        predicted = torch.cat([p for p, _ in self._outputs])
        truth = torch.cat([t for _, t in self._outputs])
        self._outputs = []
        hits = float((predicted * truth).sum())
        positives, actual = float(predicted.sum()), float(truth.sum())
        f1 = 0.0 if positives == 0 or hits == 0 else 2 * hits / (positives + actual)
        if not self.trainer.sanity_checking:
            self.predicted_positive.append(int(positives))
            self.f1.append(f1)
        self.log("val_acc", float((predicted == truth).float().mean()))
        self.log("val_f1", f1)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main() -> None:
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    torch.set_num_threads(1)
    L.seed_everything(SEED, workers=True)
    x, y = make_classification(
        n_samples=3000,
        n_features=20,
        weights=[0.95],
        class_sep=0.3,
        flip_y=0.05,
        random_state=SEED,
    )
    x_t, y_t = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    train = TensorDataset(x_t[:2000], y_t[:2000])
    val = TensorDataset(x_t[2000:], y_t[2000:])
    log_root = HERE / NAME / "lightning_logs"
    if log_root.exists():
        shutil.rmtree(log_root)
    model = Classifier()
    trainer = L.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(save_dir=str(HERE / NAME), name="lightning_logs"),
        log_every_n_steps=1,
        deterministic=True,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(
        model,
        DataLoader(train, batch_size=64, shuffle=True),
        DataLoader(val, batch_size=256),
    )
    steps = int(trainer.global_step)
    per_epoch = steps // EPOCHS
    assert max(model.predicted_positive) == 0, model.predicted_positive
    write_entry(
        NAME,
        {
            "summary": "Lightning logistic regression on imbalanced make_classification data "
            "(5% positives, weakly separable): the model predicts the majority class for "
            "every validation example, so val_f1 is exactly 0.0 at every one of the "
            f"{EPOCHS} evaluations while the loss falls and val_acc sits near 0.95.",
            "healthy": False,
            "must_be_silent": False,
            "pathologies": [
                {
                    "kind": "stuck_metric",
                    "detector": "plateau",
                    "metric": "val_f1",
                    "min_severity": "warning",
                    "first_step": per_epoch - 1,
                    "step_range": [per_epoch - 1, steps - 1],
                    "criterion": "positive predictions counted on the validation set at each "
                    "evaluation (on_validation_epoch_end): 0 at every one",
                    "positive_predictions_max": 0,
                    "val_f1_max": rounded(max(model.f1)),
                }
            ],
            "may_also_flag": {},
            "files": [LOG_FILE],
            "steps": steps,
            "max_steps": steps,
            "logging_steps": 1,
            "eval_steps": per_epoch,
            "facts": {
                "evaluations": EPOCHS,
                "positive_share_of_validation": rounded(float(y_t[2000:].mean())),
                "step_convention": "Lightning's global_step: an epoch value is logged at "
                "the epoch's last step",
            },
        },
    )
    print(NAME, "written")


if __name__ == "__main__":
    main()
