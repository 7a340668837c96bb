"""Peak memory on the two 200 MB one-line inputs of issue 11 (ADVERSARIAL.md D5): a JSON
Lines object with ~14M keys and a CSV header with no line break. Each is analysed in a
fresh process; its peak RSS comes from that process' rusage (`os.wait4`). Both must end
with the one-line "line N is longer than ..." error, exit 2, well under 1 GB.

    .venv/bin/python benchmarks/bench_long_lines.py [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_jsonl(path: Path, size: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"step":1')
        written, index = 0, 0
        while written < size:
            chunk = "".join(f',"k{i}_loss":1.5' for i in range(index, index + 10_000))
            handle.write(chunk)
            written, index = written + len(chunk), index + 10_000
        handle.write("}\n")


def write_csv_header(path: Path, size: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        chunk = "a," * 500_000
        for _ in range(max(size // len(chunk), 1)):
            handle.write(chunk)
        handle.write("a")


def measure(path: Path) -> tuple[int, int, float, str]:
    """(exit code, peak RSS in bytes, wall seconds, stderr) of `trainspotter analyze path`."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "trainspotter", "analyze", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    err = process.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, wall, err.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of each input in MB")
    args = parser.parse_args()
    size = args.mb * 1_000_000
    with tempfile.TemporaryDirectory() as folder:
        print(f"| {args.mb} MB input | exit | peak RSS | wall | message |")
        print("|---|---|---|---|---|")
        for name, write in (("one-line.jsonl", write_jsonl), ("header.csv", write_csv_header)):
            path = Path(folder) / name
            write(path, size)
            code, peak, wall, err = measure(path)
            print(f"| {name} | {code} | {peak / 2**20:.0f} MiB | {wall:.1f} s | {err} |")


if __name__ == "__main__":
    main()
