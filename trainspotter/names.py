"""Canonical metric names and the spellings real tools write for them.

Detectors look metrics up by canonical name only (`train/loss`, `eval/loss`, `lr`,
`grad_norm`, `step_time`, `throughput`, `epoch`), so a reader never has to know a detector.
Names that match no rule pass through unchanged (`eval/bleu` stays `eval/bleu`), so custom
metrics still reach the detectors that look at every loss-like or eval metric.

This module does not read files; readers call `normalize` on each column or tag name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

TRAIN_LOSS = "train/loss"
EVAL_LOSS = "eval/loss"
LR = "lr"
GRAD_NORM = "grad_norm"
STEP_TIME = "step_time"
THROUGHPUT = "throughput"
EPOCH = "epoch"

CANONICAL = (TRAIN_LOSS, EVAL_LOSS, LR, GRAD_NORM, STEP_TIME, THROUGHPUT, EPOCH)

# Exact spellings (compared after lower-casing), one table so a new spelling is one line.
_EXACT: dict[str, str] = {
    # train loss
    "loss": TRAIN_LOSS,
    "train_loss": TRAIN_LOSS,
    "training_loss": TRAIN_LOSS,
    "train_loss_step": TRAIN_LOSS,
    "train/loss": TRAIN_LOSS,
    "train/loss_step": TRAIN_LOSS,
    "train/loss_iter": TRAIN_LOSS,
    "loss/train": TRAIN_LOSS,
    "trainloss": TRAIN_LOSS,
    "training/loss": TRAIN_LOSS,
    # eval loss
    "eval_loss": EVAL_LOSS,
    "eval/loss": EVAL_LOSS,
    "val_loss": EVAL_LOSS,
    "val/loss": EVAL_LOSS,
    "valid_loss": EVAL_LOSS,
    "valid/loss": EVAL_LOSS,
    "validation_loss": EVAL_LOSS,
    "validation/loss": EVAL_LOSS,
    "loss/val": EVAL_LOSS,
    "loss/eval": EVAL_LOSS,
    "loss/valid": EVAL_LOSS,
    "loss/validation": EVAL_LOSS,
    "test_loss": EVAL_LOSS,
    "val_loss_epoch": EVAL_LOSS,
    "valloss": EVAL_LOSS,
    # learning rate
    "lr": LR,
    "learning_rate": LR,
    "learningrate": LR,
    "train/lr": LR,
    "train/learning_rate": LR,
    "optimizer/lr": LR,
    "lr/train": LR,
    # gradient norm
    "grad_norm": GRAD_NORM,
    "gradient_norm": GRAD_NORM,
    "train/grad_norm": GRAD_NORM,
    "total_norm": GRAD_NORM,
    "grad-norm": GRAD_NORM,
    "gradnorm": GRAD_NORM,
    "train/gradient_norm": GRAD_NORM,
    "grad_norm/total": GRAD_NORM,
    # time per step
    "step_time": STEP_TIME,
    "time/step": STEP_TIME,
    "train/step_time": STEP_TIME,
    "time_per_step": STEP_TIME,
    "iter_time": STEP_TIME,
    "batch_time": STEP_TIME,
    # throughput
    "throughput": THROUGHPUT,
    "train_samples_per_second": THROUGHPUT,
    "samples_per_second": THROUGHPUT,
    "samples/sec": THROUGHPUT,
    "tokens_per_second": THROUGHPUT,
    "tokens/sec": THROUGHPUT,
    "train/throughput": THROUGHPUT,
    "train/samples_per_second": THROUGHPUT,
    "train/tokens_per_second": THROUGHPUT,
    # epoch
    "epoch": EPOCH,
    "train/epoch": EPOCH,
}

# Lightning's LearningRateMonitor writes `lr-<Optimizer>` and `lr-<Optimizer>/pg<N>`.
_LIGHTNING_LR = re.compile(r"^lr-[a-z0-9_]+(?:/pg\d+)?$")


def normalize(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """Map one metric name to its canonical name, or return it unchanged.

    User `aliases` (from `.trainspotter.yml`'s `metrics.aliases`) are matched first and
    exactly, so a user can override any built-in rule.
    """
    if aliases and name in aliases:
        return aliases[name]
    stripped = name.strip()
    key = stripped.lower()
    if key in _EXACT:
        return _EXACT[key]
    if _LIGHTNING_LR.match(key):
        return LR
    return stripped


def is_loss_like(name: str) -> bool:
    """True for the canonical losses and for any other metric whose name says loss.

    `loss_scale` (fp16 loss scalers, DeepSpeed) says loss but is a multiplier, not a loss.
    """
    lowered = name.lower()
    if name in (TRAIN_LOSS, EVAL_LOSS):
        return True
    return "loss" in lowered and "scale" not in lowered


def is_eval(name: str) -> bool:
    """True for evaluation/validation metrics (canonical `eval/*` or val/valid/test prefixes)."""
    lowered = name.lower()
    return lowered.startswith(("eval/", "eval_", "val/", "val_", "valid", "validation", "test"))
