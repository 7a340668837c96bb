"""`TrainspotterCallback` in a real Lightning `Trainer` training a tiny model on the CPU:
a run whose LR is set huge mid-run is stopped within a few steps, a healthy run finishes
untouched, and both write the reports into the logger's log_dir."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest

from integrations.conftest import read_reports, require

torch = require("torch")
pl = require("lightning.pytorch")
loggers = require("lightning.pytorch.loggers")

from trainspotter.integrations.lightning import TrainspotterCallback  # noqa: E402

MAX_STEPS = 80
BLOWUP_STEP = 40
HUGE_LR = 1e30


class Regression(pl.LightningModule):  # type: ignore[misc]
    """A linear layer fitting y = x . w + noise; logs the loss and the LR every step and
    a validation loss every 20 steps."""

    def __init__(self, blow_up: bool) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 1)
        self.blow_up = blow_up
        self.losses: list[tuple[int, float]] = []

    def _loss(self, batch: Any) -> Any:
        x, y = batch
        return torch.nn.functional.mse_loss(self.linear(x).squeeze(-1), y)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        optimizer = self.optimizers()
        if self.blow_up and self.global_step == BLOWUP_STEP:
            for group in optimizer.param_groups:  # a resume bug in miniature
                group["lr"] = HUGE_LR
        loss = self._loss(batch)
        self.losses.append((self.global_step, float(loss.detach())))
        self.log("train_loss", loss)
        self.log("lr", optimizer.param_groups[0]["lr"])
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", self._loss(batch))

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.05)


def _data(count: int, seed: int) -> Any:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(count, 8, generator=generator)
    weights = torch.randn(8, generator=torch.Generator().manual_seed(0))
    y = x @ weights + 0.1 * torch.randn(count, generator=generator)
    dataset = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=False)


def _fit(root: Path, blow_up: bool) -> tuple[Any, Regression, TrainspotterCallback]:
    pl.seed_everything(0, verbose=False)
    spotter = TrainspotterCallback(stop_on="error")
    trainer = pl.Trainer(
        max_steps=MAX_STEPS,
        accelerator="cpu",
        devices=1,
        logger=loggers.CSVLogger(str(root)),
        callbacks=[spotter],
        log_every_n_steps=1,
        val_check_interval=20,
        check_val_every_n_epoch=None,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(root),
    )
    model = Regression(blow_up)
    trainer.fit(model, _data(2048, 1), _data(128, 2))
    return trainer, model, spotter


def test_divergent_run_is_stopped_within_a_few_steps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    trainer, model, spotter = _fit(tmp_path, blow_up=True)
    stopped_at = trainer.global_step
    assert stopped_at < MAX_STEPS, "training was not stopped"
    assert spotter.stopped_by is not None
    assert spotter.stopped_by.severity.label == "error"
    nonfinite = [step for step, loss in model.losses if not math.isfinite(loss)]
    limit = (nonfinite[0] if nonfinite else BLOWUP_STEP) + 3
    assert BLOWUP_STEP < stopped_at <= limit, (stopped_at, nonfinite[:3])
    assert any("trainspotter: stopping training" in r.getMessage() for r in caplog.records)
    report = read_reports(Path(trainer.log_dir))
    assert report["summary"]["max_severity"] == "error"


def test_healthy_run_finishes_untouched(tmp_path: Path) -> None:
    trainer, _, spotter = _fit(tmp_path, blow_up=False)
    assert trainer.global_step == MAX_STEPS
    assert spotter.stopped_by is None
    assert spotter.analysis is not None
    report = read_reports(Path(trainer.log_dir))
    assert not any(f["severity"] == "error" for f in report["findings"])
    metrics = report["run"]["metrics"]
    assert metrics["train/loss"]["count"] == MAX_STEPS
    # The validation loss is recorded once per validation (every 20 steps), not per batch.
    assert metrics["eval/loss"]["count"] == MAX_STEPS // 20
