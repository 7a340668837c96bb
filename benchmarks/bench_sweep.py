"""A sweep of 10,000 logs through `trainspotter gate`: `--jobs 1`, `--jobs 2` and
`--engine dask` (a LocalCluster of two worker processes, started and stopped by the gate).
Run by `make bench`, or `python benchmarks/bench_sweep.py [--logs N]`.

The logs: the real example runs' logs (examples/*/metrics.csv, the Lightning CSVLogger
files, and examples/*/trainer_state.json, the Hugging Face Trainer's; 42 files of 6-245 kB
when this was written), each linked (a hard link: the same bytes, no disk used) into
`run<N>/` of a temporary folder in turn until there are N runs. They are copies, not new
runs: a sweep's cost is reading and checking each log, the same for a copy. The gate
writes only its JSON report (`--outputs json`): one HTML page per log would measure the
HTML report, not the sweep.

Each case runs in a fresh process (`run_all.run_child`): wall seconds, CPU seconds of the
gate and every process it waited for (its pool's or the Dask cluster's workers), peak RSS
of the largest, and the 1-minute load average before and after (the machine is shared;
CPU seconds vary less than wall time under load).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run_all import run_child  # noqa: E402

EXAMPLES = HERE.parent / "examples"
CASES = {
    "--jobs 1": ["--jobs", "1"],
    "--jobs 2": ["--jobs", "2"],
    "--engine dask (LocalCluster, 2 workers)": ["--engine", "dask", "--jobs", "2"],
}


def make_sweep(folder: Path, count: int) -> int:
    """Link the example logs into `folder/run<N>/` until there are `count` runs; returns
    the total size in bytes."""
    sources = sorted(EXAMPLES.glob("*/metrics.csv")) + sorted(EXAMPLES.glob("*/trainer_state.json"))
    if not sources:
        raise SystemExit(f"no example logs in {EXAMPLES}")
    total = 0
    for index in range(count):
        source = sources[index % len(sources)]
        run = folder / f"run{index:05d}"
        run.mkdir(parents=True)
        os.link(source, run / source.name)
        total += source.stat().st_size
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=10_000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="trainspotter-sweep-") as tmp:
        folder = Path(tmp)
        size = make_sweep(folder / "logs", args.logs)
        print(f"sweep: {args.logs:,} logs, {size / 1e6:.0f} MB, in {folder}", file=sys.stderr)
        print(f"load average (1, 5, 15 min) at the start: {os.getloadavg()}", file=sys.stderr)
        for label, options in CASES.items():
            command = [
                sys.executable,
                *("-m", "trainspotter", "gate", "logs/*/*", "--outputs", "json"),
                *("--report-dir", f"report-{len(rows)}"),
                *options,
            ]
            load_before = os.getloadavg()[0]
            result = run_child(command, cwd=folder)
            load = (load_before, os.getloadavg()[0])
            rows.append((label, result, load))
            print(f"  {label}: {result}, load average {load}", file=sys.stderr, flush=True)
    print(f"## gate over {args.logs:,} logs (copies of the example runs' logs)\n")
    print(
        "| engine | wall s | CPU s (all processes) | CPU ms per log | logs/s (wall) "
        "| peak RSS MB | load average before, after |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, result, load in rows:
        print(
            f"| `{label}` | {result['wall']:.1f} | {result['cpu']:.1f} | "
            f"{1000 * result['cpu'] / args.logs:.0f} | {args.logs / result['wall']:.0f} | "
            f"{result['rss']:.0f} | {load[0]:.1f}, {load[1]:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
