"""Write one metric's (step, value) points in every format trainspotter reads, each laid
out as its own library writes it (TensorBoard files by tensorboardX's SummaryWriter, the
rest in the exact text layout of HF Trainer, Lightning CSVLogger, MLflow's file store,
W&B's CSV export and printed Trainer output), with the values and the metric name left
as hostile as the format can carry: the adversarial tests' inputs."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

Value = float | int
Points = Sequence[tuple[int, Value]]


def _number(value: Value) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def _csv_text(header: list[str], rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _encodable(name: str) -> str:
    """A name a file system (or a protobuf string) can hold: no lone surrogate."""
    return name.encode("utf-8", "replace").decode("utf-8")


def write_csv(folder: Path, name: str, points: Points) -> Path:
    path = folder / "log.csv"
    rows = [[str(s), _number(v)] for s, v in points]
    path.write_text(_csv_text(["step", name], rows), encoding="utf-8", errors="surrogatepass")
    return path


def write_lightning(folder: Path, name: str, points: Points) -> Path:
    path = folder / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    rows = [["0", str(s), _number(v)] for s, v in points]
    text = _csv_text(["epoch", "step", name], rows)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def write_wandb(folder: Path, name: str, points: Points) -> Path:
    path = folder / "wandb_export.csv"
    header = ["Step", f"run-1 - {name}", f"run-1 - {name}__MIN", f"run-1 - {name}__MAX"]
    rows = [[str(s), _number(v), _number(v), _number(v)] for s, v in points]
    path.write_text(_csv_text(header, rows), encoding="utf-8", errors="surrogatepass")
    return path


def write_jsonl(folder: Path, name: str, points: Points) -> Path:
    path = folder / "log.jsonl"
    lines = [json.dumps({"step": s, name: v}) + "\n" for s, v in points]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_hf(folder: Path, name: str, points: Points) -> Path:
    path = folder / "trainer_state.json"
    history = [{"step": s, "epoch": 0.0, name: v} for s, v in points]
    state = {"log_history": history, "global_step": max((s for s, _ in points), default=0)}
    path.write_text(json.dumps(state), encoding="utf-8")
    return path


def write_stdout(folder: Path, name: str, points: Points) -> Path:
    """The Trainer's printed dicts (`{'loss': '3.254', 'grad_norm': '0.9359', 'epoch':
    '0.1562'}`: values as strings, as transformers prints them), the value logged both as
    the loss and under the hostile name."""
    path = folder / "train.log"
    lines = [
        f"{{'loss': '{_number(v)}', {name!r}: '{_number(v)}', 'epoch': '{s}e-2'}}\n"
        for s, v in points
    ]
    path.write_text("".join(lines), encoding="utf-8", errors="surrogatepass")
    return path


def write_mlflow(folder: Path, name: str, points: Points) -> Path:
    """A run folder of MLflow's file store: `metrics/<name>` of `<ms> <value> <step>`."""
    run = folder / "mlruns" / "0" / "0123456789abcdef0123456789abcdef"
    file_name = re.sub(r"[/\x00]", "_", _encodable(name)).strip(".") or "metric"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: 0123456789abcdef0123456789abcdef\n")
    lines = [f"{1_700_000_000_000 + i} {_number(v)} {s}\n" for i, (s, v) in enumerate(points)]
    (run / "metrics" / file_name[:200]).write_text("".join(lines), encoding="utf-8")
    return run


def write_tensorboard(folder: Path, name: str, points: Points) -> Path:
    """Written by tensorboardX (float32 scalars: huge values become inf, as in TB)."""
    from tensorboardX import SummaryWriter

    with SummaryWriter(str(folder / "tb")) as writer:
        for step, value in points:
            clamped = max(-(2**63), min(2**63 - 1, step))
            try:
                number = float(value)
            except OverflowError:  # an integer beyond the float range
                number = float("inf") if value > 0 else float("-inf")
            writer.add_scalar(_encodable(name) or "metric", number, clamped)
    return folder / "tb"


WRITERS: dict[str, Callable[[Path, str, Points], Path]] = {
    "csv": write_csv,
    "lightning": write_lightning,
    "wandb": write_wandb,
    "jsonl": write_jsonl,
    "hf": write_hf,
    "stdout": write_stdout,
    "mlflow": write_mlflow,
    "tensorboard": write_tensorboard,
}
"""Reader id -> writer of a log in that format."""
