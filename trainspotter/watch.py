"""`trainspotter watch`: follow growing training logs and report findings as they appear.

What it does: every `--interval` seconds it expands the paths and globs again (new files
that match are picked up, a path that does not exist yet is waited for), reads only what
was appended to each log (`readers/incremental.py`: complete lines / records only, a
half-written last line or JSON file waits for the next poll, truncation and rotation start
over), and prints each finding that is new, or that grew (the same episode over a longer
range or at a higher severity), once. `--fail-on LEVEL` stops at the first finding at or
above LEVEL; `--exec CMD ...` runs CMD (an argument list, never a shell) for every new
finding, and for a finding whose severity rose. What is printed and how hooks are run is
`trainspotter.watch_output`.

Design: the same findings as `analyze`, at a cost per poll that grows with the new data.
The nine detectors are batch algorithms over the whole series (robust windows that scale
with the number of points), and they belong to their authors: rewriting each as an online
algorithm would fork their statistics, and a finding must not depend on how the log was
cut into polls. So watch never reports anything a batch analysis did not find; it only
decides *when* to run the batch analysis, and it makes that decision in O(new):

1. **Reading is O(new).** Appended bytes are parsed and appended to capacity-doubling
   arrays (amortised O(new)); `trainer_state.json`, rewritten whole by the Trainer, is
   re-read only when its size, mtime or inode changed (that read is O(file): the format
   leaves no choice).
2. **Online checks are O(new)** per metric, on the new values only, and **full analyses
   are amortised O(1) per point**: `trainspotter.online` (shared with `Monitor`) holds the
   checks and the rule (first data, 10% growth, a first non-finite value at once, an
   online check's alarm or a poll that finds the log idle after growth under a duty
   limit). Watch adds (e) an analysis at exit. A run that logs a point every poll
   interval therefore costs O(new) per poll plus the amortised analyses.
3. **The findings watch ends with are exactly those of `analyze`** on the same final file:
   the final poll reads the file to its end as `read_log` does (a last line without a
   newline included), the Run is built by the readers' own code, and the same check runs
   on it (`batch.check_run`; tested on the bundled examples fed in pieces).

Findings are matched across analyses by `online.FindingTracker`, so a growing episode is
reported as updated, not again. A finding that a
later analysis no longer reports is not retracted in the stream; the summary at exit lists
the final analysis.

Exit codes, after the final analysis and the summary: the rule every front end shares
(`trainspotter.verdict`) on the final findings, with fail_on from `--fail-on`, else the
config's `fail_on`, else error: 2 when a log could not be read at the end or no log ever
appeared, else 1 when a final finding is at or above fail_on, else 0. Then 130 on Ctrl-C
(SIGINT) and 143 on SIGTERM: an interrupted watch is not a passed gate, and the shell
convention (128 + signal) lets a wrapper script tell "stopped" from "clean".
"""

from __future__ import annotations

import math
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from trainspotter.analysis import Analysis
from trainspotter.batch import check_run
from trainspotter.config import Config
from trainspotter.discover import LogTarget, expand_patterns
from trainspotter.errors import InputError, UsageError
from trainspotter.model import Run, Severity
from trainspotter.online import FindingTracker, Schedule, finding_key, live_run_meta
from trainspotter.readers import log_root, require_data, resolve
from trainspotter.readers.base import Growth, ReadOptions, Tail
from trainspotter.report.escape import terminal_text
from trainspotter.verdict import exit_code
from trainspotter.watch_output import FindingEvent, WatchOutput, summary_text

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

# --------------------------------------------------------------------------- one log


@dataclass
class _Log:
    """The state of one followed log."""

    target: LogTarget
    tail: Tail | None = None
    problem: str | None = None
    """Why the log cannot be read right now (shown in the summary)."""
    problem_reported: str | None = None
    last_size: int | None = None
    points: int = 0
    last_step: int | None = None
    dirty: bool = False
    """Data arrived since the last analysis."""
    schedule: Schedule = field(default_factory=Schedule)
    analysis: Analysis | None = None
    tracker: FindingTracker = field(default_factory=FindingTracker)

    @property
    def analyses(self) -> int:
        """Full analyses run on this log so far."""
        return self.schedule.analyses

    @property
    def display(self) -> str:
        return self.target.display


# --------------------------------------------------------------------------- the watcher


@dataclass(frozen=True)
class WatchOptions:
    """Everything `trainspotter watch` was told."""

    patterns: tuple[str, ...]
    config: Config
    fmt: str | None = None
    run_name: str | None = None
    interval: float = 2.0
    fail_on: Severity | None = None
    exec_command: tuple[str, ...] = ()
    exec_timeout: float = 60.0
    growth: float = 0.10
    """Full analysis when a log has grown by this fraction since the last one."""
    duty: float = 4.0
    """Triggered analyses wait until `duty` x the last analysis' time has passed."""
    idle_exit: float | None = None
    """Stop (exit 0) once no log has grown for this many seconds."""
    base: Path = Path(".")
    color: bool = False
    width: int = 80
    """The column to wrap printed findings at."""


