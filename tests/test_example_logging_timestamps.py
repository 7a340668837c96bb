"""Real PyTorch runs printed through Python `logging` (examples/logging_slowdown.py): the
only timing in the log is each line's `%(asctime)s` stamp. The stdout reader takes it as
the line's wall time, so the throughput check sees a data loader that slowed down half
way (`logging_slowdown`) and stays silent on the twin that did not
(`logging_steady_healthy`). The times are checked against the raw text, parsed here with
the standard library."""

from __future__ import annotations

import itertools
import re
import statistics
from datetime import datetime
from pathlib import Path

import pytest
from test_example_classes import EXPECTED, analysis_of, log_of

from trainspotter.model import Severity

_LINE = re.compile(r"^(\S+ \S+) - INFO - Step \[(\d+)/\d+\], Loss: ([\d.]+), LR: [\d.]+$", re.M)


def logged(path: Path) -> list[tuple[int, float]]:
    """(step, seconds) of every progress line, as the file holds them."""
    return [
        (int(step), datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp())
        for stamp, step, _ in _LINE.findall(path.read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize("example", ["logging_slowdown", "logging_steady_healthy"])
def test_each_line_stamp_is_its_points_wall_time(example: str) -> None:
    rows = logged(log_of(example))
    assert len(rows) == EXPECTED[example]["steps"] // EXPECTED[example]["logging_steps"]
    loss = analysis_of(log_of(example)).run.metrics["train/loss"]
    assert loss.steps.tolist() == [step for step, _ in rows]
    # Differences only: the log's times carry no zone, the reader counts them as UTC.
    walls = loss.wall_time - loss.wall_time[0]
    assert walls.tolist() == pytest.approx([s - rows[0][1] for _, s in rows], abs=1e-6)


def test_a_loader_slowdown_is_dated_within_one_logging_interval() -> None:
    path = log_of("logging_slowdown")
    truth = EXPECTED["logging_slowdown"]
    cause = truth["pathologies"][0]
    found = [f for f in analysis_of(path).findings if f.detector == "throughput"]
    assert len(found) == 1
    finding = found[0]
    assert finding.severity == Severity.WARNING and finding.metric == "train/loss"
    # The first line whose interval holds a slow step (the one logged at 1020 covers steps
    # 1001-1020), within one logging interval of where the slowdown began.
    assert cause["first_step"] <= finding.step_start == cause["first_logged_step_after_cause"]
    assert finding.step_start - cause["first_step"] < truth["logging_steps"]
    assert finding.step_end == truth["steps"]
    # The medians of the message, against seconds per step computed from the raw stamps.
    rows = logged(path)
    per_step = [
        (step, (seconds - before) / (step - previous))
        for (previous, before), (step, seconds) in itertools.pairwise(rows)
    ]
    slow = statistics.median(v for step, v in per_step if step >= finding.step_start)
    fast = statistics.median(v for step, v in per_step if step < finding.step_start)
    assert finding.evidence["median_after"] == pytest.approx(slow, rel=1e-6)
    assert finding.evidence["median_before"] == pytest.approx(fast, rel=1e-6)
    start = finding.step_start
    assert f"{fast:.4g} s/step before step {start} to {slow:.4g} s/step after it" in finding.message


def test_the_steady_twin_is_silent() -> None:
    findings = analysis_of(log_of("logging_steady_healthy")).findings
    assert not [f for f in findings if f.detector == "throughput"]
    assert not [f for f in findings if f.severity >= Severity.WARNING]
