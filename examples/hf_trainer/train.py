"""Train a tiny GPT-2 with the real ``transformers.Trainer`` and keep its ``trainer_state.json``.

This produces a genuine Hugging Face ``trainer_state.json`` (written by ``Trainer`` itself, not
imitated) so trainspotter's reader can be tested against the real thing.

Model: ``GPT2LMHeadModel`` built from a ``GPT2Config`` (2 layers, 64-dim, 4 heads, vocabulary of
32 tokens): random initialisation, no downloaded weights, no tokenizer, no hub access.

Data: synthetic token sequences made here, seeded. A fixed random permutation of the 32 tokens
defines each token's successor; a sequence starts at a random token and follows the permutation,
except that every token is, with probability 0.1, replaced by a uniformly random token (the
sequence then continues from the replacement). The successor table is learnable; the random
replacements put a floor under the achievable loss, so the curve converges to a level well
above zero instead of collapsing to it.

Training: AdamW, lr 5e-4, 40 warmup steps then cosine decay, 400 steps, batch 32, gradient
clipping at 1.0 (Trainer's default; ``grad_norm`` in the log is the pre-clip norm), logging
every 5 steps, evaluation every 25 steps, a checkpoint every 100 steps, seed 42, CPU.

After training, every checkpoint's weights, optimizer, scheduler and RNG files are deleted:
only ``output/checkpoint-<N>/trainer_state.json`` of the last two checkpoints is kept. The
state ``Trainer.save_state()`` writes after ``train()`` returns (the only one holding the final
run-summary entry with ``train_runtime``) is moved to ``trainer_state.json`` beside this script,
so ``output/`` holds checkpoints only.

Environment (separate from the project's; see README.md beside this file)::

    python3 -m venv examples/hf_trainer/.venv
    examples/hf_trainer/.venv/bin/pip install torch==2.13.0 transformers==5.24.0 \\
        accelerate==1.15.0
    HF_HUB_OFFLINE=1 examples/hf_trainer/.venv/bin/python examples/hf_trainer/train.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import shutil
from pathlib import Path

import torch
from torch.utils.data import Dataset
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainingArguments,
    set_seed,
)

HERE = Path(__file__).resolve().parent
OUTPUT_DIR = HERE / "output"
FINAL_STATE_PATH = HERE / "trainer_state.json"

SEED = 42
VOCAB_SIZE = 32
SEQUENCE_LENGTH = 24
NOISE_PROBABILITY = 0.1
TRAIN_SEQUENCES = 4096
EVAL_SEQUENCES = 256
CHECKPOINTS_KEPT = 2


class NoisySuccessorDataset(Dataset[dict[str, torch.Tensor]]):
    """Walks along a fixed random successor permutation, with random token replacements."""

    def __init__(self, count: int, seed: int) -> None:
        successor_of = torch.randperm(VOCAB_SIZE, generator=torch.Generator().manual_seed(SEED))
        generator = torch.Generator().manual_seed(seed)
        tokens = torch.empty((count, SEQUENCE_LENGTH), dtype=torch.long)
        tokens[:, 0] = torch.randint(0, VOCAB_SIZE, (count,), generator=generator)
        for position in range(1, SEQUENCE_LENGTH):
            replace = torch.rand(count, generator=generator) < NOISE_PROBABILITY
            random_tokens = torch.randint(0, VOCAB_SIZE, (count,), generator=generator)
            following = successor_of[tokens[:, position - 1]]
            tokens[:, position] = torch.where(replace, random_tokens, following)
        self.tokens = tokens

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        sequence = self.tokens[index]
        return {"input_ids": sequence, "labels": sequence.clone()}


def build_model() -> GPT2LMHeadModel:
    """A randomly initialised 2-layer GPT-2 small enough to train in about a minute on CPU."""
    config = GPT2Config(
        vocab_size=VOCAB_SIZE,
        n_positions=SEQUENCE_LENGTH,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def keep_only_trainer_states(output_dir: Path, keep: int) -> list[Path]:
    """Delete weights/optimizer files; keep trainer_state.json of the last ``keep`` checkpoints."""
    checkpoints = sorted(
        (path for path in output_dir.glob("checkpoint-*") if path.is_dir()),
        key=lambda path: int(path.name.split("-")[1]),
    )
    kept = checkpoints[-keep:]
    for checkpoint in checkpoints:
        if checkpoint not in kept:
            shutil.rmtree(checkpoint)
            continue
        for item in checkpoint.iterdir():
            if item.name == "trainer_state.json":
                continue
            if item.is_dir():
                shutil.rmtree(item)
            else:
                item.unlink()
    for item in output_dir.iterdir():
        if item.is_file():
            item.unlink()
    return kept


def main() -> None:
    if OUTPUT_DIR.exists():
        shutil.rmtree(OUTPUT_DIR)
    set_seed(SEED)
    torch.set_num_threads(2)

    arguments = TrainingArguments(
        output_dir=str(OUTPUT_DIR),
        max_steps=400,
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        learning_rate=5e-4,
        weight_decay=0.01,
        warmup_steps=40,
        lr_scheduler_type="cosine",
        max_grad_norm=1.0,
        logging_strategy="steps",
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=25,
        save_strategy="steps",
        save_steps=100,
        seed=SEED,
        data_seed=SEED,
        use_cpu=True,
        report_to="none",
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=build_model(),
        args=arguments,
        train_dataset=NoisySuccessorDataset(TRAIN_SEQUENCES, seed=SEED),
        eval_dataset=NoisySuccessorDataset(EVAL_SEQUENCES, seed=SEED + 1),
    )
    result = trainer.train()
    trainer.save_state()
    # The final state (the only one with the run-summary entry) moves out of output/, so
    # output/ holds checkpoints only, as a training job's output folder usually does.
    (OUTPUT_DIR / "trainer_state.json").replace(FINAL_STATE_PATH)
    kept = keep_only_trainer_states(OUTPUT_DIR, CHECKPOINTS_KEPT)
    print(f"train_loss={result.training_loss:.4f} steps={result.global_step}")
    for checkpoint in kept:
        print(f"kept {checkpoint.relative_to(HERE)}/trainer_state.json")
    print(f"kept {FINAL_STATE_PATH.relative_to(HERE)}")


if __name__ == "__main__":
    main()
