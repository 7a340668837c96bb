"""Reading 1M printed lines (issue 14, the stdout reader): CPU seconds and peak RSS of
`read_log(path, fmt="stdout")` in a fresh process, for the line classes the reader sees
in large logs. The lines follow the formats of tests/data/stdout (printed by real runs),
with synthetic numbers:

- `nanogpt`: `iter N: loss X, time Yms, mfu Z%` every step and `step N: train loss X,
  val loss Y` every 500 (benchmarks/logs.py, the log `make bench`'s analyze table uses);
- `logging`: Python logging's `2024-01-01 12:00:00,123 - INFO - Epoch e/E, Step n/N,
  Train Loss: X, LR: Y` (the step restarts each epoch);
- `hf-dicts`: HF Trainer's printed dicts `{'loss': X, 'grad_norm': Y, 'learning_rate': Z,
  'epoch': E}` with `logging_steps=1` (values printed with 4 significant digits, so the
  line layout changes often).

    .venv/bin/python benchmarks/bench_stdout.py [--lines 1000000]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import logs  # noqa: E402  (benchmarks/logs.py, beside this file)


def logging_lines(count: int) -> str:
    rng = random.Random(0)
    per_epoch = 2000
    out = []
    for i in range(count):
        epoch, step = i // per_epoch + 1, i % per_epoch + 1
        seconds = i * 0.731
        stamp = (
            f"2024-01-{1 + int(seconds // 86400) % 28:02d} {int(seconds // 3600) % 24:02d}:"
            f"{int(seconds // 60) % 60:02d}:{int(seconds) % 60:02d},{i % 1000:03d}"
        )
        loss = 3.0 * 0.999995**i + rng.random() * 0.05
        out.append(
            f"{stamp} - INFO - Epoch {epoch}/{count // per_epoch + 1}, "
            f"Step {step}/{per_epoch}, Train Loss: {loss:.4f}, LR: {1e-3 * 0.99999**i:.2e}"
        )
    return "\n".join(out) + "\n"


def hf_dict_lines(count: int) -> str:
    rng = random.Random(0)
    out = []
    for i in range(count):
        loss = 3.0 * 0.999995**i + rng.random() * 0.05
        out.append(
            f"{{'loss': {loss:.4g}, 'grad_norm': {rng.random() * 2:.4g}, "
            f"'learning_rate': {5e-5 * (1 - i / count):.4g}, 'epoch': {i / 20000:.4g}}}"
        )
    return "\n".join(out) + "\n"


def measure(path: Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of reading `path` in a fresh process."""
    code = (
        "import sys; from trainspotter.readers import read_log; read_log(sys.argv[1], fmt='stdout')"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(path)])
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"reading {path} failed")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


WRITERS: dict[str, Callable[[int], str]] = {
    "nanogpt": lambda n: logs.printed_lines(logs.curves(n)),
    "logging": logging_lines,
    "hf-dicts": hf_dict_lines,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        name, target = args.write
        Path(target).write_text(WRITERS[name](args.lines), encoding="utf-8")
        return
    print(f"| printed log, {args.lines:,} steps | MB | CPU s (best of {args.repeat}) | RSS MB |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for name in WRITERS:
            path = Path(folder) / f"{name}.log"
            # Written by a child: a forked measuring child would count this process'
            # pages (the text of the log) in its peak RSS.
            write = [sys.executable, __file__, "--lines", str(args.lines), "--write", name]
            subprocess.run([*write, str(path)], check=True)
            runs = [measure(path) for _ in range(args.repeat)]
            cpu, rss = min(runs)
            size = path.stat().st_size / 1e6
            print(f"| {name} | {size:.0f} | {cpu:.2f} | {rss:.0f} |", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
