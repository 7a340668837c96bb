"""A checked log reduced to what a sweep's reports read of it, so memory stays flat.

The gate checks thousands of logs and writes its reports once all are checked. Keeping
every `Analysis` whole until then keeps every log's metric arrays (24 bytes a point), so
memory grew with the total size of the logs: 1.5 GB at 10,000 example logs. The reports
that cover every log (the terminal log, JSON, SARIF, Code Quality, JUnit, annotations,
the Markdown summary's lines and sections) read of a run only its findings, checks,
notes and names, and per metric its point count, first and last step, last value and
count of NaN/Inf values; the pictures are drawn elsewhere: each log's HTML page is
rendered by the gate while the log is whole, and the Markdown report's Mermaid charts
(drawn for its first `MAX_CHARTS` logs that need attention) are drawn from analyses the
gate keeps whole for that purpose. `reduce_for_reports` keeps just that: each series
becomes a `SeriesSummary` holding its first and last point and its counts, and a
comparison drops its baseline series aligned onto the run (only the HTML page overlays
them). tests/test_reduced.py renders every report from whole and reduced analyses of
the example runs and requires the same bytes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from trainspotter.analysis import Analysis
from trainspotter.model import Series


@dataclass(frozen=True, eq=False)
class SeriesSummary(Series):
    """A series reduced to its first and last point (the arrays), with the whole series'
    length (`len`) and NaN/Inf count (`nonfinite_count`). Not for drawing or detection:
    the points in between are gone."""

    count: int
    nonfinite: int

    def __len__(self) -> int:
        return self.count

    def nonfinite_count(self) -> int:
        return self.nonfinite


def summarise(series: Series) -> SeriesSummary:
    """The series' first and last point and its counts."""
    if isinstance(series, SeriesSummary):
        return series
    ends = np.unique(np.array([0, len(series) - 1] if len(series) else [], dtype=np.int64))
    steps = np.array(series.steps[ends], dtype=np.int64)
    values = np.array(series.values[ends], dtype=np.float64)
    wall_time = np.array(series.wall_time[ends], dtype=np.float64)
    for array in (steps, values, wall_time):
        array.setflags(write=False)
    return SeriesSummary(steps, values, wall_time, len(series), series.nonfinite_count())


def reduce_for_reports(analysis: Analysis) -> Analysis:
    """The analysis with each metric series summarised (`summarise`) and no aligned
    baseline series: what the reports covering every log read, nothing more."""
    run = dataclasses.replace(
        analysis.run, metrics={name: summarise(s) for name, s in analysis.run.metrics.items()}
    )
    comparison = analysis.comparison
    if comparison is not None and comparison.aligned_baseline:
        comparison = dataclasses.replace(comparison, aligned_baseline={})
    return dataclasses.replace(analysis, run=run, comparison=comparison)


__all__ = ["SeriesSummary", "reduce_for_reports", "summarise"]
