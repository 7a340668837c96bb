"""`trainspotter watch` detection latency for `make bench` (run_all.py's `monitor` case,
printed beside `Monitor`'s table; `python benchmarks/bench_watch_latency.py` alone).

Each pathological example (bench_monitor's selection, onsets and rows) is replayed as a
log file that grows while an in-process `Watcher` follows it: the header is written, then
the rows are appended one logging point (one line) at a time, or 10 at a time as a
trainer that flushes its file every 10 points, and `poll()` runs after each append. The
log is the example's own CSV when it has one (the file the framework's logger wrote:
`metrics.csv`, Lightning's `lightning_logs/version_0/metrics.csv`); otherwise (a
TensorBoard or `trainer_state.json`-only example) the Run bench_monitor replays is
written as JSON Lines, one record per step. Nothing sleeps: a fake clock advances by
`--interval` (2 s) per poll, i.e. each append is one poll interval of a live run, and an
analysis takes no time on that clock, so the duty limit never holds one back (a real
analysis of these logs takes milliseconds against a 2 s interval). The figures are
therefore deterministic. A finding's step is the last step the watcher had read at the
poll that first reported it; "finish" means it came only from the final analysis.
"""

from __future__ import annotations

import io
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_monitor import REPO, latency_rows, pathological_examples  # noqa: E402

if TYPE_CHECKING:
    from trainspotter.model import Finding, Run

CHUNKS = (1, 10)
"""Logging points appended per poll."""
GROWN_SUFFIXES = (".csv", ".jsonl")


class PollClock:
    """The watcher's clock: moved on by the test harness, one poll interval per append."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def jsonl_rows(run: Run) -> list[bytes]:
    """One JSON Lines record per step of `run` (every metric logged at that step)."""
    records: dict[int, dict[str, Any]] = {}
    for name, series in run.metrics.items():
        for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
            record = records.setdefault(int(step), {"step": int(step)})
            record[name] = value if math.isfinite(value) else str(value)
    return [(json.dumps(records[step]) + "\n").encode() for step in sorted(records)]


def growing_log(root: Path, example: dict[str, Any], log: Path) -> tuple[str, bytes, list[bytes]]:
    """The replayed file: its path inside the example folder `root`, its header (a CSV's
    first line), and one line per logging point."""
    own = next((f for f in example["files"] if f.endswith(GROWN_SUFFIXES)), None)
    if own is not None:
        lines = (root / own).read_bytes().splitlines(keepends=True)
        if own.endswith(".csv"):
            return own, lines[0], lines[1:]
        return own, b"", lines
    import trainspotter

    return "metrics.jsonl", b"", jsonl_rows(trainspotter.analyze(log).run)


def replay_watch(
    relative: str, head: bytes, rows: list[bytes], chunk: int
) -> tuple[list[tuple[int, Finding]], list[Finding]]:
    """Grow `relative` (in a temporary folder) by `chunk` rows per poll under a Watcher:
    (last step read, finding) for every finding a poll reported, and the final findings."""
    from trainspotter.config import Config
    from trainspotter.watch import Watcher, WatchOptions

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(head)
        options = WatchOptions(patterns=(relative,), config=Config(), base=base)
        clock = PollClock()
        watcher = Watcher(options, io.StringIO(), io.StringIO(), clock=clock)
        watcher.poll()
        news: list[tuple[int, Finding]] = []
        with path.open("ab") as handle:
            for start in range(0, len(rows), chunk):
                handle.write(b"".join(rows[start : start + chunk]))
                handle.flush()
                clock.now += options.interval
                events = watcher.poll()
                (followed,) = watcher.logs.values()
                reached = followed.last_step
                assert reached is not None
                news += [(reached, event.finding) for event in events]
        watcher.finish()
        (final,) = watcher.analyses()
        return news, final.findings


def watch_latency() -> list[dict[str, Any]]:
    """bench_monitor's rows, one per pathology, with `log` and a latency per chunk size."""
    rows: list[dict[str, Any]] = []
    for name, example, log in pathological_examples():
        relative, head, lines = growing_log(REPO / "examples" / name, example, log)
        merged: list[dict[str, Any]] | None = None
        for chunk in CHUNKS:
            news, final = replay_watch(relative, head, lines, chunk)
            measured = latency_rows(name, example, news, final)
            if merged is None:
                merged = [{**row, "log": relative} for row in measured]
            for row, one in zip(merged, measured, strict=True):
                row[f"reported_at_{chunk}"] = one["reported_at"]
                row[f"latency_{chunk}"] = one["latency"]
        rows += merged or []
    return rows


def shown_latency(row: dict[str, Any], chunk: int) -> str:
    late = row[f"latency_{chunk}"]
    if late is not None:
        return str(late)
    return "finish" if row[f"reported_at_{chunk}"] == "finish" else "not reported"


def watch_latency_table(rows: list[dict[str, Any]]) -> list[str]:
    """The markdown lines for run_all's table."""
    heads = " | ".join(f"steps after onset, {n} point{'s' * (n > 1)} per poll" for n in CHUNKS)
    out = [
        "",
        "## watch: detection latency (examples grown as files, polled after each append)",
        "",
        f"| example | pathology | detector | log | onset step | {heads} |",
        "|---|---|---|---|---:|" + "---:|" * len(CHUNKS),
    ]
    for row in rows:
        cells = " | ".join(shown_latency(row, n) for n in CHUNKS)
        out.append(
            f"| {row['example']} | {row['kind']} | {row['detector']} | {row['log']} | "
            f"{row['onset']} | {cells} |"
        )
    return out


if __name__ == "__main__":
    print("\n".join(watch_latency_table(watch_latency())))
