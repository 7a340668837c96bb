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
  holding all three values (as tensorboardX's `FileWriter.add_summary` of a merged
  `Summary` writes them);
- `tensorboard-tf2`: the same scalars as TF2's `tf.summary.scalar` writes them (one event
  per value, a rank-0 float tensor in `tensor_content` with the scalars plugin's metadata on
  every event), built with TensorBoard's protobufs (TensorFlow is not installed here).
- `stdout`: the output nanoGPT's `train.py` prints, one `iter N: loss X, time Yms, mfu
  Z%` line per step and a `step N: train loss X, val loss Y` line per evaluation (the
  line formats of tests/data/stdout/nanogpt.log, which a real run printed).

The TensorBoard layouts are framed in bulk rather than by the writers (whose pure-Python CRCs take
~10 minutes here); `check_tensorboard_layout` asserts the bytes equal the writers' output.

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
MORE_FORMATS = ("tensorboard-merged", "tensorboard-tf2", "stdout")
"""Formats measured by `analyze` only (no watch case)."""
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


def printed_lines(c: dict[str, FloatArray]) -> str:
    """nanoGPT's printed progress for the curves `c` (see the module docstring)."""
    lines: list[str] = []
    steps = c["step"].astype(np.int64).tolist()
    loss, times, evals = c["loss"].tolist(), (c["step_time"] * 1000).tolist(), c["eval_loss"]
    for i, step in enumerate(steps):
        if not math.isnan(evals[i]):
            lines.append(f"step {step}: train loss {loss[i]:.4f}, val loss {evals[i]:.4f}")
        lines.append(f"iter {step}: loss {loss[i]:.4f}, time {times[i]:.2f}ms, mfu 3.21%")
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


def _masked_crc32c_rows(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    """TFRecord's masked CRC32C of each row of equal-length byte rows, byte by byte for all
    rows at once (the writers compute it in pure Python, one record at a time)."""
    from trainspotter.readers._tfrecord import _CRC32C_TABLE

    table = np.array(_CRC32C_TABLE, dtype=np.uint32)
    crc = np.full(rows.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for column in range(rows.shape[1]):
        crc = table[(crc ^ rows[:, column]) & 0xFF] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    with np.errstate(over="ignore"):
        masked: npt.NDArray[np.uint32] = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + (
            np.uint32(0xA282EAD8)
        )
    return masked


def tfrecords(payloads: list[bytes]) -> bytes:
    """The TFRecord framing the writers put around each payload (length, masked CRC32C of
    the length, payload, masked CRC32C of the payload), byte for byte, computed in bulk."""
    sizes = np.array([len(p) for p in payloads], dtype=np.int64)
    heads: list[bytes] = [b""] * len(payloads)
    tails: list[bytes] = [b""] * len(payloads)
    for size in np.unique(sizes).tolist():
        which = np.flatnonzero(sizes == size)
        body = np.frombuffer(b"".join(payloads[i] for i in which), dtype=np.uint8)
        body_crc = _masked_crc32c_rows(body.reshape(len(which), size))
        length = np.frombuffer(int(size).to_bytes(8, "little"), dtype=np.uint8)
        length_crc = _masked_crc32c_rows(length.reshape(1, 8))[0]
        head = length.tobytes() + length_crc.astype("<u4").tobytes()
        for row, crc in zip(which.tolist(), body_crc.astype("<u4").tolist(), strict=True):
            heads[row] = head
            tails[row] = int(crc).to_bytes(4, "little")
    return b"".join(h + p + t for h, p, t in zip(heads, payloads, tails, strict=True))


def tensorboard_layout_events(c: dict[str, FloatArray], layout: str) -> list[bytes]:
    """The serialized events of `layout` (module docstring) for the curves `c`, the file
    version event first, exactly as the writers serialize them."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
    from tensorboard.plugins.scalar import metadata as scalar_metadata

    steps = c["step"].astype(np.int64).tolist()
    series = [
        ("train/loss", c["loss"].tolist()),
        ("train/lr", c["lr"].tolist()),
        ("train/grad_norm", c["grad_norm"].tolist()),
    ]
    evals = c["eval_loss"].tolist()
    base = 1.7e9
    out = [event_pb2.Event(wall_time=base, file_version="brain.Event:2").SerializeToString()]
    # What TF's summary writer emits for tf.summary.scalar: AsProtoTensorContent (dtype, an
    # empty shape, 4 bytes of content) and the plugin's metadata on every event.
    plugin = scalar_metadata.create_summary_metadata(display_name=None, description="")

    def value(tag: str, number: float) -> summary_pb2.Summary.Value:
        if layout == "tensorboard-merged":
            return summary_pb2.Summary.Value(tag=tag, simple_value=number)
        tensor = tensor_pb2.TensorProto(dtype=1, tensor_content=np.float32(number).tobytes())
        tensor.tensor_shape.SetInParent()
        return summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=plugin)

    def event(step: int, wall: float, values: list[summary_pb2.Summary.Value]) -> bytes:
        made = event_pb2.Event(wall_time=wall, step=step)
        made.summary.value.extend(values)
        return bytes(made.SerializeToString())

    for i, step in enumerate(steps):
        wall = base + i * 0.25
        values = [value(tag, numbers[i]) for tag, numbers in series]
        if layout == "tensorboard-merged":
            out.append(event(step, wall, values))
        else:
            out.extend(event(step, wall, [v]) for v in values)
        if not math.isnan(evals[i]):
            out.append(event(step, wall, [value("eval/loss", evals[i])]))
    return out


def write_tensorboard_layout(folder: Path, c: dict[str, FloatArray], layout: str) -> Path:
    """An event file with the curves `c` in `layout` (module docstring); returns its path.
    The writers (tensorboardX's FileWriter, TensorBoard's EventFileWriter) compute the
    record CRCs in pure Python, ~10 minutes for these files: the same bytes are framed
    here in bulk (`check_tensorboard_layout` compares them with the writers' output)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.out.tfevents.1700000000.bench"
    path.write_bytes(tfrecords(tensorboard_layout_events(c, layout)))
    return path


def check_tensorboard_layout(layout: str, steps: int = 300) -> None:
    """Assert that `write_tensorboard_layout` writes what the real writer writes (every
    record after the file-version event, whose wall time is the writer's clock)."""
    import tempfile as tmp

    c = curves(steps)
    events = tensorboard_layout_events(c, layout)
    with tmp.TemporaryDirectory() as folder:
        if layout == "tensorboard-merged":
            from tensorboardX import SummaryWriter
            from tensorboardX.proto.summary_pb2 import Summary

            writer = SummaryWriter(folder)
            for payload in events[1:]:
                parsed = Summary.FromString(_summary_bytes(payload))
                wall, step = _wall_and_step(payload)
                writer.file_writer.add_summary(parsed, step, walltime=wall)
            writer.close()
        else:
            from tensorboard.compat.proto import event_pb2
            from tensorboard.summary.writer.event_file_writer import EventFileWriter

            writer = EventFileWriter(folder)
            for payload in events[1:]:
                writer.add_event(event_pb2.Event.FromString(payload))
            writer.close()
        (written,) = Path(folder).glob("events.out.tfevents*")
        data = written.read_bytes()
    first = 16 + int.from_bytes(data[:8], "little")
    assert data[first:] == tfrecords(events[1:]), layout


def _summary_bytes(payload: bytes) -> bytes:
    from tensorboard.compat.proto import event_pb2

    return bytes(event_pb2.Event.FromString(payload).summary.SerializeToString())


def _wall_and_step(payload: bytes) -> tuple[float, int]:
    from tensorboard.compat.proto import event_pb2

    event = event_pb2.Event.FromString(payload)
    return float(event.wall_time), int(event.step)


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
    names["stdout"] = "train.log"
    path = folder / names[fmt]
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    c = curves(steps)
    if fmt == "csv":
        text = CSV_HEADER + csv_rows(c)
    elif fmt == "jsonl":
        text = jsonl_rows(c)
    elif fmt == "stdout":
        text = printed_lines(c)
    else:
        text = hf_state(c)
    partial = path.with_suffix(".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
    return path
