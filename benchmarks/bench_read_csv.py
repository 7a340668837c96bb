"""Time `read_log` on a 1,000,000-row CSV with a step column and 6 metrics.

Writes the CSV into a temporary folder, then reads it in a fresh Python process so the
peak RSS reported (resource.getrusage) is the reader's alone, not the generator's. Run on
demand, never part of the test suite's pass/fail:

    python benchmarks/bench_read_csv.py [--rows N] [--repeat K]

Prints the file size, the read wall time (best of K) and the reading process' peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

METRICS = ("loss", "val_loss", "lr", "grad_norm", "accuracy", "throughput")


def write_csv(path: Path, rows: int) -> None:
    """A realistic log: a decaying noisy loss, an eval loss logged every 100 steps (empty
    cells elsewhere), a few NaN losses, and four dense metrics."""
    rng = np.random.default_rng(0)
    steps = np.arange(rows)
    loss = 3.0 * np.exp(-steps / (rows / 5)) + rng.normal(0.0, 0.05, rows)
    loss[rng.choice(rows, 10, replace=False)] = np.nan
    val_loss = np.where(steps % 100 == 0, loss + 0.1, np.nan)
    frame = pd.DataFrame(
        {
            "step": steps,
            "loss": loss,
            "val_loss": val_loss,
            "lr": 1e-3 * np.minimum(1.0, steps / 1000),
            "grad_norm": np.abs(rng.normal(1.0, 0.3, rows)),
            "accuracy": rng.uniform(0.0, 1.0, rows),
            "throughput": rng.normal(5000.0, 50.0, rows),
        }
    )
    # NaN written as "nan" (a value); the eval loss' missing steps as empty cells.
    frame["loss"] = frame["loss"].map(lambda v: "nan" if np.isnan(v) else repr(float(v)))
    frame.to_csv(path, index=False, float_format="%.6g", na_rep="")


def read_once(path: Path) -> None:
    """Child process: read the log, print seconds and this process' peak RSS."""
    from trainspotter.readers import read_log

    start = time.perf_counter()
    run = read_log(path)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    points = sum(len(series) for series in run.metrics.values())
    print(f"{seconds:.3f} {peak_mib:.0f} {len(run.metrics)} {points}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read is not None:
        read_once(args.read)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.csv"
        write_csv(path, args.rows)
        size_mb = path.stat().st_size / 1e6
        results = []
        for _ in range(args.repeat):
            out = subprocess.run(
                [sys.executable, __file__, "--read", str(path)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            results.append((float(out[0]), float(out[1]), int(out[2]), int(out[3])))
    best = min(results)
    print(
        f"{args.rows:,} rows x {len(METRICS)} metrics ({size_mb:.0f} MB): "
        f"read_log best {best[0]:.2f} s of {args.repeat}, peak RSS {best[1]:.0f} MiB, "
        f"{best[2]} metrics, {best[3]:,} points"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
