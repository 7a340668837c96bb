"""Fixes in the words of the log's framework.

A fix that names the wrong knob is a message that is wrong about the user's setup: "enable
gradient clipping" is bad advice for a transformers Trainer run, where clipping is on by
default (`max_grad_norm=1.0`), and a Lightning user looks for a Trainer argument, not a
call to `clip_grad_norm_`. Detectors phrase their clipping and warmup fixes through this
module. The framework is judged only from what the reader recorded: the log's format
(`trainer_state.json` is transformers, `metrics.csv` from a Lightning folder is Lightning)
and, for a plain CSV, a step column named `epoch` (Keras's CSVLogger writes that) with no
`/` in a column name (Keras writes none; YOLO's `results.csv` has `train/box_loss`). A run
whose meta names its framework (`meta["framework"]`) is taken at its word: a live
`Monitor(framework=...)` sets it, since a training loop knows what it is, and so does the
TensorBoard reader when the event files carry their logger's marks (`readers/_event_writer.py`:
transformers' `args` summary, Lightning's `hparams.yaml`, Keras's callback layout written
by TensorFlow). Any other log (a plain CSV or JSONL, a W&B export, printed output, an event
file with no logger's marks) names no framework: PyTorch and TensorFlow loops write all of
these alike, so its fix gives the PyTorch call and the Keras/TensorFlow argument side by
side rather than guess one and be wrong about the user's code.
"""

from __future__ import annotations

from typing import Literal, get_args

from trainspotter import names
from trainspotter.model import Run

Framework = Literal["transformers", "lightning", "keras", "pytorch"]
FRAMEWORKS: tuple[Framework, ...] = get_args(Framework)


def framework(run: Run) -> Framework | None:
    """The framework the run declares or its log's format points to; None when neither
    says."""
    declared = run.meta.get("framework")
    if declared in FRAMEWORKS:
        return declared  # type: ignore[no-any-return]
    if run.source_format == "hf":
        return "transformers"
    if run.source_format == "lightning":
        return "lightning"
    if run.source_format == "csv" and run.meta.get("step_column") == "epoch":
        # Keras names its columns `loss`, `val_accuracy`, `<output>_loss`: never with a
        # `/`. A namespaced column (YOLO's `train/box_loss`) is another loop's CSV.
        namespaced = any("/" in m for m in run.metrics if m not in names.CANONICAL)
        return None if namespaced else "keras"
    return None


def clipping_fix(run: Run) -> str:
    """Turn gradient clipping on (or tighten it), said the framework's way."""
    return {
        "transformers": "Check gradient clipping: TrainingArguments(max_grad_norm=1.0) is the "
        "default, 0 or None turns it off; lower it if it is already on",
        "lightning": "Enable gradient clipping: Trainer(gradient_clip_val=1.0), or lower it if "
        "it is already on",
        "keras": "Enable gradient clipping: the optimizer's clipnorm=1.0, or lower it if it is "
        "already on",
        "pytorch": "Enable gradient clipping: torch.nn.utils.clip_grad_norm_(model.parameters(), "
        "max_norm=1.0) before optimizer.step(), or lower it if it is already on",
        None: "Enable gradient clipping at a max norm of about 1.0 (PyTorch: torch.nn.utils."
        "clip_grad_norm_(model.parameters(), max_norm=1.0) before optimizer.step(); Keras or "
        "TensorFlow: the optimizer's clipnorm=1.0), or lower it if it is already on",
    }[framework(run)]


def warmup_fix(run: Run) -> str:
    """Add a linear warmup over the first 1-5% of steps, said the framework's way."""
    return (
        "Add a linear warmup over the first 1-5% of steps "
        + {
            "transformers": "(TrainingArguments: warmup_ratio=0.03 or warmup_steps=...)",
            "lightning": "(in configure_optimizers: a LinearLR warmup chained before the main "
            "scheduler with SequentialLR, stepped every batch)",
            "keras": "(a LearningRateSchedule that ramps up, or keras.optimizers.schedules."
            "CosineDecay(warmup_target=..., warmup_steps=...))",
            "pytorch": "(torch.optim.lr_scheduler.LinearLR(start_factor=0.01, total_iters=...) "
            "chained before the main scheduler with SequentialLR)",
            None: "(PyTorch: torch.optim.lr_scheduler.LinearLR(start_factor=0.01, "
            "total_iters=...) chained before the main scheduler with SequentialLR; Keras or "
            "TensorFlow: keras.optimizers.schedules.CosineDecay(warmup_target=..., "
            "warmup_steps=...))",
        }[framework(run)]
    )


__all__ = ["FRAMEWORKS", "Framework", "clipping_fix", "framework", "warmup_fix"]
