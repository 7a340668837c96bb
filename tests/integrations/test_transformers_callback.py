"""`TrainspotterCallback` in a real `transformers.Trainer` training a tiny model on the CPU:
a run whose LR is set huge mid-run is stopped within a few logging steps, a healthy run
finishes untouched, and both write the reports into output_dir."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from integrations.conftest import read_reports, require

torch = require("torch")
transformers = require("transformers")

from trainspotter.integrations.transformers import TrainspotterCallback  # noqa: E402

MAX_STEPS = 80
BLOWUP_STEP = 40
HUGE_LR = 1e30


class Regression(torch.nn.Module):  # type: ignore[misc]
    """y = x . w + noise, fitted by a linear layer: the loss falls and levels off."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 1)

    def forward(self, x: Any, labels: Any) -> dict[str, Any]:
        loss = torch.nn.functional.mse_loss(self.linear(x).squeeze(-1), labels)
        return {"loss": loss}


class Rows(torch.utils.data.Dataset):  # type: ignore[misc]
    def __init__(self, count: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(count, 8, generator=generator)
        weights = torch.randn(8, generator=generator)
        self.y = self.x @ weights + 0.1 * torch.randn(count, generator=generator)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"x": self.x[index], "labels": self.y[index]}


class LrBlowUp(transformers.TrainerCallback):  # type: ignore[misc]
    """A resume bug in miniature: from BLOWUP_STEP the scheduler's base LR is huge."""

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == BLOWUP_STEP:
            scheduler = kwargs["lr_scheduler"]
            scheduler.base_lrs = [HUGE_LR for _ in scheduler.base_lrs]


class Recorder(transformers.TrainerCallback):  # type: ignore[misc]
    def __init__(self) -> None:
        self.logs: list[tuple[int, dict[str, float]]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        self.logs.append((state.global_step, dict(logs or {})))


def _train(output: Path, *extra: Any) -> tuple[Any, TrainspotterCallback, Recorder]:
    torch.manual_seed(0)
    args = transformers.TrainingArguments(
        output_dir=str(output),
        max_steps=MAX_STEPS,
        per_device_train_batch_size=16,
        learning_rate=0.05,
        lr_scheduler_type="constant",
        logging_steps=1,
        logging_nan_inf_filter=False,  # log a NaN loss as NaN
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    spotter = TrainspotterCallback(stop_on="error")
    recorder = Recorder()
    trainer = transformers.Trainer(
        model=Regression(),
        args=args,
        train_dataset=Rows(512),
        callbacks=[spotter, recorder, *extra],
    )
    trainer.train()
    return trainer, spotter, recorder


def test_divergent_run_is_stopped_within_a_few_logging_steps(tmp_path: Path) -> None:
    trainer, spotter, recorder = _train(tmp_path, LrBlowUp())
    stopped_at = trainer.state.global_step
    assert stopped_at < MAX_STEPS, "training was not stopped"
    assert spotter.stopped_by is not None
    assert spotter.stopped_by.severity.label == "error"
    nonfinite = [
        step
        for step, logs in recorder.logs
        if any(isinstance(v, float) and not math.isfinite(v) for v in logs.values())
    ]
    # Stopped within 3 logging steps (logging_steps=1) of the first NaN, or before any.
    limit = (nonfinite[0] if nonfinite else BLOWUP_STEP) + 3
    assert BLOWUP_STEP < stopped_at <= limit, (stopped_at, nonfinite[:3])
    report = read_reports(tmp_path)
    assert report["summary"]["max_severity"] == "error"


def test_healthy_run_finishes_untouched(tmp_path: Path) -> None:
    trainer, spotter, _ = _train(tmp_path)
    assert trainer.state.global_step == MAX_STEPS
    assert spotter.stopped_by is None
    assert spotter.analysis is not None
    assert spotter.analysis.worst is None or spotter.analysis.worst.label != "error"
    report = read_reports(tmp_path)
    assert not any(f["severity"] == "error" for f in report["findings"])
    assert report["run"]["metrics"]["train/loss"]["count"] == MAX_STEPS
