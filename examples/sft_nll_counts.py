"""A real hand-written supervised fine-tuning loop that logs a token count next to its NLL.

``sft_nll_counts``: a character-level GRU language model (embedding 32, one GRU layer of
128 units) trained on prompt/response pairs: each prompt is a line of scikit-learn's bundled
dataset descriptions (``DESCR`` of iris, digits, wine, breast cancer, diabetes, linnerud),
its response the line after it. As in an SFT loop, only the response characters are
targets: the prompt's are masked out of the loss, so the number of target characters in a
batch of 8 pairs (``num_loss_tokens``) varies with the batch's lines and is never
optimised. Adam, LR 3e-3 with a 20-step linear warmup and a linear decay to 10% by the last
step, 400 steps, gradients clipped at 1.0, seeded.

The loop writes ``metrics.jsonl`` with the ``json`` module, one object per step, with the
names an SFT trainer writes: ``step``, ``num_sequences``, ``num_loss_tokens``,
``train_mean_nll`` (the batch's summed negative log-likelihood over its target characters,
divided by ``num_loss_tokens``), ``learning_rate``, and every 25 steps (and at the last)
``test/nll``: the same mean over the target characters of the 64 held-out pairs. The run
is healthy: both NLLs fall and level off. Must be silent; the count is no loss.

The ground truth (the NLLs, the count's range) is what the loop computed while training,
never read back from the log.

Environment (the framework venv of examples/README.md; torch, numpy, scikit-learn)::

    /tmp/examples-frameworks/bin/python examples/sft_nll_counts.py    # ~15 s
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import torch
from sklearn import datasets
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402

NAME = "sft_nll_counts"
LOG_FILE = "metrics.jsonl"
SEED = 0
STEPS = 400
BATCH = 8
EVAL_EVERY = 25
HELD_OUT = 64
PEAK_LR = 3e-3
WARMUP = 20
FINAL_LR_FRACTION = 0.1
PAD = 0  # index 0 pads; characters start at 1


class CharGru(nn.Module):
    """Embedding, one GRU layer, a linear head over the character vocabulary."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 32, padding_idx=PAD)
        self.gru = nn.GRU(32, 128, batch_first=True)
        self.head = nn.Linear(128, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.embed(ids))
        logits: torch.Tensor = self.head(hidden)
        return logits


def load_pairs() -> list[tuple[str, str]]:
    """(prompt, response) pairs: consecutive non-trivial lines of the bundled descriptions."""
    loaders = (
        datasets.load_iris,
        datasets.load_digits,
        datasets.load_wine,
        datasets.load_breast_cancer,
        datasets.load_diabetes,
        datasets.load_linnerud,
    )
    pairs: list[tuple[str, str]] = []
    for load in loaders:
        lines = [line.strip() for line in load().DESCR.splitlines()]
        lines = [line for line in lines if 20 <= len(line) <= 80 and not set(line) <= set("=-")]
        pairs.extend(pairwise(lines))
    return pairs


def encode(pairs: list[tuple[str, str]], index: dict[str, int]) -> tuple[torch.Tensor, ...]:
    """Input ids, target ids and the loss mask (1 on response characters) of a batch,
    right-padded. The sequence is prompt + "\\n" + response; each position predicts the next."""
    texts = [prompt + "\n" + response for prompt, response in pairs]
    width = max(len(text) for text in texts) - 1
    inputs = torch.full((len(texts), width), PAD, dtype=torch.long)
    targets = torch.full((len(texts), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(texts), width))
    for row, ((prompt, _), text) in enumerate(zip(pairs, texts, strict=True)):
        ids = [index[char] for char in text]
        inputs[row, : len(ids) - 1] = torch.tensor(ids[:-1])
        targets[row, : len(ids) - 1] = torch.tensor(ids[1:])
        mask[row, len(prompt) : len(ids) - 1] = 1.0  # targets of the response's characters
    return inputs, targets, mask


def summed_nll(model: CharGru, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, int]:
    """The summed NLL over the batch's target characters, and how many there are."""
    inputs, targets, mask = batch
    logits = model(inputs)
    nll = nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return (nll * mask).sum(), int(mask.sum().item())


