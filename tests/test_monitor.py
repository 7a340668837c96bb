"""`trainspotter.Monitor`: every bundled example replayed point by point ends with exactly
`trainspotter.analyze`'s findings on the file; NaN is news on the point that logs it;
live analyses are marked in progress; the number of full analyses grows like log(n)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import trainspotter
from trainspotter.detectors import idioms
from trainspotter.monitor import replay
from trainspotter.report.json_report import finding_dict

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
EXPECTED = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
# Every example through its first log file (trainer_state.json where it has one); the
# divergent run (it reaches NaN) also through its CSV log; the throughput drop through
# TensorBoard, whose wall times reach the throughput check.
LOGS = [f"{name}/{entry['files'][0].rstrip('/')}" for name, entry in EXPECTED.items()] + [
    "divergence/metrics.csv",
    "throughput_drop/tensorboard",
]


@pytest.mark.parametrize("log", LOGS)
def test_replay_ends_with_exactly_analyze(log: str) -> None:
    reference = trainspotter.analyze(EXAMPLES / log)
    monitor = trainspotter.Monitor(
        max_steps=reference.run.meta.get("max_steps"),
        source_format=reference.run.source_format,
        # A training loop knows its framework; a log's reader infers it (Keras from a CSV
        # whose step is `epoch`). Told it, the live fixes use the same words.
        framework=idioms.framework(reference.run),
    )
    reported = [finding for point in replay(reference.run, monitor) for finding in point.news]
    final = monitor.finish()
    assert [finding_dict(f) for f in final.findings] == [
        finding_dict(f) for f in reference.findings
    ]
    assert final.worst == reference.worst
    assert "in_progress" not in final.run.meta
    # Every finding at or above warning in the end was news at some point on the way, or
    # at finish() when the last points complete it (log() analyses on a schedule).
    reported += monitor.news_at_finish
    for finding in reference.findings:
        if finding.severity >= trainspotter.Severity.WARNING:
            assert any(
                r.detector == finding.detector and r.metric == finding.metric for r in reported
            ), finding.title


@pytest.mark.parametrize("log", ["divergence/trainer_state.json", "divergence/metrics.csv"])
def test_nan_is_news_on_the_point_that_logs_it(log: str) -> None:
    run = trainspotter.analyze(EXAMPLES / log).run
    monitor = trainspotter.Monitor(
        max_steps=run.meta.get("max_steps"), source_format=run.source_format
    )
    for point in replay(run, monitor):
        if not math.isfinite(point.value):
            assert point.news, f"nothing reported at the first non-finite {point.metric}"
            assert any(
                f.severity is trainspotter.Severity.ERROR
                and f.step_start <= point.step <= f.step_end
                for f in point.news
            )
            assert monitor.analysis is not None
            assert monitor.analysis.run.meta.get("in_progress") is True
            return
    pytest.fail("the example logs no non-finite value")


def test_full_analyses_grow_like_log_n_and_news_is_never_repeated() -> None:
    monitor = trainspotter.Monitor()
    rng = np.random.default_rng(0)
    seen: list[tuple[str, str, int]] = []
    points = 5000
    for step in range(1, points + 1):
        loss = 3.0 * math.exp(-step / 800) + 0.5 + 0.01 * float(rng.standard_normal())
        for finding in monitor.log(step, loss=loss, lr=1e-3):
            seen.append((finding.detector, finding.metric, finding.severity))
    # 10% growth: every point up to 10, then log(5000 / 10) / log(1.1) ~ 65 analyses.
    assert monitor.analyses <= 10 + math.ceil(math.log(points / 10) / math.log(1.1)) + 1
    assert len(seen) == len(set(seen))
    assert monitor.finish().run.metrics["train/loss"].values.shape == (points,)


def test_log_checks_its_arguments() -> None:
    monitor = trainspotter.Monitor()
    with pytest.raises(TypeError, match="'loss' must be a number"):
        monitor.log(1, loss="high")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole number"):
        monitor.log(1.5, loss=1.0)  # type: ignore[arg-type]
    with pytest.raises(trainspotter.InputError, match="monitor: no data points"):
        monitor.finish()
    monitor.log(2.0, loss=1.0)  # type: ignore[arg-type]
    assert monitor.finish().run.metrics["train/loss"].steps.tolist() == [2]


def test_a_live_check_says_what_only_the_end_of_training_shows() -> None:
    """A short Keras run whose overfitting only the last evaluation completes: log()'s
    schedule skips that point, so the warning first shows at finish(), and a framework
    callback must still say it on the training log, not only write it to the report."""
    from trainspotter.integrations._live import LiveCheck

    run = trainspotter.analyze(EXAMPLES / "keras_short_overfit/training.log").run
    said: list[str] = []
    live = LiveCheck(None, write_reports=False, say=lambda severity, line: said.append(line))
    # One metric per call, as `replay` feeds a Monitor: log() then analyses on a schedule
    # that skips the very last point.
    for step in sorted({int(s) for series in run.metrics.values() for s in series.steps}):
        for name, series in run.metrics.items():
            at = np.flatnonzero(series.steps == step)
            if at.size:
                live.record(step, {name: float(series.values[at[0]])})
    assert not said, "the warning is expected to show only at the end (see the docstring)"
    analysis = live.finish(None)
    assert analysis is not None and analysis.worst is trainspotter.Severity.WARNING
    assert [f.detector for f in live.findings] == ["overfitting"]
    assert len(said) == 1 and "overfitting" in said[0]
