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
# A Monitor is told the source format ("csv"), not that the reader took a Keras log's `epoch`
# column as its step, which is how the overfitting fix recognises Keras: live, its fix is the
# generic "keep the best checkpoint" instead of Keras' ModelCheckpoint. Open: the Monitor API
# has no way to name Keras yet.
MONITOR_CANNOT_NAME_KERAS = {"keras_short_overfit/training.log"}


def _log_param(log: str) -> object:
    if log in MONITOR_CANNOT_NAME_KERAS:
        reason = "Monitor cannot know a Keras log's step is its epoch (fix wording differs)"
        return pytest.param(log, marks=pytest.mark.xfail(strict=True, reason=reason))
    return log


@pytest.mark.parametrize("log", [_log_param(log) for log in LOGS])
def test_replay_ends_with_exactly_analyze(log: str) -> None:
    reference = trainspotter.analyze(EXAMPLES / log)
    monitor = trainspotter.Monitor(
        max_steps=reference.run.meta.get("max_steps"),
        source_format=reference.run.source_format,
    )
    reported = [finding for point in replay(reference.run, monitor) for finding in point.news]
    final = monitor.finish()
    assert [finding_dict(f) for f in final.findings] == [
        finding_dict(f) for f in reference.findings
    ]
    assert final.worst == reference.worst
    assert "in_progress" not in final.run.meta
    # Every finding at or above warning in the end was news at some point on the way.
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
