"""Write `lightning_logs/version_0/` with Lightning's own `TensorBoardLogger`.

What the TensorBoard reader must recognise as Lightning: the event file and the
`hparams.yaml` the logger saves next to it. A tiny linear regression (CPU, seeded) trained
with plain SGD at a learning rate far too high for its inputs, so `train_loss` grows every
step until it overflows to inf/NaN (the divergence detector's clipping fix must come out in
Lightning's words). `train_loss` is logged every step (`log_every_n_steps=1`), the model
saves one hyperparameter (so the logger also writes its hparams summaries), and no
checkpoint, progress bar or model summary is written.

Regenerate (from the repository root, in an environment with the CPU build of torch)::

    pip install torch==2.13.0 lightning==2.6.6 tensorboard
    python tests/data/tb_writers/lightning/make_fixture.py

Generated with torch 2.13.0+cpu, lightning 2.6.6 and tensorboard 2.21.0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent


class TinyRegressor(L.LightningModule):
    def __init__(self, lr: float = 0.6) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Linear(8, 1)

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams["lr"])


def main() -> None:
    L.seed_everything(0, verbose=False)
    generator = torch.Generator().manual_seed(0)
    target = HERE / "lightning_logs"
    shutil.rmtree(target, ignore_errors=True)
    x = 3.0 * torch.randn(320, 8, generator=generator)
    y = x @ torch.randn(8, 1, generator=generator) + 0.1 * torch.randn(320, 1, generator=generator)
    trainer = L.Trainer(
        max_epochs=4,
        accelerator="cpu",
        logger=TensorBoardLogger(save_dir=HERE, name="lightning_logs", version=0),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TinyRegressor(), DataLoader(TensorDataset(x, y), batch_size=32))
    print(sorted(p.name for p in (target / "version_0").iterdir()))


if __name__ == "__main__":
    main()
