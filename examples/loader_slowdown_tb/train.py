"""A real PyTorch run whose data loader slows down half way, logged with TensorBoard.

An MLP (64 -> 64 -> 10, ReLU) is trained on scikit-learn's bundled digits (the split and
standardisation of ``examples/generate.py``) with AdamW, batch 64, 800 steps, through a
``torch.utils.data.DataLoader``. From step 401 on, every sample the loader reads waits
``READ_LATENCY_SECONDS`` first (a real ``time.sleep`` in ``Dataset.__getitem__``): the reads
now go to slow storage, as when a shared filesystem gets busy half way through a job. The
model, the data and the losses are unaffected; only the time per step changes.

``torch.utils.tensorboard.SummaryWriter`` writes, every ``LOG_EVERY`` steps, the scalars
``train/loss`` (mean over the interval), ``lr``, ``step_time`` (mean wall-clock seconds per
step over the interval, data loading included, measured with ``time.perf_counter``) and
``samples_per_sec`` (samples of the interval over its measured time).

Environment (see examples/README.md; one venv can serve all the framework runs)::

    python3 -m venv /tmp/examples-frameworks
    /tmp/examples-frameworks/bin/pip install -r examples/loader_slowdown_tb/requirements.txt
    /tmp/examples-frameworks/bin/python examples/loader_slowdown_tb/train.py

The script replaces ``tensorboard/`` beside it and its own entry in ``examples/expected.json``.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.tensorboard import SummaryWriter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from expected_entry import rounded, write_entry  # noqa: E402
from generate import load_split_digits, stretch_disturbed  # noqa: E402

NAME = HERE.name
SEED = 3
STEPS = 800
SLOW_FROM_STEP = 401  # the first step whose batch is read from slow storage
READ_LATENCY_SECONDS = 5e-4  # per sample, from SLOW_FROM_STEP on
BATCH_SIZE = 64
LEARNING_RATE = 2e-3
LOG_EVERY = 10


class DigitsOnStorage(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """The digits, read one sample at a time; ``read_latency`` is the storage's delay."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        self.features = features
        self.labels = labels
        self.read_latency = 0.0

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.read_latency:
            time.sleep(self.read_latency)
        return self.features[index], self.labels[index]


def batches_forever(
    loader: DataLoader[tuple[torch.Tensor, torch.Tensor]],
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Epoch after epoch, each reshuffled by the loader's seeded generator."""
    while True:
        yield from loader


def main() -> None:
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    data = load_split_digits()
    dataset = DigitsOnStorage(torch.from_numpy(data.x_train), torch.from_numpy(data.y_train))
    loader = DataLoader(
        dataset,
        batch_size=BATCH_SIZE,
        shuffle=True,
        generator=torch.Generator().manual_seed(SEED),
    )
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    loss_function = nn.CrossEntropyLoss()

    log_dir = HERE / "tensorboard"
    if log_dir.exists():
        shutil.rmtree(log_dir)
    writer = SummaryWriter(log_dir=str(log_dir))
    step_seconds: list[float] = []
    losses: list[float] = []
    batches = batches_forever(loader)
    interval_losses: list[float] = []
    interval_seconds = 0.0
    interval_samples = 0
    for step in range(1, STEPS + 1):
        if step == SLOW_FROM_STEP:
            dataset.read_latency = READ_LATENCY_SECONDS
        started = time.perf_counter()
        inputs, labels = next(batches)
        optimizer.zero_grad()
        loss = loss_function(model(inputs), labels)
        loss.backward()
        optimizer.step()
        seconds = time.perf_counter() - started
        step_seconds.append(seconds)
        losses.append(loss.item())
        interval_losses.append(loss.item())
        interval_seconds += seconds
        interval_samples += len(labels)
        if step % LOG_EVERY == 0:
            writer.add_scalar("train/loss", statistics.fmean(interval_losses), step)
            writer.add_scalar("lr", optimizer.param_groups[0]["lr"], step)
            writer.add_scalar("step_time", interval_seconds / len(interval_losses), step)
            writer.add_scalar("samples_per_sec", interval_samples / interval_seconds, step)
            interval_losses, interval_seconds, interval_samples = [], 0.0, 0
    writer.close()

    before = statistics.median(step_seconds[: SLOW_FROM_STEP - 1][1:])  # step 1 warms up
    after = statistics.median(step_seconds[SLOW_FROM_STEP - 1 :])
    first_logged = -(-SLOW_FROM_STEP // LOG_EVERY) * LOG_EVERY
    print(f"step time median {before * 1e3:.3f} ms before, {after * 1e3:.3f} ms after")
    print(f"loss {losses[0]:.3f} -> {statistics.fmean(losses[-50:]):.4f} (mean of last 50)")
    if stretch_disturbed(step_seconds[1 : SLOW_FROM_STEP - 1]) or stretch_disturbed(
        step_seconds[SLOW_FROM_STEP - 1 :]
    ):
        print("WARNING: the step time shifted by over 30% within a stretch of constant work:")
        print("the machine was busy. Rerun it on a quiet machine.")
    write_entry(
        NAME,
        {
            "summary": (
                "PyTorch MLP on digits, AdamW, logged with torch.utils.tensorboard "
                f"every {LOG_EVERY} steps; from step {SLOW_FROM_STEP} the DataLoader's "
                f"dataset sleeps {READ_LATENCY_SECONDS * 1e3:g} ms per sample read (slow "
                "storage): step_time rises and samples_per_sec falls; the losses are unaffected."
            ),
            "healthy": False,
            "must_be_silent": False,
            "pathologies": [
                {
                    "kind": "throughput_drop",
                    "detector": "throughput",
                    "metric": "throughput",
                    "first_step": SLOW_FROM_STEP,
                    "first_logged_step_after_cause": first_logged,
                    "step_range": [SLOW_FROM_STEP, STEPS],
                    "also_metric": "step_time",
                    "tags": ["step_time", "samples_per_sec"],
                    "min_severity": "warning",
                    "note": "timings are wall-clock measurements and differ on every run; "
                    "the script prints the median step time before and after",
                }
            ],
            "files": ["tensorboard/"],
            "steps": STEPS,
            "max_steps": STEPS,
            "logging_steps": LOG_EVERY,
            "eval_steps": None,
            "facts": {
                "initial_train_loss": rounded(losses[0]),
                "final_train_loss_mean_last_50_steps": rounded(statistics.fmean(losses[-50:])),
                "max_lr": LEARNING_RATE,
                "read_latency_seconds_per_sample": READ_LATENCY_SECONDS,
            },
        },
    )


if __name__ == "__main__":
    main()
