"""The replay behind `make bench`'s watch latency table (benchmarks/bench_watch_latency.py):
an example's log grown as a file under a Watcher, one point or ten per poll. These check
the mechanics (which step a finding is attributed to, that the grown file is the
example's log), never speed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from trainspotter.analysis import analyze
from trainspotter.model import Finding
from trainspotter.readers import read_log

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_monitor import REPO, onset  # noqa: E402
from bench_watch_latency import growing_log, jsonl_rows, replay_watch  # noqa: E402

EXAMPLES = REPO / "examples"
EXPECTED = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))


def key(finding: Finding) -> tuple[object, ...]:
    return (finding.detector, finding.metric, finding.step_start, finding.step_end)


def test_nan_is_reported_at_its_step_on_a_one_point_replay() -> None:
    example = EXPECTED["divergence"]
    root = EXAMPLES / "divergence"
    relative, head, rows = growing_log(root, example, root / "trainer_state.json")
    assert relative == "metrics.csv" and head.startswith(b"step,")
    news, _ = replay_watch(relative, head, rows, 1)
    nan = next(p for p in example["pathologies"] if p["kind"] == "nan")
    start = onset(nan)
    reported = [step for step, f in news if f.detector == "divergence" and f.step_end >= start]
    assert reported and reported[0] == start


def test_ten_point_replay_reports_at_chunk_ends_and_ends_as_analyze() -> None:
    example = EXPECTED["loss_spike"]
    root = EXAMPLES / "loss_spike"
    relative, head, rows = growing_log(root, example, root / "trainer_state.json")
    news, final = replay_watch(relative, head, rows, 10)
    steps = [int(row.split(b",")[0]) for row in rows]
    chunk_ends = {steps[min(i + 9, len(steps) - 1)] for i in range(0, len(steps), 10)}
    assert news and {step for step, _ in news} <= chunk_ends
    whole = analyze(read_log(root / relative)).findings
    assert sorted(map(key, final)) == sorted(map(key, whole))


def test_jsonl_rows_hold_the_run(tmp_path: Path) -> None:
    """An example without a CSV (here trainer_state.json only) is grown as JSON Lines that
    read back as the same series."""
    source = EXAMPLES / "hf_no_warmup" / "trainer_state.json"
    run = read_log(source)
    target = tmp_path / "metrics.jsonl"
    target.write_bytes(b"".join(jsonl_rows(run)))
    again = read_log(target)
    assert set(again.metrics) == set(run.metrics)
    for name, series in run.metrics.items():
        back = again.metrics[name]
        assert back.steps.tolist() == series.steps.tolist()
        np.testing.assert_array_equal(back.values, series.values)
