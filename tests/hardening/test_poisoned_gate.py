"""Issue 11's acceptance run: a gate over a folder holding one poisoned log per defect
family of ADVERSARIAL.md plus one healthy and one divergent real run exits 2 (some logs
could not be checked), writes every report, lists each poisoned log (analysed, skipped or
not checked, with why) and still reports the healthy run as healthy and the divergent
one as failed. Run as nobody (the locked log must be locked) with a timeout (the FIFO and
the symlink loop must not stall it)."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from hardening_support import TIMEOUT, run_cli, shared_folder
from workspace_support import EXAMPLES, need_examples

from trainspotter.readers._files import MAX_LINE_BYTES
from trainspotter.readers._tfrecord import masked_crc32c

OUTPUTS = "summary,comment,json,html,sarif,codequality,junit"
FILES = [
    "summary.md",
    "comment.md",
    "trainspotter.json",
    "html/index.html",
    "trainspotter.sarif",
    "gl-code-quality-report.json",
    "junit.xml",
]


def _csv(header: str, values: list[str]) -> str:
    return header + "\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values, start=1))


def _record(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    crc = struct.pack("<I", masked_crc32c(length))
    return length + crc + payload + struct.pack("<I", masked_crc32c(payload))


def _crafted_tensorboard(folder: Path) -> None:
    """D3: a DT_BFLOAT16 rank-0 tensor whose half_val does not fit 16 bits, between real
    scalar events (protos from the tensorboard package)."""
    event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
    tensor_pb2 = pytest.importorskip("tensorboard.compat.proto.tensor_pb2")
    payloads = []
    for step in range(1, 30):
        event = event_pb2.Event(wall_time=1.7e9 + step, step=step)
        event.summary.value.add(tag="loss", simple_value=2.0 / step)
        payloads.append(event.SerializeToString())
    event = event_pb2.Event(wall_time=1.7e9 + 40, step=40)
    value = event.summary.value.add(tag="crafted")
    value.tensor.CopyFrom(tensor_pb2.TensorProto(dtype=14, half_val=[2**20]))
    value.metadata.plugin_data.plugin_name = "scalars"
    payloads.append(event.SerializeToString())
    folder.mkdir()
    (folder / "events.out.tfevents.1.host").write_bytes(b"".join(map(_record, payloads)))


def _poison(logs: Path) -> dict[str, str]:
    """Write one poisoned log per defect family; returns name -> the family."""
    falling = [f"{2.0 / (1 + 0.05 * i):.5f}" for i in range(40)]
    (logs / "d01_extreme.csv").write_text(
        _csv("step,loss", [*falling, "1e308", "5e-324", "1.7976931348623157e308"])
    )
    (logs / "d02_huge_step.csv").write_text("step,loss\n1,1.0\n2,0.9\n1" + "0" * 400 + ",0.8\n")
    _crafted_tensorboard(logs / "d03_tensorboard")
    (logs / "d04_surrogate.jsonl").write_text(
        "".join(f'{{"step": {i}, "\\ud800": 1.0, "loss": {2.0 / i}}}\n' for i in range(1, 30))
    )
    (logs / "d05_long_line.jsonl").write_text(
        '{"step": 1, "loss": 1.0}\n{"step": 2, "' + "k" * (MAX_LINE_BYTES + 10) + '": 1}\n'
    )
    (logs / "d10_injection.csv").write_text(_csv('step,"a\n::warning::injected_loss"', falling))
    (logs / "d11_run_www.evil.example_\u202egnp.csv").write_text(
        _csv("step,GH-1 @someone run_www.evil.example_loss", falling)
    )
    (logs / "d12_locked.csv").write_text(_csv("step,loss", falling))
    (logs / "d12_locked.csv").chmod(0)
    os.mkfifo(logs / "d13_fifo.csv")
    (logs / "d14_loop_a").symlink_to(".", target_is_directory=True)
    (logs / "d14_loop_b").symlink_to(".", target_is_directory=True)
    return {
        "d01_extreme.csv": "D1",
        "d02_huge_step.csv": "D2",
        "d03_tensorboard": "D3",
        "d04_surrogate.jsonl": "D4",
        "d05_long_line.jsonl": "D5",
        "d10_injection.csv": "D10",
        "d11_run_www.evil.example": "D11",
        "d12_locked.csv": "D12",
        "d13_fifo.csv": "D13",
    }


def test_gate_over_a_poisoned_folder() -> None:
    need_examples("healthy", "divergence")
    with shared_folder() as folder:
        logs = folder / "logs"
        for name in ("healthy", "divergence"):
            (logs / name).mkdir(parents=True)
            shutil.copy(EXAMPLES / name / "trainer_state.json", logs / name)
        for path in [logs, *logs.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        families = _poison(logs)
        result = run_cli(
            ["gate", "logs/**", "--report-dir", "out", "--outputs", OUTPUTS],
            folder,
            unprivileged=True,
            timeout=TIMEOUT * 3,
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert "internal error" not in result.stdout + result.stderr
        out = folder / "out"
        for name in FILES:
            assert (out / name).is_file(), name
        summary = (out / "summary.md").read_text()
        for name, family in families.items():  # analysed, skipped or not checked: named
            assert f"logs/{name[:3]}" in summary, family  # (the rest is Markdown-escaped)
        assert "Permission denied" in summary  # D12, with why
        report = json.loads((out / "trainspotter.json").read_text())
        by_path = {log["run"]["source_path"]: log for log in report["logs"]}
        healthy = by_path["logs/healthy/trainer_state.json"]
        assert healthy["summary"]["max_severity"] in (None, "info")
        divergent = by_path["logs/divergence/trainer_state.json"]
        assert divergent["summary"]["max_severity"] == "error"
        assert any(
            f["detector"] == "divergence" and f["severity"] == "error"
            for f in divergent["findings"]
        )
        # D10: the hostile column never starts a workflow command line on its own
        assert not any(line.startswith("::warning::injected") for line in result.stderr.split("\n"))