def learning_rate(step: int) -> float:
    """Linear warmup over WARMUP steps, then a linear decay to FINAL_LR_FRACTION of the peak."""
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    done = (step - WARMUP) / (STEPS - 1 - WARMUP)
    return PEAK_LR * (1.0 - (1.0 - FINAL_LR_FRACTION) * done)


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    pairs = load_pairs()
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(SEED)).tolist()
    held_out = [pairs[i] for i in order[:HELD_OUT]]
    train = [pairs[i] for i in order[HELD_OUT:]]
    chars = sorted({char for prompt, response in pairs for char in prompt + "\n" + response})
    index = {char: i + 1 for i, char in enumerate(chars)}
    model = CharGru(len(chars) + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=PEAK_LR)
    test_batch = encode(held_out, index)
    generator = torch.Generator().manual_seed(SEED)

    out_dir = HERE / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir()
    counts: list[int] = []
    train_nll: list[float] = []
    test_nll: dict[int, float] = {}
    batch_order: list[int] = []
    with (out_dir / LOG_FILE).open("w") as handle:
        for step in range(STEPS):
            if len(batch_order) < BATCH:
                batch_order += torch.randperm(len(train), generator=generator).tolist()
            chosen, batch_order = batch_order[:BATCH], batch_order[BATCH:]
            lr = learning_rate(step)
            for group in optimizer.param_groups:
                group["lr"] = lr
            model.train()
            total, count = summed_nll(model, encode([train[i] for i in chosen], index))
            loss = total / count
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            record: dict[str, Any] = {
                "step": step,
                "num_sequences": BATCH,
                "num_loss_tokens": count,
                "train_mean_nll": loss.item(),
                "learning_rate": lr,
            }
            counts.append(count)
            train_nll.append(loss.item())
            if (step + 1) % EVAL_EVERY == 0 or step == STEPS - 1:
                model.eval()
                with torch.no_grad():
                    held_total, held_count = summed_nll(model, test_batch)
                record["test/nll"] = held_total.item() / held_count
                test_nll[step] = record["test/nll"]
            handle.write(json.dumps(record) + "\n")
    write_entry(NAME, entry(counts, train_nll, test_nll, len(train), len(chars)))
    print(NAME, "written")


def entry(
    counts: list[int],
    train_nll: list[float],
    test_nll: dict[int, float],
    train_pairs: int,
    vocab: int,
) -> dict[str, Any]:
    """The run's expected.json entry, from what the loop computed."""
    first10 = statistics.median(train_nll[:10])
    last10 = statistics.median(train_nll[-10:])
    return {
        "summary": (
            "A hand-written SFT loop (character GRU on prompt/response line pairs of "
            "scikit-learn's dataset descriptions, loss on the response characters only), "
            "logging num_loss_tokens (target characters per batch of 8, varying with the "
            f"batch: {min(counts)}-{max(counts)}, never optimised) beside train_mean_nll and "
            f"test/nll to metrics.jsonl: test/nll {test_nll[min(test_nll)]:.3f} at step "
            f"{min(test_nll)} -> {test_nll[max(test_nll)]:.3f} at step {max(test_nll)}. "
            "Healthy: the count is no loss and must not be judged as one."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        "may_also_flag": {},
        "files": [LOG_FILE],
        "steps": STEPS - 1,
        "max_steps": STEPS - 1,
        "logging_steps": 1,
        "eval_steps": EVAL_EVERY,
        "facts": {
            "train_pairs": train_pairs,
            "held_out_pairs": HELD_OUT,
            "num_loss_tokens_min": min(counts),
            "num_loss_tokens_max": max(counts),
            "num_loss_tokens_first": counts[0],
            "train_mean_nll_median_first_10": rounded(first10),
            "train_mean_nll_median_last_10": rounded(last10),
            "test_nll": {str(step): rounded(value) for step, value in test_nll.items()},
            "uniform_guess_nll": rounded(math.log(vocab)),
            "step_convention": "the loop's step, from 0; one optimiser step per logged row",
            "framework": "torch (hand-written loop, json module)",
        },
    }


if __name__ == "__main__":
    main()
