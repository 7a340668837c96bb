"""`trainspotter.Monitor`: catch a bad run from inside the training loop.

    monitor = trainspotter.Monitor()
    for step in ...:
        for finding in monitor.log(step, loss=loss, lr=lr):
            ...                      # a finding that just appeared
    analysis = monitor.finish()      # exactly `trainspotter.analyze` on the same points

Cost per `log` call is O(1) amortised, as in `trainspotter watch` (whose rule this shares,
`trainspotter.online`): each value is appended to capacity-doubling numpy buffers and fed
to its metric's online check (microseconds); the full analysis (every detector, on the
whole run) runs only on the first point, whenever the run has grown by 10% since the last
one, at once on a metric's first non-finite value, and when an online check fires, under
the duty limit (no more than ~20% of the time in analyses). So a NaN loss is reported by
the `log` call that logged it, and every other finding at the latest when the run has
grown by 10% (or an online check fired). Live analyses mark the run in progress
(`meta["in_progress"]`) so end-of-run verdicts (a warmup that never ended) wait for
`finish()`.

`log` returns the findings that are news: new ones, ones whose severity rose, and on a
metric's first non-finite value the findings covering that step (a divergence reported
earlier that has now reached NaN); an episode that merely grew is not news again.
Info notes are returned only when the config fails on info (as `watch` shows them), and
suppressed findings (the config's `ignore` rules) never. Monitor is not
thread-safe: call it from the training loop's thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from trainspotter.api import Analysis, ConfigLike, check_run, resolve_config
from trainspotter.detectors.idioms import FRAMEWORKS, Framework
from trainspotter.errors import InputError
from trainspotter.model import Finding, FloatArray, IntArray, Run, Severity
from trainspotter.online import FindingTracker, Schedule, live_run_meta
from trainspotter.readers._tabular import canonical_name
from trainspotter.readers.memory import run_from_columns

MONITOR_FORMAT = "monitor"
INITIAL_CAPACITY = 256


@dataclass
class _Column:
    """One metric's points in the order logged, in buffers that double when full."""

    name: str
    """The canonical name."""
    steps: IntArray = field(default_factory=lambda: np.empty(INITIAL_CAPACITY, np.int64))
    values: FloatArray = field(default_factory=lambda: np.empty(INITIAL_CAPACITY, np.float64))
    wall: FloatArray = field(default_factory=lambda: np.empty(INITIAL_CAPACITY, np.float64))
    size: int = 0

    def append(self, step: int, value: float, wall: float) -> None:
        if self.size == self.steps.shape[0]:
            capacity = 2 * self.size
            self.steps = np.resize(self.steps, capacity)
            self.values = np.resize(self.values, capacity)
            self.wall = np.resize(self.wall, capacity)
        self.steps[self.size] = step
        self.values[self.size] = value
        self.wall[self.size] = wall
        self.size += 1


def _step_number(step: object) -> int:
    if isinstance(step, bool):
        raise TypeError("step must be a whole number, not a bool")
    if isinstance(step, int):
        return step
    try:
        number = float(step)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TypeError(f"step must be a whole number, not {type(step).__name__}") from None
    if not number.is_integer():
        raise ValueError(f"step must be a whole number, not {number!r}")
    return int(number)


