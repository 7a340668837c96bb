"""Real PyTorch runs printed through Python ``logging`` (its ``%(asctime)s`` stamps only):
one whose data loader slows down half way, and its healthy twin.

An MLP (64 -> 256 -> 256 -> 10, ReLU) is trained on scikit-learn's bundled digits (the
split and standardisation of ``examples/generate.py``) with AdamW, batch 128, 2000 steps,
through a ``torch.utils.data.DataLoader``, seeded, one torch thread. Every ``LOG_EVERY`` steps the
script logs, with ``logging.basicConfig(format="%(asctime)s - %(levelname)s -
%(message)s")`` to stdout, ``Step [s/2000], Loss: X, LR: Y`` (the mean training loss of the
interval and the LR): no step time or throughput is printed, only the time of each line.
The training process' stdout is what is committed (``train.log``), as ``python train.py >
train.log`` captures it.

- ``logging_slowdown``: from step 1001 on, every batch the loader reads waits
  ``READ_LATENCY_SECONDS`` (5 ms) first: a real ``time.sleep`` in the loader's
  ``collate_fn``, standing for slow storage (each batch one read, as when a shared
  filesystem gets busy half way through a job). The losses are unaffected; only the time
  between log lines grows.
- ``logging_steady_healthy``: the same run without the sleep. Must be silent.

Environment (see examples/README.md; the framework venv of ``loader_slowdown_tb``)::

    /tmp/examples-frameworks/bin/python examples/logging_slowdown.py

Each run is trained in a child process whose stdout is its folder's ``train.log``; the
parent then replaces the run's entry in ``examples/expected.json``.
"""

from __future__ import annotations

import logging
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SEED = 5
STEPS = 2000
SLOW_FROM_STEP = 1001  # the first step whose batch is read from slow storage
READ_LATENCY_SECONDS = 5e-3  # per batch, from SLOW_FROM_STEP on (logging_slowdown)
BATCH_SIZE = 128
HIDDEN = 256
LEARNING_RATE = 1e-3
LOG_EVERY = 20
RUNS = {"logging_slowdown": True, "logging_steady_healthy": False}
"""Run name -> whether its loader slows down."""


