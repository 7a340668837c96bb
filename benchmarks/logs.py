"""Realistic synthetic training logs for the benchmarks, in every format, cached on disk.

One curve set per size (seeded): a decaying noisy loss with autocorrelated noise and one
short spike, a warmup + cosine learning rate, a noisy grad_norm, a step time with jitter,
the epoch, and an eval loss every `EVAL_EVERY` steps. The same curves are written as

- `csv`: a generic CSV (`step,epoch,loss,lr,grad_norm,step_time,eval_loss`, eval cells
  empty between evaluations);
- `jsonl`: one object per training step plus one per evaluation;
- `hf`: a `trainer_state.json` as `transformers.Trainer` writes it (indent 2, sorted keys);
- `tensorboard`: an event file written by tensorboardX's `SummaryWriter` (PyTorch-style
  `simple_value` scalars: loss, lr, grad_norm every step, eval_loss every `EVAL_EVERY`);
- `tensorboard-merged`: the same scalars as TF1 merged summaries, one event per step
  holding all three values (tensorboardX's `FileWriter.add_summary` of a merged `Summary`);
- `tensorboard-tf2`: the same scalars as TF2's `tf.summary.scalar` writes them (one event
  per value, a rank-0 float tensor in `tensor_content` with the scalars plugin's metadata on
  every event), built with TensorBoard's protobufs and written by its `EventFileWriter`
  (TensorFlow itself is not installed here).

Generated files are cached under `$TRAINSPOTTER_BENCH_CACHE` (default
`$TMPDIR/trainspotter-bench-cache`): a million TensorBoard events take a few minutes to
write. This is benchmark input only, never a test fixture.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

FORMATS = ("csv", "jsonl", "hf", "tensorboard")
TB_LAYOUTS = ("tensorboard", "tensorboard-merged", "tensorboard-tf2")
EVAL_EVERY = 500
CSV_HEADER = "step,epoch,loss,lr,grad_norm,step_time,eval_loss\n"
FloatArray = npt.NDArray[np.float64]


def cache_dir() -> Path:
    """The folder generated logs are kept in between benchmark runs."""
    default = Path(tempfile.gettempdir()) / "trainspotter-bench-cache"
    folder = Path(os.environ.get("TRAINSPOTTER_BENCH_CACHE", default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def curves(steps: int, seed: int = 0, start: int = 1, spike: bool = True) -> dict[str, FloatArray]:
    """The metric arrays for steps `start .. start+steps-1` (deterministic per seed);
    `spike` plants a short loss spike at 60% of them."""
    rng = np.random.default_rng(seed)
    s = np.arange(start, start + steps, dtype=np.float64)
    total = float(max(start + steps - 1, 1))
    noise = rng.normal(0.0, 0.04, steps)
    # AR(1)-ish autocorrelation without a Python loop: a short moving average of the noise.
    kernel = np.array([0.5, 0.3, 0.2])
    smooth = np.convolve(noise, kernel, mode="same")
    loss = (0.4 + 2.4 * np.exp(-s / (total / 6))) * np.exp(smooth)
    if spike:
        spike_at = int(steps * 0.6)
        loss[spike_at : spike_at + max(3, steps // 20000)] *= 3.0
    warmup = max(10.0, total / 100)
    lr = np.where(
        s < warmup,
        3e-4 * s / warmup,
        3e-4 * 0.5 * (1 + np.cos(math.pi * np.clip((s - warmup) / (total - warmup), 0, 1))),
    )
    grad_norm = np.abs(1.0 + 0.3 * rng.standard_normal(steps)) * (1 + loss / 3)
    step_time = 0.25 + 0.01 * np.abs(rng.standard_normal(steps))
    epoch = s / 5000.0
    eval_mask = s % EVAL_EVERY == 0
    eval_loss = np.where(eval_mask, loss + 0.1, np.nan)
    return {
        "step": s,
        "epoch": epoch,
        "loss": loss,
        "lr": lr,
        "grad_norm": grad_norm,
        "step_time": step_time,
        "eval_loss": eval_loss,
    }


def csv_rows(c: dict[str, FloatArray]) -> str:
    """The CSV body (no header) for the curves `c`."""
    import pandas as pd

    frame = pd.DataFrame({k: c[k] for k in CSV_HEADER.strip().split(",")})
    frame["step"] = frame["step"].astype(np.int64)
    return str(frame.to_csv(index=False, header=False, float_format="%.6g", na_rep=""))


def jsonl_rows(c: dict[str, FloatArray]) -> str:
    """The JSONL body for the curves `c`: a training line per step, an eval line after."""
    lines: list[str] = []
    keys = ("epoch", "loss", "lr", "grad_norm", "step_time")
    columns = [np.round(c[k], 6).tolist() for k in keys]
    steps = c["step"].astype(np.int64).tolist()
    evals = c["eval_loss"].tolist()
    for i, step in enumerate(steps):
        record = {"step": step, **{k: col[i] for k, col in zip(keys, columns, strict=True)}}
        lines.append(json.dumps(record))
        if not math.isnan(evals[i]):
            lines.append(json.dumps({"step": step, "eval_loss": round(evals[i], 6)}))
    return "\n".join(lines) + "\n"


def hf_state(c: dict[str, FloatArray]) -> str:
    """A trainer_state.json for the curves `c` (indent 2, sorted keys, like the Trainer)."""
    history: list[dict[str, float | int]] = []
    epochs = np.round(c["epoch"], 4).tolist()
    steps = c["step"].astype(np.int64).tolist()
    loss, lr, grad = c["loss"].tolist(), c["lr"].tolist(), c["grad_norm"].tolist()
    evals = c["eval_loss"].tolist()
    for i, step in enumerate(steps):
        history.append(
            {
                "epoch": epochs[i],
                "grad_norm": grad[i],
                "learning_rate": lr[i],
                "loss": round(loss[i], 4),
                "step": step,
            }
        )
        if not math.isnan(evals[i]):
            history.append(
                {
                    "epoch": epochs[i],
                    "eval_loss": evals[i],
                    "eval_runtime": 1.5,
                    "eval_samples_per_second": 660.0,
                    "eval_steps_per_second": 41.3,
                    "step": step,
                }
            )
    state = {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": epochs[-1],
        "eval_steps": EVAL_EVERY,
        "global_step": steps[-1],
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": history,
        "logging_steps": 1,
        "max_steps": steps[-1],
        "num_train_epochs": math.ceil(epochs[-1]),
        "save_steps": 500,
        "total_flos": 0.0,
        "train_batch_size": 32,
    }
    return json.dumps(state, indent=2, sort_keys=True) + "\n"


def write_tensorboard(folder: Path, c: dict[str, FloatArray]) -> Path:
    """An event file written by tensorboardX (simple_value scalars); returns its path."""
    from tensorboardX import SummaryWriter

    folder.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(str(folder), flush_secs=3600, max_queue=100_000)
    steps = c["step"].astype(np.int64).tolist()
    loss, lr, grad = c["loss"].tolist(), c["lr"].tolist(), c["grad_norm"].tolist()
    evals = c["eval_loss"].tolist()
    base = 1.7e9
    for i, step in enumerate(steps):
        wall = base + i * 0.25
        writer.add_scalar("train/loss", loss[i], step, walltime=wall)
        writer.add_scalar("train/lr", lr[i], step, walltime=wall)
        writer.add_scalar("train/grad_norm", grad[i], step, walltime=wall)
        if not math.isnan(evals[i]):
            writer.add_scalar("eval/loss", evals[i], step, walltime=wall)
    writer.close()
    (found,) = folder.glob("events.out.tfevents*")
    return found


def write_tensorboard_layout(folder: Path, c: dict[str, FloatArray], layout: str) -> Path:
    """An event file with the curves `c` in `layout` (module docstring); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    steps = c["step"].astype(np.int64).tolist()
    series = [
        ("train/loss", c["loss"].tolist()),
        ("train/lr", c["lr"].tolist()),
        ("train/grad_norm", c["grad_norm"].tolist()),
    ]
    evals = c["eval_loss"].tolist()
    base = 1.7e9
    if layout == "tensorboard-merged":
        from tensorboardX import SummaryWriter
        from tensorboardX.proto.summary_pb2 import Summary

        writer = SummaryWriter(str(folder), flush_secs=3600, max_queue=100_000)
        for i, step in enumerate(steps):
            merged = Summary(
                value=[Summary.Value(tag=tag, simple_value=values[i]) for tag, values in series]
            )
            writer.file_writer.add_summary(merged, step, walltime=base + i * 0.25)
            if not math.isnan(evals[i]):
                writer.add_scalar("eval/loss", evals[i], step, walltime=base + i * 0.25)
        writer.close()
    else:
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
        from tensorboard.plugins.scalar import metadata as scalar_metadata
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        # What TF's summary writer emits for tf.summary.scalar: AsProtoTensorContent
        # (dtype, an empty shape, 4 bytes of content) and the plugin's metadata each time.
        plugin = scalar_metadata.create_summary_metadata(display_name=None, description="")
        writer = EventFileWriter(str(folder), max_queue_size=100_000, flush_secs=3600)

        def emit(tag: str, value: float, step: int, wall: float) -> None:
            tensor = tensor_pb2.TensorProto(dtype=1, tensor_content=np.float32(value).tobytes())
            tensor.tensor_shape.SetInParent()
            event = event_pb2.Event(wall_time=wall, step=step)
            event.summary.value.add(tag=tag, tensor=tensor, metadata=plugin)
            writer.add_event(event)

        for i, step in enumerate(steps):
            for tag, values in series:
                emit(tag, values[i], step, base + i * 0.25)
            if not math.isnan(evals[i]):
                emit("eval/loss", evals[i], step, base + i * 0.25)
        writer.close()
        del summary_pb2
    (found,) = folder.glob("events.out.tfevents*")
    return found


def log_path(fmt: str, steps: int) -> Path:
    """The cached log of `steps` steps in format `fmt`, generated on first use."""
    folder = cache_dir() / f"{fmt}-{steps}"
    if fmt in TB_LAYOUTS:
        existing = sorted(folder.glob("events.out.tfevents*")) if folder.is_dir() else []
        if existing and (folder / "complete").exists():
            return existing[0]
        for stale in existing:
            stale.unlink()
        if fmt == "tensorboard":
            path = write_tensorboard(folder, curves(steps))
        else:
            path = write_tensorboard_layout(folder, curves(steps), fmt)
        (folder / "complete").touch()
        return path
    names = {"csv": "log.csv", "jsonl": "log.jsonl", "hf": "trainer_state.json"}
    path = folder / names[fmt]
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    c = curves(steps)
    if fmt == "csv":
        text = CSV_HEADER + csv_rows(c)
    elif fmt == "jsonl":
        text = jsonl_rows(c)
    else:
        text = hf_state(c)
    partial = path.with_suffix(".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
    return path
