"""Write `runs/tiny/events.out.tfevents.*` with transformers' own `TensorBoardCallback`.

What the TensorBoard reader must recognise as a transformers Trainer run: the `args` text
summary (TrainingArguments as JSON) and the `model_config` one the callback writes at train
start. A tiny GPT-2 (one layer, 16-dim embeddings, built from a config: nothing is
downloaded) is trained on random token sequences (CPU, seeded) with `report_to=
"tensorboard"`, a constant learning rate of 0.5 from step 0 with no warmup and clipping off
(`max_grad_norm=0`), so the loss jumps in the first steps (the LR-schedule detector's
warmup fix, and the clipping fix, must come out in transformers' words). The loss, LR and
grad norm are logged every step.

Regenerate (from the repository root, in an environment with the CPU build of torch)::

    pip install torch==2.13.0 transformers tensorboard
    python tests/data/tb_writers/hf/make_fixture.py

Generated with torch 2.13.0+cpu, transformers 5.24.0 and tensorboard 2.21.0. The checkpoint
folders the Trainer makes in its output dir are removed: only the event file is kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

HERE = Path(__file__).resolve().parent
VOCAB = 64
LENGTH = 16


class RandomTokens(Dataset[dict[str, torch.Tensor]]):
    def __init__(self, rows: int, generator: torch.Generator) -> None:
        self.ids = torch.randint(0, VOCAB, (rows, LENGTH), generator=generator)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


def main() -> None:
    set_seed(0)
    target = HERE / "runs"
    shutil.rmtree(target, ignore_errors=True)
    # transformers 5 takes the TensorBoard folder from this variable (`logging_dir` is gone).
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(target / "tiny")
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=LENGTH,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    with tempfile.TemporaryDirectory() as output:
        args = TrainingArguments(
            output_dir=output,
            report_to="tensorboard",
            max_steps=40,
            per_device_train_batch_size=8,
            learning_rate=0.5,
            lr_scheduler_type="constant",
            warmup_steps=0,
            max_grad_norm=0.0,
            logging_steps=1,
            save_strategy="no",
            use_cpu=True,
            seed=0,
            disable_tqdm=True,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=RandomTokens(320, torch.Generator().manual_seed(0)),
        )
        trainer.train()
    print(sorted(p.name for p in (target / "tiny").iterdir()))


if __name__ == "__main__":
    main()