class Watcher:
    """Follows the logs; `poll()` once, or `run()` until stopped (see the module doc)."""

    def __init__(
        self,
        options: WatchOptions,
        out: TextIO,
        err: TextIO,
        *,
        status: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self.output = WatchOutput(
            out,
            err,
            status=status,
            color=options.color,
            width=options.width,
            exec_command=options.exec_command,
            exec_timeout=options.exec_timeout,
        )
        self.clock = clock
        self.logs: dict[Path, _Log] = {}
        self.pattern_problems: dict[str, str] = {}
        self.polls = 0
        self.failed = False
        """A finding at or above --fail-on was reported (watching stops)."""
        self.last_poll_seconds = 0.0
        self.last_growth = clock()
        self.shown_from = min(self.fail_on, Severity.WARNING)
        """Findings below this are not printed or hooked (info, unless fail_on is info)."""

    # ---- following

    def _targets(self) -> list[LogTarget]:
        collected = expand_patterns(
            self.options.patterns,
            base=self.options.base,
            allow_empty=True,
            config=self.options.config,
        )
        for failure in collected.failures:  # a URL's listing failed: say so once, keep polling
            if self.pattern_problems.get(failure.display) != failure.reason:
                self.pattern_problems[failure.display] = failure.reason
                self.output.problem(failure.display, failure.reason)
        return collected.targets

    def _open(self, log: _Log) -> Tail | None:
        """The Tail for a log once its format can be told (None while waiting)."""
        target = log.target
        path = target.path
        display = target.display
        if path.is_file() and log_root(path) is None:  # a text log (not a TensorBoard piece)
            size = path.stat().st_size
            if size == 0:
                log.problem = "waiting: the file is empty"
                return None
            with path.open("rb") as handle:
                head = handle.read(4096)
            # Sniff only a complete first line (or a file that stopped growing): a cut
            # first line can look like another format.
            if b"\n" not in head and size != log.last_size:
                log.last_size = size
                log.problem = "waiting: no complete line yet"
                return None
        config = self.options.config
        fmt = self.options.fmt or config.format_for(target.pattern, display)
        reader, resolved = resolve(path, fmt, display, follow=True)
        read_options = ReadOptions(
            run_name=self.options.run_name, aliases=dict(config.aliases), display_path=display
        )
        return reader.open_tail(resolved, display, read_options)

    def poll(self, final: bool = False) -> list[FindingEvent]:
        """One pass over every log: read what is new, analyse when due, report."""
        started = self.clock()
        for target in self._targets():
            key = target.path.resolve()
            if key not in self.logs:
                schedule = Schedule(self.options.growth, self.options.duty)
                self.logs[key] = _Log(target, schedule=schedule)
        events: list[FindingEvent] = []
        for log in self.logs.values():
            events.extend(self._poll_log(log, final))
            if self.failed and not final:
                break
        self.polls += 1
        self.last_poll_seconds = self.clock() - started
        self.output.show_status(list(self.logs.values()), self.last_poll_seconds)
        return events

    def _poll_log(self, log: _Log, final: bool) -> list[FindingEvent]:
        now = self.clock()
        try:
            if log.tail is None:
                log.tail = self._open(log)
                if log.tail is None:
                    return []
            growth = log.tail.poll(final=final)
        except InputError as exc:
            self._problem(log, exc.problem)
            if final:
                return self._analyze(log, "final", now) if log.tail is not None else []
            return []
        except OSError as exc:
            self._problem(log, f"cannot read: {exc.strerror or exc}")
            return []
        log.problem = None
        reason = self._absorb(log, growth, now)
        if final:
            reason = "final"
        elif reason is None:
            reason = log.schedule.due(now)
        if reason is None:
            return []
        return self._analyze(log, reason, now)

    def _absorb(self, log: _Log, growth: Growth, now: float) -> str | None:
        """Take one poll's growth; return the reason to analyse now, if any (and note a
        deferred one in the schedule's `pending`)."""
        schedule = log.schedule
        if growth.restarted:
            schedule.restart()
            self.output.line(
                f"{terminal_text(log.target.display)}: the log was replaced or "
                "truncated: reading it again from the start"
            )
        tail = log.tail
        assert tail is not None
        log.points = tail.points
        if growth.last_step is not None:
            log.last_step = growth.last_step
        if not growth.points:
            if log.dirty and schedule.pending is None:
                schedule.pending = "idle"
            return None
        self.last_growth = now
        log.dirty = True
        return schedule.feed(growth.fresh, log.points)

    def _analyze(self, log: _Log, reason: str, now: float) -> list[FindingEvent]:
        tail = log.tail
        if tail is None:
            return []
        started = self.clock()
        try:
            run = tail.run()
            if run is None:
                return []
            require_data(run, log.target.display)  # nothing logged yet: wait, as for a file
            analysis = self._analysis_of(run, final=reason == "final")
        except InputError as exc:
            if reason == "final":
                self._problem(log, exc.problem)
            else:
                log.problem = f"waiting: {exc.problem}"
            log.schedule.pending = None
            return []
        log.schedule.analysed(log.points, started, self.clock())
        log.dirty = False
        log.analysis = analysis
        return self._diff(log, analysis)

    def _analysis_of(self, run: Run, final: bool) -> Analysis:
        live_run_meta(run.meta, final)
        return check_run(run, self.options.config)

    def _diff(self, log: _Log, analysis: Analysis) -> list[FindingEvent]:
        events: list[FindingEvent] = []
        for change in log.tracker.changes(analysis):
            finding = change.finding
            if finding.severity < self.shown_from:
                continue  # info notes (a converged tail) are kept for the summary, not printed
            event = FindingEvent(change.kind, log.target.display, finding, change.severity_rose)
            events.append(event)
            self.output.finding(event)
            fail_on = self.options.fail_on
            if fail_on is not None and finding.severity >= fail_on:
                self.failed = True
        return events

    def _problem(self, log: _Log, problem: str) -> None:
        log.problem = problem
        if log.problem_reported != problem:
            log.problem_reported = problem
            self.output.problem(log.target.display, problem)

    # ---- running

    def finish(self) -> list[FindingEvent]:
        """The final poll: read every log to its end and analyse it as `analyze` would."""
        return self.poll(final=True)

    def analyses(self) -> list[Analysis]:
        """The last analysis of each log, in the order the logs were found."""
        return [log.analysis for log in self.logs.values() if log.analysis is not None]

    def summary(self, why: str) -> str:
        logs = list(self.logs.values())
        return summary_text(why, self.polls, logs, self.fail_on, self.options.width)

    @property
    def fail_on(self) -> Severity:
        """`--fail-on`, else the config's `fail_on` (as `analyze` and `gate`)."""
        return self.options.fail_on or self.options.config.fail_on

    def unchecked(self) -> int:
        """Logs that could not be checked: never readable, or none ever appeared."""
        if not self.logs:
            return 1
        return sum(1 for log in self.logs.values() if log.problem and log.analysis is None)

    def exit_code(self) -> int:
        """The shared exit rule on the final findings (see the module docstring)."""
        return exit_code(self.analyses(), self.fail_on, unchecked=self.unchecked())

    def run(self, sleep: Callable[[float], None] = time.sleep) -> int:
        """Poll until `--fail-on` fires, `--idle-exit` passes, or a signal; then finish."""
        why = "stopped"
        code: int | None = None
        try:
            while True:
                self.poll()
                if self.failed:
                    level = self.options.fail_on.label if self.options.fail_on else ""
                    why = f"stopped at a finding at or above {level}"
                    break
                idle = self.options.idle_exit
                if idle is not None and self.clock() - self.last_growth >= idle:
                    why = f"no log grew for {idle:g} s"
                    break
                sleep(self.options.interval)
        except KeyboardInterrupt as exc:
            code = EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
            why = "terminated" if code == EXIT_TERMINATED else "interrupted (Ctrl-C)"
        try:
            self.finish()
        except KeyboardInterrupt:
            code = code or EXIT_INTERRUPTED
        self.output.clear_status()
        self.output.out.write(self.summary(why))
        self.output.out.flush()
        return code if code is not None else self.exit_code()


class Terminated(KeyboardInterrupt):
    """Raised by the SIGTERM handler `trainspotter watch` installs: stop like Ctrl-C."""


def watch(options: WatchOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """`trainspotter watch`: run a Watcher with SIGTERM handled like Ctrl-C."""
    out = out or sys.stdout
    err = err or sys.stderr
    status = bool(getattr(err, "isatty", lambda: False)())

    def on_term(signum: int, frame: object) -> None:
        raise Terminated()

    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread
        previous = None
    try:
        return Watcher(options, out, err, status=status).run()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def validate(options: WatchOptions) -> WatchOptions:
    """Reject impossible option values with a one-line UsageError."""
    if not options.patterns:
        raise UsageError("watch: give at least one PATH or GLOB")
    if not (options.interval > 0 and math.isfinite(options.interval)):
        raise UsageError("--interval must be a positive number of seconds")
    if options.idle_exit is not None and not options.idle_exit > 0:
        raise UsageError("--idle-exit must be a positive number of seconds")
    if options.exec_command == ("",) or (
        options.exec_command and not options.exec_command[0].strip()
    ):
        raise UsageError("--exec needs a command")
    return options


__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "FindingEvent",
    "WatchOptions",
    "Watcher",
    "finding_key",
    "validate",
    "watch",
]