class Monitor:
    """Findings while a run trains (see the module docstring).

    `config`: a Config, the path of a `.trainspotter.yml`, or None for the defaults.
    `name`: how reports name the run. `max_steps`: the planned length, when known (lets
    the LR-schedule check tell a warmup still running from one that never ends).
    `framework`: the training framework calling `log` ("transformers", "lightning",
    "keras" or "pytorch"), so fixes name its knobs; when None, the source format decides
    (a loop that names none gets the PyTorch call and the Keras argument side by side)."""

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        name: str = "monitor",
        max_steps: int | None = None,
        source_format: str = MONITOR_FORMAT,
        framework: Framework | None = None,
        growth: float = 0.10,
        duty: float = 4.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.config = resolve_config(config)
        self.name = name
        self.max_steps = max_steps
        self.source_format = source_format
        """The framework whose metrics are logged ("hf", "lightning", ...): fixes name it."""
        if framework is not None and framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {framework!r}")
        self.framework = framework
        self.clock = clock
        self.schedule = Schedule(growth, duty)
        self.tracker = FindingTracker()
        self.points = 0
        """`log` calls so far (rows)."""
        self.analysis: Analysis | None = None
        """The latest analysis (live, or `finish()`'s)."""
        self.news_at_finish: list[Finding] = []
        """What `finish()` found that no `log` call had reported: `log` analyses on a
        schedule, so a finding the last points complete can first show at the end."""
        self._columns: dict[str, _Column] = {}

    @property
    def analyses(self) -> int:
        """Full analyses run so far."""
        return self.schedule.analyses

    def log(
        self, step: int, /, *, wall_time: float | None = None, **metrics: float
    ) -> list[Finding]:
        """Record the metrics logged at `step` (any names: `loss`, `eval_loss`, `lr`, ...,
        normalised like a log's columns; pass names with `/` as `**{"eval/loss": x}`);
        return the findings that are news. `wall_time` (seconds, e.g. `time.time()`) lets
        the throughput check see the run's speed; without it the time is unknown."""
        number = _step_number(step)
        wall = math.nan if wall_time is None else float(wall_time)
        urgent: str | None = None
        alarm: str | None = None
        for raw, given in metrics.items():
            try:
                value = float(given)
            except (TypeError, ValueError):
                raise TypeError(
                    f"metric {raw!r} must be a number, not {type(given).__name__}"
                ) from None
            column = self._columns.get(raw)
            if column is None:
                name = canonical_name(raw, self.config.aliases)
                column = self._columns[raw] = _Column(name)
            column.append(number, value, wall)
            first_nonfinite, reason = self.schedule.check(column.name).update_one(value)
            if first_nonfinite and urgent is None:
                urgent = f"{column.name} logged a non-finite value"
            if reason and alarm is None:
                alarm = reason
        self.points += 1
        why = self.schedule.decide(self.points, urgent, alarm)
        if why is None and self.schedule.pending is not None:
            why = self.schedule.due(self.clock())
        if why is None:
            return []
        # On a first non-finite value the finding about it is news even when it updates
        # an episode already reported (a divergence that has now reached NaN).
        return self._news(self._analyse(final=False), at_step=number if urgent else None)

    def run(self, *, final: bool = True) -> Run:
        """The Run of every point logged so far (marked in progress unless `final`)."""
        columns = [
            (raw, c.name, c.steps[: c.size], c.values[: c.size], c.wall[: c.size])
            for raw, c in self._columns.items()
        ]
        meta: dict[str, object] = {}
        if self.max_steps is not None:
            meta["max_steps"] = int(self.max_steps)
        if self.framework is not None:
            meta["framework"] = self.framework
        run = run_from_columns(columns, self.source_format, self.name, meta)
        live_run_meta(run.meta, final)
        return run

    def _analyse(self, final: bool) -> Analysis | None:
        started = self.clock()
        run = self.run(final=final)
        if not any(len(series) for series in run.metrics.values()):
            return None  # only empty calls so far: nothing to analyse yet
        self.analysis = Analysis.of(check_run(run, self.config))
        self.schedule.analysed(self.points, started, self.clock())
        return self.analysis

    def _news(self, analysis: Analysis | None, at_step: int | None = None) -> list[Finding]:
        if analysis is None:
            return []
        # As in `watch`: info notes are news only when the config fails on info; a live
        # "converged" note drifts with every analysis and would only be noise.
        shown_from = min(self.config.fail_on, Severity.WARNING)
        return [
            change.finding
            for change in self.tracker.changes(analysis)
            if change.finding.severity >= shown_from
            and (
                change.kind == "new"
                or change.severity_rose
                or (
                    at_step is not None
                    and change.finding.step_start <= at_step <= change.finding.step_end
                )
            )
        ]

    def finish(self) -> Analysis:
        """The analysis of the whole run, as `trainspotter.analyze` gives it on the same
        points. Raises InputError when nothing was logged. Logging may go on after it."""
        analysis = self._analyse(final=True)
        if analysis is None:
            raise InputError(self.name, "no data points: no metric value was logged")
        self.news_at_finish = self._news(analysis)
        return analysis


@dataclass(frozen=True)
class Replayed:
    """One point of a replay and what `Monitor.log` returned for it."""

    step: int
    metric: str
    value: float
    news: list[Finding]


def replay(run: Run, monitor: Monitor) -> Iterator[Replayed]:
    """Feed a recorded run through `monitor` one point per `log` call, in step order (at
    one step, metrics in the run's order), with each point's wall time: what the Monitor
    would have said while the run trained. Then `monitor.finish()` gives its analysis."""
    order = sorted(
        (int(step), position, name, index)
        for position, (name, series) in enumerate(run.metrics.items())
        for index, step in enumerate(series.steps.tolist())
    )
    for step, _, name, index in order:
        series = run.metrics[name]
        value = float(series.values[index])
        wall = float(series.wall_time[index])
        news = monitor.log(step, wall_time=None if math.isnan(wall) else wall, **{name: value})
        yield Replayed(step, name, value, news)


__all__ = ["Monitor", "Replayed", "replay"]