def train(slow: bool) -> None:
    """One run, logging to stdout; the step times and losses go to stderr for the parent."""
    import torch
    from generate import load_split_digits
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset, default_collate

    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s - %(levelname)s - %(message)s",
        stream=sys.stdout,
    )
    log = logging.getLogger("train")

    class BatchReader:
        """The loader's collate function: each batch is one read from storage, which
        takes ``latency`` seconds (a real ``time.sleep``) before the samples are stacked."""

        def __init__(self) -> None:
            self.latency = 0.0

        def __call__(self, samples: list[tuple[torch.Tensor, ...]]) -> list[torch.Tensor]:
            if self.latency:
                time.sleep(self.latency)
            batch: list[torch.Tensor] = default_collate(samples)
            return batch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    data = load_split_digits()
    dataset = TensorDataset(torch.from_numpy(data.x_train), torch.from_numpy(data.y_train))
    reader = BatchReader()
    loader = DataLoader(
        dataset,
        batch_size=BATCH_SIZE,
        shuffle=True,
        collate_fn=reader,
        generator=torch.Generator().manual_seed(SEED),
    )

    def batches_forever() -> Iterator[list[torch.Tensor]]:
        while True:
            yield from loader

    model = nn.Sequential(
        nn.Linear(64, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, 10),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    loss_function = nn.CrossEntropyLoss()
    log.info("Training configuration:")
    log.info("  batch_size: %d", BATCH_SIZE)
    log.info("  steps: %d", STEPS)
    log.info("  optimizer: AdamW, weight_decay 0.01")
    batches = batches_forever()
    interval: list[float] = []
    for step in range(1, STEPS + 1):
        if slow and step == SLOW_FROM_STEP:
            reader.latency = READ_LATENCY_SECONDS
        started = time.perf_counter()
        inputs, labels = next(batches)
        optimizer.zero_grad()
        loss = loss_function(model(inputs), labels)
        loss.backward()
        optimizer.step()
        print(f"{step} {time.perf_counter() - started} {loss.item()!r}", file=sys.stderr)
        interval.append(loss.item())
        if step % LOG_EVERY == 0:
            lr = optimizer.param_groups[0]["lr"]
            mean = statistics.fmean(interval)
            log.info("Step [%d/%d], Loss: %.4f, LR: %.6f", step, STEPS, mean, lr)
            interval = []
    log.info("Training finished")


def run_and_record(name: str) -> None:
    """Train `name` in a child process (stdout -> its train.log) and write its entry."""
    from expected_entry import rounded, write_entry
    from generate import stretch_disturbed

    slow = RUNS[name]
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    with (folder / "train.log").open("w", encoding="utf-8") as out:
        child = subprocess.run(
            [sys.executable, __file__, "--child", name],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
    rows = [line.split() for line in child.stderr.splitlines() if line[:1].isdigit()]
    step_seconds = [float(row[1]) for row in rows]
    losses = [float(row[2]) for row in rows]
    split = SLOW_FROM_STEP - 1
    before = statistics.median(step_seconds[1:split])  # step 1 warms up
    after = statistics.median(step_seconds[split:])
    print(
        f"{name}: step time median {before * 1e3:.3f} ms before step {SLOW_FROM_STEP}, "
        f"{after * 1e3:.3f} ms from it on"
    )
    # What the log shows is the time between its lines: the sum over each interval, where
    # a burst of contention counts in full (a median over single steps hides it).
    intervals = [sum(step_seconds[i : i + LOG_EVERY]) for i in range(0, STEPS, LOG_EVERY)]
    half = split // LOG_EVERY
    if stretch_disturbed(intervals[1:half]) or stretch_disturbed(intervals[half:]):
        print("WARNING: the time between log lines shifted by over 30% within a stretch of")
        print("constant work: the machine was busy. Rerun it on a quiet machine.")
    first_logged = -(-SLOW_FROM_STEP // LOG_EVERY) * LOG_EVERY
    common = {
        "files": ["train.log"],
        "steps": STEPS,
        "max_steps": STEPS,
        "logging_steps": LOG_EVERY,
        "eval_steps": None,
        "facts": {
            "initial_train_loss": rounded(losses[0]),
            "final_train_loss_mean_last_50_steps": rounded(statistics.fmean(losses[-50:])),
            "max_lr": LEARNING_RATE,
            "read_latency_seconds_per_batch": READ_LATENCY_SECONDS if slow else 0.0,
        },
    }
    setup = (
        "PyTorch MLP on digits, AdamW, printed through Python logging "
        f"('%(asctime)s - %(levelname)s - %(message)s') every {LOG_EVERY} steps, "
        "no step time printed"
    )
    if not slow:
        write_entry(
            name,
            {
                "summary": f"{setup}; the loader reads at one speed throughout. Must be silent.",
                "healthy": True,
                "must_be_silent": True,
                "pathologies": [],
                **common,
            },
        )
        return
    write_entry(
        name,
        {
            "summary": (
                f"{setup}; from step {SLOW_FROM_STEP} the DataLoader's collate_fn sleeps "
                f"{READ_LATENCY_SECONDS * 1e3:g} ms per batch (a stand-in for slow "
                "storage): the time between log lines grows; the losses are unaffected."
            ),
            "healthy": False,
            "must_be_silent": False,
            "pathologies": [
                {
                    "kind": "throughput_drop",
                    "detector": "throughput",
                    "metric": "train/loss",
                    "first_step": SLOW_FROM_STEP,
                    "first_logged_step_after_cause": first_logged,
                    "step_range": [SLOW_FROM_STEP, STEPS],
                    "min_severity": "warning",
                    "note": "seen only in the wall-clock times of the log lines (their "
                    "asctime stamps); timings differ on every run, the script prints the "
                    "median step time before and after",
                }
            ],
            **common,
        },
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        train(RUNS[argv[1]])
        return 0
    for name in argv or list(RUNS):
        run_and_record(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
