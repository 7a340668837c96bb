"""Capture printed training logs truncated while their writer kept writing, for the stdout
reader's NUL-hole tests (`readers/_holes.py`).

A seeded torch loop (a small MLP on a learnable regression problem, SGD with a linear
warm-up then cosine learning rate) prints `step N | loss X | lr Y` every step, flushed per
line, after a `UserWarning` on stderr at its start. Its output goes to a log file opened as
the shell's `>` opens it: for writing, without `O_APPEND`, so the writer keeps its own
write offset. Once step TRUNCATE_AFTER is in the file, this script does what logrotate's
`copytruncate` does from another process: it copies `<name>.log` to `<name>.log.1` and
truncates `<name>.log` to 0 bytes (the writer is paused meanwhile with SIGSTOP, so nothing
falls between the copy and the truncation; logrotate has no such pause and may lose some).
The writer's next write lands at its old offset, so `<name>.log` is as many NUL bytes as
the copy holds, then what was written after the truncation:

- `truncated.log`: `python loop.py > truncated.log`; the loop writes each line whole, so
  the copy ends at a line's end and the first line after the hole is whole;
- `truncated_grep.log`: `python loop.py 2>&1 | grep -v Warning > truncated_grep.log` (the
  warning filtered out); grep block-buffers its output to a file (4096-byte writes), so
  the copy ends mid-line and the first bytes after the hole are the rest of that line.

Regenerate (from the repository root, in a separate environment, with GNU grep)::

    python3 -m venv /tmp/truncated-gen
    /tmp/truncated-gen/bin/pip install torch==2.13.0 numpy==2.4.6
    /tmp/truncated-gen/bin/python tests/data/stdout/generate_truncated.py

Losses are reproducible on one machine; where the writer is paused depends on timing (the
copy's last step is at or after TRUNCATE_AFTER).
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 7
STEPS = 600
TRUNCATE_AFTER = 300


def training_loop() -> None:
    """The training loop whose output is the log (run as a child process)."""
    import torch
    from torch import nn

    warnings.warn("a tiny model on synthetic data (this is a test log)", UserWarning, stacklevel=1)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    x = torch.randn(512, 16)
    y = x @ torch.randn(16, 1) + 0.1 * torch.randn(512, 1)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    base_lr, warmup = 3e-2, 50
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9)
    for step in range(STEPS):
        if step < warmup:
            lr = base_lr * (step + 1) / warmup
        else:
            progress = (step - warmup) / (STEPS - warmup)
            lr = base_lr * 0.5 * (1 + math.cos(math.pi * progress))
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = torch.randint(0, 512, (32,))
        loss = nn.functional.mse_loss(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} | loss {loss.item():.4f} | lr {lr:.2e}", flush=True)
        time.sleep(0.002)  # a real step takes time: the truncation lands mid-run


def copytruncate_while_writing(name: str, through_grep: bool) -> None:
    log, rotated = HERE / f"{name}.log", HERE / f"{name}.log.1"
    log.unlink(missing_ok=True)
    rotated.unlink(missing_ok=True)
    loop = [sys.executable, __file__, "--loop"]
    with log.open("wb") as out:  # the shell's `>`: truncated, no O_APPEND
        if through_grep:
            source = subprocess.Popen(loop, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert source.stdout is not None
            writer = subprocess.Popen(["grep", "-v", "Warning"], stdin=source.stdout, stdout=out)
            source.stdout.close()  # grep alone reads the pipe
            children = [source, writer]
        else:
            writer = subprocess.Popen(loop, stdout=out)
            children = [writer]
    marker = f"step {TRUNCATE_AFTER} |".encode()
    while marker not in log.read_bytes():
        if writer.poll() is not None:
            raise SystemExit(f"the writer ended before step {TRUNCATE_AFTER}")
        time.sleep(0.001)
    os.kill(writer.pid, signal.SIGSTOP)
    shutil.copyfile(log, rotated)  # copytruncate: copy, then truncate in place
    os.truncate(log, 0)
    os.kill(writer.pid, signal.SIGCONT)
    if any(child.wait() not in (0, 1) for child in children):  # grep: 1 = no line kept
        raise SystemExit("the training loop failed")
    data = log.read_bytes()
    hole = len(data) - len(data.lstrip(b"\x00"))
    print(f"{log.name}: {hole} NUL bytes, then {len(data) - hole} bytes of lines")
    print(f"{rotated.name}: {rotated.stat().st_size} bytes")


def main() -> None:
    if sys.argv[1:] == ["--loop"]:
        training_loop()
        return
    copytruncate_while_writing("truncated", through_grep=False)
    copytruncate_while_writing("truncated_grep", through_grep=True)


if __name__ == "__main__":
    main()
