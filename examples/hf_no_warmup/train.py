"""A real ``transformers.Trainer`` run at a large constant LR from step 1, with no warmup.

The tiny GPT-2 and the seeded synthetic data of ``examples/hf_trainer/train.py`` (imported
from there: 2 layers, 64-dim, vocabulary of 32, randomly initialised from a config, no
download), trained by ``Trainer`` with ``lr_scheduler_type="constant"``, ``warmup_steps=0``
and ``learning_rate=LEARNING_RATE``, 20 times the LR of the healthy ``hf_trainer`` run, from
the first step. ``Trainer``'s AdamW and its default clipping at 1.0 are kept. The loss rises
in the first steps before it comes down and settles.

``Trainer`` writes the log itself: ``trainer.save_state()`` after ``train()``, moved to
``trainer_state.json`` beside this script; ``output/`` is deleted. The ground truth in
``examples/expected.json`` comes from the per-step losses a ``TrainerCallback`` saw while
training (``logging_steps=1``) and from the LR the script set.

Environment: the one of ``examples/hf_trainer/`` (see examples/README.md)::

    HF_HUB_OFFLINE=1 /tmp/examples-frameworks/bin/python examples/hf_no_warmup/train.py
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import (
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
    set_seed,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from expected_entry import rounded, write_entry  # noqa: E402

NAME = HERE.name
OUTPUT_DIR = HERE / "output"
SEED = 42
LEARNING_RATE = 0.1
MAX_STEPS = 200
EARLY_STEPS = 20  # the window in which the early rise is looked for


def load_hf_trainer_example() -> Any:
    """examples/hf_trainer/train.py, for its model and data (both named ``train.py``)."""
    path = HERE.parent / "hf_trainer" / "train.py"
    spec = importlib.util.spec_from_file_location("hf_trainer_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LossRecorder(TrainerCallback):
    """The training loss of every logged step, as Trainer hands it to its loggers."""

    def __init__(self) -> None:
        self.losses: dict[int, float] = {}

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        if logs and "loss" in logs:
            self.losses[state.global_step] = float(logs["loss"])


def main() -> None:
    example = load_hf_trainer_example()
    if OUTPUT_DIR.exists():
        shutil.rmtree(OUTPUT_DIR)
    set_seed(SEED)
    torch.set_num_threads(2)
    arguments = TrainingArguments(
        output_dir=str(OUTPUT_DIR),
        max_steps=MAX_STEPS,
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        learning_rate=LEARNING_RATE,
        weight_decay=0.01,
        warmup_steps=0,
        lr_scheduler_type="constant",
        logging_strategy="steps",
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=25,
        save_strategy="no",
        seed=SEED,
        data_seed=SEED,
        use_cpu=True,
        report_to="none",
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    recorder = LossRecorder()
    trainer = Trainer(
        model=example.build_model(),
        args=arguments,
        train_dataset=example.NoisySuccessorDataset(example.TRAIN_SEQUENCES, seed=SEED),
        eval_dataset=example.NoisySuccessorDataset(example.EVAL_SEQUENCES, seed=SEED + 1),
        callbacks=[recorder],
    )
    trainer.train()
    trainer.save_state()
    (OUTPUT_DIR / "trainer_state.json").replace(HERE / "trainer_state.json")
    shutil.rmtree(OUTPUT_DIR)

    losses = [recorder.losses[step] for step in sorted(recorder.losses)]
    early = losses[:EARLY_STEPS]
    peak_step = early.index(max(early)) + 1
    assert early[peak_step - 1] > losses[0], "no early rise"
    back_below = next(
        step for step in range(peak_step + 1, len(losses) + 1) if losses[step - 1] < losses[0]
    )
    print("first steps:", " ".join(f"{loss:.3g}" for loss in losses[:30]))
    print(f"last 50 steps mean {statistics.fmean(losses[-50:]):.4f}")
    write_entry(
        NAME,
        {
            "summary": (
                "transformers.Trainer on a tiny randomly initialised GPT-2 with a constant LR "
                f"of {LEARNING_RATE:g} from step 1 and no warmup (lr_scheduler_type="
                "'constant', warmup_steps=0): the loss rises in the first steps, then comes "
                "down and settles."
            ),
            "healthy": False,
            "must_be_silent": False,
            "pathologies": [
                {
                    "kind": "no_warmup",
                    "detector": "lr_schedule",
                    "metric": "lr",
                    "step": 1,
                    "lr_at_step_1": LEARNING_RATE,
                    "min_severity": "warning",
                    # Strict xfail in tests/test_examples.py until issue 10's detector work
                    # catches it; remove the key then (here and below).
                    "open_issue": 10,
                },
                {
                    "kind": "early_loss_rise",
                    "detector": "lr_schedule",
                    "metric": "train/loss",
                    "step": peak_step,
                    "step_range": [1, back_below],
                    "initial_loss": rounded(losses[0]),
                    "peak_loss": rounded(early[peak_step - 1]),
                    "criterion": f"peak = highest loss of steps 1-{EARLY_STEPS}; the range "
                    "ends at the first step after it whose loss is below the step-1 loss",
                    "open_issue": 10,
                },
            ],
            "may_also_flag": {
                "spikes": "the loss jumps in the first steps",
                "divergence": "the early rise is a rise over a few steps",
                "grad_norm": "the gradient norm jumps with the loss early on",
            },
            "files": ["trainer_state.json"],
            "steps": MAX_STEPS,
            "max_steps": MAX_STEPS,
            "logging_steps": 1,
            "eval_steps": 25,
            "facts": {
                "initial_train_loss": rounded(losses[0]),
                "final_train_loss_mean_last_50_steps": rounded(statistics.fmean(losses[-50:])),
                "max_lr": LEARNING_RATE,
            },
        },
    )


if __name__ == "__main__":
    main()
