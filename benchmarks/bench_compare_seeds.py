"""How often `trainspotter compare` stays silent on two seeds of one recipe (issue 15).

Trains 20 pairs of the comparison examples' baseline recipe (seeds s and s + 1000, the
example generator's numpy MLP on scikit-learn's digits, CPU, a few seconds per run) with
`examples/generate_pairs.py --seed-pairs` in the examples' environment, then compares the
second run of each pair with the first, on `metrics.csv` (with per-step timing) and on
`trainer_state.json` (without). A pair "warns" when a `regression` finding is a warning
or an error. The acceptance asks for at most 1 of 20.

    EXAMPLES_PYTHON=/tmp/examples-venv/bin/python .venv/bin/python \\
        benchmarks/bench_compare_seeds.py [--pairs 20] [--keep DIR]

Training needs the examples' requirements (examples/requirements.txt); without
EXAMPLES_PYTHON (or with `--logs DIR` from an earlier `--keep`) nothing is trained.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainspotter.compare.command import compare_paths  # noqa: E402
from trainspotter.config import Config  # noqa: E402
from trainspotter.detectors.regression import NAME  # noqa: E402
from trainspotter.model import Severity  # noqa: E402


def train(pairs: int, root: Path) -> None:
    python = os.environ.get("EXAMPLES_PYTHON")
    if not python:
        sys.exit("set EXAMPLES_PYTHON to a Python with examples/requirements.txt, or --logs")
    script = REPO / "examples" / "generate_pairs.py"
    subprocess.run(
        [python, str(script), "--seed-pairs", str(pairs), str(root)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def warnings_of(candidate: Path, baseline: Path) -> list[str]:
    """Titles of the regression findings at warning or above."""
    (analysis,) = compare_paths(str(candidate), str(baseline), Config())
    return [
        f"{f.severity.label}: {f.title}"
        for f in analysis.findings
        if f.detector == NAME and f.severity >= Severity.WARNING
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--logs", type=Path, help="compare logs trained earlier (--keep)")
    parser.add_argument("--keep", type=Path, help="train into DIR and keep the logs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.logs or args.keep or Path(scratch)
        if args.logs is None:
            started = time.perf_counter()
            train(args.pairs, root)
            print(f"trained {2 * args.pairs} runs in {time.perf_counter() - started:.0f} s")
        for log in ("metrics.csv", "trainer_state.json"):
            warned = 0
            for seed in range(1, args.pairs + 1):
                found = warnings_of(root / f"seed_{seed + 1000}" / log, root / f"seed_{seed}" / log)
                warned += bool(found)
                for title in found:
                    print(f"  seed {seed + 1000} vs {seed} ({log}): {title}")
            silent = args.pairs - warned
            print(f"{log}: silent on {silent} of {args.pairs} seed pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
