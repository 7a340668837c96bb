"""When to run the full analysis of a growing run, and what is news in its result.

Shared by the two front ends that follow a run while it trains: `trainspotter watch` (a log
file that grows) and `trainspotter.Monitor` (points logged from inside the training loop).
Neither reports anything a batch analysis did not find: the detectors are batch
algorithms over the whole series, and this module only decides *when* to run them, at a
cost per point that does not grow with the run.

- `OnlineCheck`: one metric's O(1)-per-point trigger: any non-finite value; an EWMA mean
  and mean absolute deviation with a jump test (losses, grad_norm: a value more than
  `JUMP_SIGMAS` deviations away; lr: a change by more than `LR_RATIO` between points); a
  one-sided CUSUM on step_time (up) and throughput (down). It costs microseconds per
  point and only *triggers* an analysis. False triggers cost time, never a finding.
- `Schedule`: the rule. A full analysis runs (a) on the first data, (b) whenever the run
  has grown by `growth` (10%) since the last one: with geometric growth the total work
  over n points is about n / 0.1 + n, a constant per point, (c) at once when a metric
  logs its first non-finite value, (d) when an online check fires (or the front end says
  the run went idle), but only once the time since the last analysis is at least `duty`
  (4) times what that analysis took, so triggered analyses take at most ~20% of one core.
- `FindingTracker`: matches findings across analyses by (detector, metric, start step),
  else by the same detector and metric with an overlapping step range (an episode's start
  can move as robust windows widen), so a growing episode is an update, not news again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, FloatArray
from trainspotter.names import GRAD_NORM, LR, STEP_TIME, THROUGHPUT, is_loss_like

JUMP_SIGMAS = 8.0
"""A loss or grad_norm value this many EWMA mean absolute deviations from the EWMA mean
triggers an analysis (a trigger only: the detectors decide what is a finding)."""
LR_RATIO = 2.0
"""An lr that changes by more than this factor between two points triggers an analysis,
unless both values are below `LR_FLOOR` x the peak lr (the tail of a decay to zero)."""
LR_FLOOR = 0.01
CUSUM_LIMIT = 12.0
"""One-sided CUSUM threshold (in deviations) for step_time up / throughput down."""
EWMA_ALPHA = 0.05
WARMUP_POINTS = 20
"""Points a check sees before it may fire."""
BULK_POINTS = 5000
"""A batch of more new points than this (the first read of a long log) only warms the
check up on its last `BULK_TAIL` points: its size triggers an analysis anyway."""
BULK_TAIL = 1000


class OnlineCheck:
    """O(1)-per-point online trigger for one metric (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == LR:
            self.kind = "ratio"
        elif name == STEP_TIME:
            self.kind = "up"
        elif name == THROUGHPUT:
            self.kind = "down"
        elif name == GRAD_NORM or is_loss_like(name):
            self.kind = "jump"
        else:
            self.kind = "finite"
        self.count = 0
        self.mean = 0.0
        self.dev = 0.0
        self.cusum = 0.0
        self.last = math.nan
        self.peak = 0.0
        self.nonfinite_seen = False

    def update(self, values: FloatArray) -> tuple[bool, str | None]:
        """Feed new values; return (first non-finite value of this metric, other alarm)."""
        first_nonfinite = False
        finite = np.isfinite(values)
        if not bool(finite.all()):
            first_nonfinite = not self.nonfinite_seen
            self.nonfinite_seen = True
            values = values[finite]
        if self.kind == "finite" or values.shape[0] == 0:
            return first_nonfinite, None
        warm_only = values.shape[0] > BULK_POINTS
        if warm_only:
            values = values[-BULK_TAIL:]
        alarm: str | None = None
        for value in values.tolist():
            reason = self._step(value)
            if reason and not warm_only and alarm is None:
                alarm = reason
        return first_nonfinite, alarm

    def update_one(self, value: float) -> tuple[bool, str | None]:
        """`update` for a single value, without building an array (the Monitor's path)."""
        if not math.isfinite(value):
            first_nonfinite = not self.nonfinite_seen
            self.nonfinite_seen = True
            return first_nonfinite, None
        if self.kind == "finite":
            return False, None
        return False, self._step(value)

    def _step(self, x: float) -> str | None:
        reason = None
        if self.count == 0:
            self.mean, self.dev = x, abs(x) * 0.01
        else:
            scale = max(self.dev, 1e-12 * max(1.0, abs(self.mean)))
            z = (x - self.mean) / scale
            if self.count >= WARMUP_POINTS:
                if self.kind == "jump" and abs(z) > JUMP_SIGMAS:
                    reason = f"{self.name} jumped"
                elif (
                    self.kind == "ratio"
                    and self.last > 0
                    and x > 0
                    and max(x, self.last) > LR_FLOOR * self.peak
                    and max(x / self.last, self.last / x) > LR_RATIO
                ):
                    reason = f"{self.name} changed by more than {LR_RATIO:g}x"
                elif self.kind in ("up", "down"):
                    signed = z if self.kind == "up" else -z
                    self.cusum = max(0.0, self.cusum + signed - 0.5)
                    if self.cusum > CUSUM_LIMIT:
                        self.cusum = 0.0
                        reason = f"{self.name} shifted"
            self.dev += EWMA_ALPHA * (abs(x - self.mean) - self.dev)
            self.mean += EWMA_ALPHA * (x - self.mean)
        self.count += 1
        self.last = x
        self.peak = max(self.peak, abs(x))
        return reason


class Schedule:
    """Decides when a growing run gets its next full analysis (the module docstring's rule).

    The caller feeds each batch of new points (`feed`, or `check` + `decide` per point),
    runs the analysis when a reason comes back (or when `due` gives one later), and says
    so with `analysed`."""

    def __init__(self, growth: float = 0.10, duty: float = 4.0) -> None:
        self.growth = growth
        """Full analysis when the run has grown by this fraction since the last one."""
        self.duty = duty
        """Triggered analyses wait until `duty` x the last analysis' time has passed."""
        self.checks: dict[str, OnlineCheck] = {}
        self.analysed_points = 0
        self.analyses = 0
        self.pending: str | None = None
        """An analysis is wanted for this reason, once the duty limit allows."""
        self.last_end = -math.inf
        self.last_seconds = 0.0

    def check(self, name: str) -> OnlineCheck:
        """The online check of a metric (canonical name), made on first use."""
        found = self.checks.get(name)
        if found is None:
            found = self.checks[name] = OnlineCheck(name)
        return found

    def feed(self, fresh: Mapping[str, FloatArray], points: int) -> str | None:
        """New values per metric, `points` the run's size now: the reason to analyse now,
        if any (an alarm the duty limit holds back is kept in `pending`)."""
        urgent: str | None = None
        alarm: str | None = None
        for name, values in fresh.items():
            first_nonfinite, reason = self.check(name).update(values)
            if first_nonfinite and urgent is None:
                urgent = f"{name} logged a non-finite value"
            if reason and alarm is None:
                alarm = reason
        return self.decide(points, urgent, alarm)

    def decide(self, points: int, urgent: str | None, alarm: str | None) -> str | None:
        """After new points: first data, growth and a first non-finite value (`urgent`)
        analyse now; an online check's `alarm` waits in `pending` for `due`."""
        if self.analyses == 0 or self.analysed_points == 0:
            return "first data"
        if points >= self.analysed_points * (1.0 + self.growth):
            return "growth"
        if urgent:
            return urgent
        if alarm:
            self.pending = alarm
        return None

    def due(self, now: float) -> str | None:
        """The pending reason, once `duty` x the last analysis' time has passed."""
        if self.pending is not None and now >= self.last_end + self.duty * self.last_seconds:
            return self.pending
        return None

    def analysed(self, points: int, started: float, finished: float) -> None:
        """A full analysis of `points` points ran from `started` to `finished`."""
        self.last_seconds = finished - started
        self.last_end = finished
        self.analysed_points = max(points, 1)
        self.pending = None
        self.analyses += 1

    def restart(self) -> None:
        """The run is being read again from its start: forget the checks' state."""
        self.analysed_points = 0
        self.checks.clear()


def finding_key(finding: Finding) -> tuple[str, str, int]:
    """How a finding is recognised across analyses (see the module docstring)."""
    return (finding.detector, finding.metric, finding.step_start)


@dataclass(frozen=True)
class Change:
    """A finding an analysis reported that is news: `new`, or `updated` (its range grew
    or its severity changed; `severity_rose` when it went up)."""

    kind: str
    finding: Finding
    severity_rose: bool = False


class FindingTracker:
    """The findings reported so far, and what a new analysis adds to them."""

    def __init__(self) -> None:
        self.reported: dict[tuple[str, str, int], Finding] = {}

    def changes(self, analysis: Analysis) -> list[Change]:
        """The unsuppressed findings of `analysis` that are new or changed, in report
        order; they become the reported ones."""
        out: list[Change] = []
        for finding in analysis.findings:
            if finding.suppressed is not None:
                continue
            key = finding_key(finding)
            previous = self.reported.get(key)
            if previous is None:
                previous = self._overlapping(finding)
                if previous is not None:
                    del self.reported[finding_key(previous)]
            self.reported[key] = finding
            if previous is None:
                out.append(Change("new", finding))
            elif (
                # Only growth or a severity change is news: titles carry numbers (a ratio)
                # that drift a little with every analysis of the same episode.
                previous.step_end != finding.step_end or previous.severity != finding.severity
            ):
                out.append(Change("updated", finding, finding.severity > previous.severity))
        return out

    def _overlapping(self, finding: Finding) -> Finding | None:
        for old in self.reported.values():
            if (
                old.detector == finding.detector
                and old.metric == finding.metric
                and old.step_start <= finding.step_end
                and finding.step_start <= old.step_end
            ):
                return old
        return None


def live_run_meta(meta: dict[str, object], final: bool) -> None:
    """Mark a run still growing (`meta["in_progress"]`) or finished: detectors that judge
    "the end of the run" (a warmup that never ended) wait for the final analysis."""
    if final:
        meta.pop("in_progress", None)
    else:
        meta["in_progress"] = True


__all__ = [
    "Change",
    "FindingTracker",
    "OnlineCheck",
    "Schedule",
    "finding_key",
    "live_run_meta",
]
