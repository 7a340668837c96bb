"""Write `lightning_logs/version_0/metrics.csv` with Lightning's own CSVLogger.

The fixture is the real format, not an imitation: a tiny regression model trained for three
epochs on random data (CPU, seeded), with

- `train_loss` logged with `on_step=True, on_epoch=True` (columns `train_loss_step` and
  `train_loss_epoch`),
- `val_loss` logged per validation epoch (sparse rows: only at epoch ends),
- `LearningRateMonitor` writing `lr-Adam` under a StepLR schedule (the lr halves each epoch),
- `log_every_n_steps=2`, so step rows, epoch rows and validation rows interleave.

Regenerate (from the repository root, in an environment with the CPU build of torch)::

    pip install torch==2.13.0 lightning
    python tests/data/lightning/make_fixture.py

Generated with torch 2.13.0+cpu and lightning 2.6.6.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent


class TinyRegressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 1)

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self):  # type: ignore[no-untyped-def]
        optimizer = torch.optim.Adam(self.parameters(), lr=0.05)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"},
        }


def loader(generator: torch.Generator, rows: int) -> DataLoader[tuple[torch.Tensor, ...]]:
    x = torch.randn(rows, 4, generator=generator)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(
        rows, 1, generator=generator
    )
    return DataLoader(TensorDataset(x, y), batch_size=8)


def main() -> None:
    L.seed_everything(0, verbose=False)
    generator = torch.Generator().manual_seed(0)
    target = HERE / "lightning_logs"
    shutil.rmtree(target, ignore_errors=True)
    trainer = L.Trainer(
        max_epochs=3,
        accelerator="cpu",
        logger=CSVLogger(save_dir=HERE, name="lightning_logs", version=0),
        callbacks=[LearningRateMonitor(logging_interval="step")],
        log_every_n_steps=2,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TinyRegressor(), loader(generator, 64), loader(generator, 32))
    print((target / "version_0" / "metrics.csv").read_text())


if __name__ == "__main__":
    main()
