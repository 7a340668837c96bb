"""Capture what real training loops print, for the stdout reader's tests.

Each case runs in its own process with stdout and stderr sent to one file, exactly as
`python train.py > train.log 2>&1` would leave them (so tqdm's carriage-return bars,
library warnings and the training lines interleave as they do in a real log):

- `hf_trainer_no_tqdm.log`: `transformers.Trainer` with `disable_tqdm=True` (the dicts
  printed by its PrinterCallback), a tiny randomly initialised GPT-2 (no downloads).
- `hf_trainer_tqdm.log`: the same run with `disable_tqdm=False` (the dicts written through
  tqdm between carriage-return progress-bar refreshes).
- `keras_verbose2.log` / `keras_verbose1.log`: Keras 3 (torch backend) `fit(verbose=2)` and
  `fit(verbose=1)` of a small MLP on seeded random data with a validation split.
- `nanogpt.log`: a plain torch loop in nanoGPT's style, printing
  `iter N: loss X, time Yms, mfu Z%` and `step N: train loss X, val loss Y`.
- `build_nanogpt/log/log.txt` (and `build_nanogpt.log`, what it printed): a plain torch
  loop that logs exactly as Karpathy's build-nanogpt `train_gpt2.py` does: `log/log.txt`
  cleared at the start, then `{step} val {val_loss:.4f}` and `{step} hella {acc_norm:.4f}`
  every `eval_every` steps and at the last, and `{step} train {loss_accum:.6f}` every step
  (gradient accumulation, clipping at 1.0, its warmup-then-cosine `get_lr`, its printed
  `step N | loss: ... | lr ... | norm: ... | dt: ...ms | tok/sec: ...` line). The
  `hella` accuracy is HellaSwag's method on this data: each item is a context and four
  completions (the true next tokens and three random ones), the pick is the completion
  with the lowest mean loss.
- `lightning_bar.log`: PyTorch Lightning's TQDM progress bar (`train_loss` and `val_loss`
  in the postfix, `prog_bar=True`).
- `logging_epochs.log`: a plain torch loop reporting through Python's `logging` with the
  common `%(asctime)s - %(levelname)s - %(message)s` format (the time has a comma): a config
  dump, then one `Epoch 1/6, Train Loss: X, Val Loss: Y, Val Acc: Z%` line per epoch.
- `logging_steps.log`: the same loop with `logging.basicConfig`'s default format
  (`INFO:__main__:...`), printing `Epoch [1/4], Step [10/25], Loss: X` every 5 batches
  (the step restarts each epoch) and `Epoch [1] Validation Loss: Y` after each epoch.
- `scan_preamble.log`: a plain torch loop that first scans its 4,541 items one by one,
  printing `Scan 1/4541...` for each (thousands of short lines before any training line,
  as dataset-loading code does), then prints `Epoch 1/5 | Batch 10/40 | Loss: X` every 10
  batches and `Epoch 1/5 | val_loss: Y | val_acc: Z%` after each epoch.
- `trl_sft.log`: TRL's `SFTTrainer` (tqdm on) on a tiny randomly initialised Llama with a
  word-level tokenizer built in code (no downloads): its dicts, values printed as strings,
  between carriage-return bar refreshes.

Everything is seeded and runs on CPU in well under a minute per case. Timings (`time`,
`it/s`, runtimes) are wall-clock and differ on every run; losses are reproducible on one
machine.

Regenerate (from the repository root, in a separate environment)::

    python3 -m venv /tmp/stdout-gen
    /tmp/stdout-gen/bin/pip install -r tests/data/stdout/requirements.txt
    /tmp/stdout-gen/bin/python tests/data/stdout/generate.py
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 7
# The schedule both HF runs share (transformers' Trainer and TRL's SFTTrainer).
HF_SCHEDULE = {
    "max_steps": 60,
    "logging_steps": 5,
    "eval_strategy": "steps",
    "eval_steps": 20,
    "save_strategy": "no",
    "report_to": [],
    "seed": SEED,
    "use_cpu": True,
}


def hf_trainer(disable_tqdm: bool) -> None:
    import torch
    from torch.utils.data import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

    vocab, length = 32, 16

    class Successors(Dataset[dict[str, torch.Tensor]]):
        """A fixed random successor walk with 10% random tokens (learnable, loss floor > 0)."""

        def __init__(self, count: int, seed: int) -> None:
            successor = torch.randperm(vocab, generator=torch.Generator().manual_seed(SEED))
            gen = torch.Generator().manual_seed(seed)
            tokens = torch.empty((count, length), dtype=torch.long)
            tokens[:, 0] = torch.randint(0, vocab, (count,), generator=gen)
            for i in range(1, length):
                noise = torch.rand(count, generator=gen) < 0.1
                random_tokens = torch.randint(0, vocab, (count,), generator=gen)
                tokens[:, i] = torch.where(noise, random_tokens, successor[tokens[:, i - 1]])
            self.tokens = tokens

        def __len__(self) -> int:
            return int(self.tokens.shape[0])

        def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
            return {"input_ids": self.tokens[index], "labels": self.tokens[index].clone()}

    set_seed(SEED)
    config = GPT2Config(
        vocab_size=vocab,
        n_positions=length,
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    out = Path(os.environ["STDOUT_GEN_TMP"]) / "hf_output"
    args = TrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        learning_rate=1e-3,
        warmup_steps=10,
        disable_tqdm=disable_tqdm,
        **HF_SCHEDULE,
    )
    trainer = Trainer(
        model=GPT2LMHeadModel(config),
        args=args,
        train_dataset=Successors(1024, 1),
        eval_dataset=Successors(128, 2),
    )
    trainer.train()


def keras_fit(verbose: int) -> None:
    os.environ["KERAS_BACKEND"] = "torch"
    import keras
    import numpy as np

    keras.utils.set_random_seed(SEED)
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(640, 8)).astype("float32")
    weights = rng.normal(size=(8,))
    y = ((x @ weights + 0.5 * rng.normal(size=640)) > 0).astype("float32")
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(x, y, epochs=8, batch_size=32, validation_split=0.2, verbose=verbose)


def _markov_text(vocab: int) -> tuple[Any, Any]:
    """The nanoGPT-style loops' data: 20,000 tokens, each the previous one's fixed
    successor 90% of the time, else random; split 90/10 into train and validation."""
    import torch

    successor = torch.randperm(vocab)
    data = torch.empty(20000, dtype=torch.long)
    data[0] = 0
    for i in range(1, len(data)):
        data[i] = successor[data[i - 1]] if torch.rand(()) > 0.1 else torch.randint(vocab, ())
    split = int(0.9 * len(data))
    return data[:split], data[split:]


def _batch(source: Any, block: int, rows: int) -> tuple[Any, Any]:
    """`rows` random windows of `block` tokens and the same windows one token on."""
    import torch

    ix = torch.randint(len(source) - block - 1, (rows,))
    x = torch.stack([source[i : i + block] for i in ix])
    y = torch.stack([source[i + 1 : i + 1 + block] for i in ix])
    return x, y


def nanogpt_loop() -> None:
    import time

    import torch
    from torch import nn

    torch.manual_seed(SEED)
    vocab, block, batch = 32, 16, 16
    train_data, val_data = _markov_text(vocab)
    get_batch = functools.partial(_batch, block=block, rows=batch)

    class Bigramish(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, 64)
            self.mlp = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, vocab))

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            logits = self.mlp(self.emb(x))
            return nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1))

    model = Bigramish()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    flops_per_iter = 6 * sum(p.numel() for p in model.parameters()) * batch * block
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        model.eval()
        out = {}
        for name, source in (("train", train_data), ("val", val_data)):
            out[name] = float(torch.stack([model(*get_batch(source)) for _ in range(10)]).mean())
        model.train()
        return out

    t0 = time.time()
    for iter_num in range(301):
        if iter_num % 100 == 0:
            losses = estimate_loss()
            print(
                f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}"
            )
        loss = model(*get_batch(train_data))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if iter_num % 10 == 0:
            mfu = flops_per_iter / dt / 1e12 * 100
            print(
                f"iter {iter_num}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, mfu {mfu:.2f}%"
            )


def lightning_bar() -> None:
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import TQDMProgressBar
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    L.seed_everything(SEED)

    class Regressor(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(4, 1)

        def training_step(self, batch: list[torch.Tensor], index: int) -> torch.Tensor:
            x, y = batch
            loss = nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch: list[torch.Tensor], index: int) -> None:
            x, y = batch
            self.log("val_loss", nn.functional.mse_loss(self.layer(x), y), prog_bar=True)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.05)

    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(256, 4, generator=gen)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [0.0]]) + 0.1 * torch.randn(256, 1, generator=gen)
    train = DataLoader(TensorDataset(x[:192], y[:192]), batch_size=16)
    val = DataLoader(TensorDataset(x[192:], y[192:]), batch_size=32)
    trainer = L.Trainer(
        max_epochs=3,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        log_every_n_steps=1,
        # The tqdm bar explicitly: with `rich` installed Lightning would pick its Rich bar,
        # which prints only its final state when the output is not a terminal.
        callbacks=[TQDMProgressBar()],
        default_root_dir=os.environ["STDOUT_GEN_TMP"],
    )
    trainer.fit(Regressor(), train, val)


def logging_loop(style: str) -> None:
    import logging

    import torch
    from torch import nn

    torch.manual_seed(SEED)
    if style == "epochs":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(message)s")
    else:
        logging.basicConfig(level=logging.INFO)
    log = logging.getLogger(__name__)
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(1000, 10, generator=gen)
    y = ((x[:, :3].sum(1) + 0.8 * torch.randn(1000, generator=gen)) > 0).long()
    train_x, train_y, val_x, val_y = x[:800], y[:800], x[800:], y[800:]
    config = {"hidden": 32, "learning_rate": 0.05, "batch_size": 32, "epochs": 6}
    epochs = config["epochs"] if style == "epochs" else 4
    if style == "epochs":
        log.info("Training configuration:")
        for key, value in config.items():
            log.info("  %s: %s", key, value)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["learning_rate"], momentum=0.9)
    batches = len(train_x) // 32
    for epoch in range(1, epochs + 1):
        order = torch.randperm(len(train_x), generator=gen)
        total = 0.0
        for batch in range(batches):
            index = order[batch * 32 : (batch + 1) * 32]
            loss = nn.functional.cross_entropy(model(train_x[index]), train_y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if style == "steps" and (batch + 1) % 5 == 0:
                log.info(
                    "Epoch [%d/%d], Step [%d/%d], Loss: %.4f",
                    epoch,
                    epochs,
                    batch + 1,
                    batches,
                    loss.item(),
                )
        with torch.no_grad():
            logits = model(val_x)
            val_loss = nn.functional.cross_entropy(logits, val_y).item()
            val_acc = (logits.argmax(1) == val_y).float().mean().item() * 100
        if style == "epochs":
            log.info(
                "Epoch %d/%d, Train Loss: %.4f, Val Loss: %.4f, Val Acc: %.2f%%",
                epoch,
                epochs,
                total / batches,
                val_loss,
                val_acc,
            )
        else:
            log.info("Epoch [%d] Validation Loss: %.4f", epoch, val_loss)
    log.info("Finished training")


def trl_sft() -> None:
    import torch
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(SEED)
    words = [f"w{i}" for i in range(40)]
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    gen = torch.Generator().manual_seed(SEED)
    successor = torch.randperm(len(words), generator=gen).tolist()

    def sentence() -> str:
        word = int(torch.randint(len(words), (), generator=gen))
        out = []
        for _ in range(12):
            out.append(words[word])
            noisy = torch.rand((), generator=gen) < 0.1
            word = int(torch.randint(len(words), (), generator=gen)) if noisy else successor[word]
        return " ".join(out)

    train = Dataset.from_dict({"text": [sentence() for _ in range(512)]})
    evaluation = Dataset.from_dict({"text": [sentence() for _ in range(64)]})
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    args = SFTConfig(
        output_dir=str(Path(os.environ["STDOUT_GEN_TMP"]) / "sft"),
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        learning_rate=2e-3,
        warmup_steps=5,
        max_length=32,
        dataloader_num_workers=0,
        **HF_SCHEDULE,
    )
    trainer = SFTTrainer(
        model=LlamaForCausalLM(config),
        args=args,
        train_dataset=train,
        eval_dataset=evaluation,
        processing_class=tokenizer,
    )
    trainer.train()


def build_nanogpt_loop() -> None:
    import math
    import time

    import torch
    from torch import nn

    torch.manual_seed(SEED)
    vocab, block, micro_batch, grad_accum_steps = 32, 16, 8, 2
    train_data, val_data = _markov_text(vocab)
    get_batch = functools.partial(_batch, block=block, rows=micro_batch)

    class Tiny(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, 48)
            self.mlp = nn.Sequential(nn.Linear(48, 48), nn.GELU(), nn.Linear(48, vocab))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.mlp(self.emb(x))

    def loss_of(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1))

    # HellaSwag's method on this data: four completions of a context, the true one first
    # drawn from the validation text; the pick is the lowest mean completion loss.
    items = []
    for _ in range(100):
        start = int(torch.randint(len(val_data) - 12, ()))
        context, true_end = val_data[start : start + 8], val_data[start + 8 : start + 12]
        endings = [true_end] + [torch.randint(vocab, (4,)) for _ in range(3)]
        label = int(torch.randint(4, ()))
        endings[0], endings[label] = endings[label], endings[0]
        items.append((context, endings, label))

    @torch.no_grad()
    def most_likely(context: torch.Tensor, endings: list[torch.Tensor]) -> int:
        rows = torch.stack([torch.cat([context, e]) for e in endings])
        logits = model(rows[:, :-1])
        losses = nn.functional.cross_entropy(logits.transpose(1, 2), rows[:, 1:], reduction="none")[
            :, len(context) - 1 :
        ]
        return int(losses.mean(dim=1).argmin())

    model = Tiny()
    max_lr, warmup_steps, max_steps, eval_every = 3e-3, 20, 300, 50
    min_lr = max_lr * 0.1

    def get_lr(it: int) -> float:
        if it < warmup_steps:
            return max_lr * (it + 1) / warmup_steps
        if it > max_steps:
            return min_lr
        decay_ratio = (it - warmup_steps) / (max_steps - warmup_steps)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (max_lr - min_lr)

    optimizer = torch.optim.AdamW(model.parameters(), lr=max_lr, weight_decay=0.1)
    log_dir = "log"
    os.makedirs(log_dir, exist_ok=True)
    log_file = os.path.join(log_dir, "log.txt")
    with open(log_file, "w"):
        pass
    for step in range(max_steps):
        t0 = time.time()
        last_step = step == max_steps - 1
        if step % eval_every == 0 or last_step:
            model.eval()
            with torch.no_grad():
                val_loss_accum = torch.zeros(())
                val_loss_steps = 20
                for _ in range(val_loss_steps):
                    x, y = get_batch(val_data)
                    val_loss_accum += loss_of(model(x), y) / val_loss_steps
            print(f"validation loss: {val_loss_accum.item():.4f}")
            with open(log_file, "a") as f:
                f.write(f"{step} val {val_loss_accum.item():.4f}\n")
            num_correct_norm = sum(most_likely(c, e) == label for c, e, label in items)
            num_total = len(items)
            acc_norm = num_correct_norm / num_total
            print(f"HellaSwag accuracy: {num_correct_norm}/{num_total}={acc_norm:.4f}")
            with open(log_file, "a") as f:
                f.write(f"{step} hella {acc_norm:.4f}\n")
        model.train()
        optimizer.zero_grad()
        loss_accum = torch.zeros(())
        for _ in range(grad_accum_steps):
            x, y = get_batch(train_data)
            loss = loss_of(model(x), y) / grad_accum_steps
            loss_accum += loss.detach()
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        lr = get_lr(step)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        optimizer.step()
        dt = time.time() - t0
        tokens_per_sec = micro_batch * block * grad_accum_steps / dt
        print(
            f"step {step:5d} | loss: {loss_accum.item():.6f} | lr {lr:.4e} | norm: {norm:.4f}"
            f" | dt: {dt * 1000:.2f}ms | tok/sec: {tokens_per_sec:.2f}"
        )
        with open(log_file, "a") as f:
            f.write(f"{step} train {loss_accum.item():.6f}\n")
    kept = HERE / "build_nanogpt" / "log"
    kept.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(log_file, kept / "log.txt")


def scan_preamble_loop() -> None:
    import torch
    from torch import nn

    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    items, features = 4541, 16
    centres = torch.randn(4, features, generator=gen)
    rows, labels = [], []
    for index in range(items):  # what a loader that checks every file prints while it scans
        label = int(torch.randint(4, (), generator=gen))
        rows.append(centres[label] + 1.5 * torch.randn(features, generator=gen))
        labels.append(label)
        print(f"Scan {index + 1}/{items}...")
    print(f"Scanned {items} items")
    x, y = torch.stack(rows), torch.tensor(labels)
    train_x, train_y, val_x, val_y = x[:4000], y[:4000], x[4000:], y[4000:]
    model = nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    epochs, batch_size = 5, 100
    batches = len(train_x) // batch_size
    for epoch in range(1, epochs + 1):
        order = torch.randperm(len(train_x), generator=gen)
        for batch in range(batches):
            index = order[batch * batch_size : (batch + 1) * batch_size]
            loss = nn.functional.cross_entropy(model(train_x[index]), train_y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if (batch + 1) % 10 == 0:
                where = f"Epoch {epoch}/{epochs} | Batch {batch + 1}/{batches}"
                print(f"{where} | Loss: {loss.item():.4f}")
        with torch.no_grad():
            logits = model(val_x)
            val_loss = nn.functional.cross_entropy(logits, val_y).item()
            val_acc = (logits.argmax(1) == val_y).float().mean().item() * 100
        print(f"Epoch {epoch}/{epochs} | val_loss: {val_loss:.4f} | val_acc: {val_acc:.2f}%")


CASES = {
    "hf_trainer_no_tqdm": lambda: hf_trainer(disable_tqdm=True),
    "hf_trainer_tqdm": lambda: hf_trainer(disable_tqdm=False),
    "keras_verbose2": lambda: keras_fit(2),
    "keras_verbose1": lambda: keras_fit(1),
    "nanogpt": nanogpt_loop,
    "build_nanogpt": build_nanogpt_loop,
    "lightning_bar": lightning_bar,
    "logging_epochs": lambda: logging_loop("epochs"),
    "logging_steps": lambda: logging_loop("steps"),
    "trl_sft": trl_sft,
    "scan_preamble": scan_preamble_loop,
}


def main() -> None:
    import tempfile

    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        CASES[sys.argv[2]]()
        return
    wanted = sys.argv[1:] or list(CASES)
    for case in wanted:
        with tempfile.TemporaryDirectory() as scratch:
            env = {
                **os.environ,
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "KERAS_BACKEND": "torch",
                "PYTHONHASHSEED": "0",
                "STDOUT_GEN_TMP": scratch,
                "TOKENIZERS_PARALLELISM": "false",
            }
            target = HERE / f"{case}.log"
            with target.open("wb") as log:
                subprocess.run(
                    [sys.executable, __file__, "--case", case],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=scratch,
                    check=True,
                )
            print(f"wrote {target.relative_to(HERE.parent.parent.parent)}")


if __name__ == "__main__":
    main()
