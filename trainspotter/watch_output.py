"""What `trainspotter watch` prints and runs: finding lines, `--exec` hooks, the status
line and the summary at exit (the following and deciding is `trainspotter.watch`).

Every string printed that comes from a log goes through `report.escape.terminal_text`;
colours are the terminal report's (`report.terminal.Style`). A hook is an argument list,
never a shell command: it gets the finding's JSON (`report/json_report.finding_dict`) on
stdin and `TRAINSPOTTER_EVENT`, `TRAINSPOTTER_LOG`, `TRAINSPOTTER_SEVERITY`,
`TRAINSPOTTER_DETECTOR` and `TRAINSPOTTER_METRIC` in its environment. On a TTY (stderr) a
status line shows the logs followed, the points and last step read and the time of the
last poll; when stderr is piped nothing but plain lines is written. A finding is printed
as `analyze` prints it tersely (title, where, its message's first sentence), wrapped to
the terminal's width; the summary at exit leads with `analyze`'s verdict line per log.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import wording
from trainspotter.report.base import RenderOptions
from trainspotter.report.escape import terminal_text
from trainspotter.report.json_report import finding_dict
from trainspotter.report.terminal import Style, finding_place, first_sentence, verdict_lines


@dataclass(frozen=True)
class FindingEvent:
    """A finding to report: `new`, or `updated` (grown, or its severity changed)."""

    kind: str
    log: str
    finding: Finding
    severity_rose: bool = False


class LogView(Protocol):
    """What the status line and the summary show of one followed log."""

    @property
    def display(self) -> str: ...
    @property
    def points(self) -> int: ...
    @property
    def last_step(self) -> int | None: ...
    @property
    def analysis(self) -> Analysis | None: ...
    @property
    def problem(self) -> str | None: ...


class WatchOutput:
    """The printing side of a Watcher."""

    def __init__(
        self,
        out: TextIO,
        err: TextIO,
        *,
        status: bool = False,
        color: bool = False,
        width: int = wording.PIPED_WIDTH,
        exec_command: Sequence[str] = (),
        exec_timeout: float = 60.0,
    ) -> None:
        self.out = out
        self.err = err
        self.status = status
        self.style = Style(color)
        self.width = width
        self.exec_command = tuple(exec_command)
        self.exec_timeout = exec_timeout
        self._status_shown = False

    def clear_status(self) -> None:
        if self._status_shown:
            self.err.write("\r\x1b[2K")
            self.err.flush()
            self._status_shown = False

    def line(self, text: str) -> None:
        """One message line on stderr (`text` already escaped)."""
        self.clear_status()
        self.err.write(f"trainspotter watch: {text}\n")
        self.err.flush()

    def problem(self, display: str, problem: str) -> None:
        self.line(f"{terminal_text(display)}: {terminal_text(problem)}")

    def finding(self, event: FindingEvent) -> None:
        """Print a finding; run the hook for a new one or one whose severity rose."""
        self.clear_status()
        finding = event.finding
        label = self.style.severity(finding.severity)
        what = "NEW" if event.kind == "new" else "UPDATED"
        head = wording.wrap(
            f"{what:7s} {finding.severity.label:7s} {terminal_text(event.log)}: "
            f"{terminal_text(finding.title)} ({finding_place(finding)})",
            self.width,
            " " * 8,
            first_indent="",
        )
        head[0] = f"{what:7s} {label}" + head[0][15:]
        body = wording.wrap(terminal_text(first_sentence(finding.message)), self.width, " " * 8)
        self.out.write("\n".join([*head, *body]) + "\n")
        self.out.flush()
        if self.exec_command and (event.kind == "new" or event.severity_rose):
            self._run_hook(event)

    def _run_hook(self, event: FindingEvent) -> None:
        finding = event.finding
        payload = json.dumps(finding_dict(finding), ensure_ascii=False).encode("utf-8")
        env = dict(os.environ)
        env.update(
            {
                "TRAINSPOTTER_EVENT": event.kind,
                "TRAINSPOTTER_LOG": terminal_text(event.log),
                "TRAINSPOTTER_SEVERITY": finding.severity.label,
                "TRAINSPOTTER_DETECTOR": finding.detector,
                "TRAINSPOTTER_METRIC": terminal_text(finding.metric),
            }
        )
        command = list(self.exec_command)
        try:
            done = subprocess.run(  # an argument list: no shell ever parses log text
                command,
                input=payload,
                env=env,
                timeout=self.exec_timeout,
                check=False,
            )
        except FileNotFoundError:
            self.line(f"--exec: command not found: {terminal_text(command[0])}")
            return
        except subprocess.TimeoutExpired:
            self.line(f"--exec: {terminal_text(command[0])} timed out (killed)")
            return
        except OSError as exc:
            self.line(f"--exec: cannot run {terminal_text(command[0])}: {exc.strerror}")
            return
        if done.returncode != 0:
            self.line(f"--exec: {terminal_text(command[0])} exited {done.returncode}")

    def show_status(self, logs: Sequence[LogView], poll_seconds: float) -> None:
        if not self.status:
            return
        points = sum(log.points for log in logs)
        steps = [log.last_step for log in logs if log.last_step is not None]
        last = f", last {wording.step(max(steps))}" if steps else ""
        stamp = time.strftime("%H:%M:%S")
        text = (
            f"watching {wording.count(len(logs), 'log')}: {wording.count(points, 'point')}{last}; "
            f"last poll {stamp} ({poll_seconds * 1000:.0f} ms)"
        )
        self.err.write("\r\x1b[2K" + text[:200])
        self.err.flush()
        self._status_shown = True


def summary_text(
    why: str,
    polls: int,
    logs: Sequence[LogView],
    fail_on: Severity = Severity.ERROR,
    width: int = wording.PIPED_WIDTH,
) -> str:
    """The summary at exit: a verdict line per log (as `analyze` prints it), then its
    final findings one line each (or why it has none)."""
    lines = [
        f"trainspotter watch: {why} after {wording.count(polls, 'poll')}; "
        f"{wording.count(len(logs), 'log')}"
    ]
    if not logs:
        lines.append("  no log appeared")
    options = RenderOptions(fail_on=fail_on, width=width - 2)
    for log in logs:
        name = terminal_text(log.display)
        step = f", last {wording.step(log.last_step)}" if log.last_step is not None else ""
        if log.analysis is None:
            lines.append(f"  {name}: {terminal_text(log.problem or 'nothing read')}")
            continue
        lines.extend("  " + line for line in verdict_lines(log.analysis, options, Style(False)))
        lines.append(f"    {wording.count(log.points, 'point')} read{step}")
        if log.problem:
            lines.append(f"    {terminal_text(log.problem)}")
        for finding in log.analysis.findings:
            if finding.suppressed is None:
                text = (
                    f"{finding.id} {finding.severity.label:7s} {terminal_text(finding.title)} "
                    f"({finding_place(finding)})"
                )
                lines.extend(wording.wrap(text, width, " " * 6, first_indent="    "))
    return "\n".join(lines) + "\n"


__all__ = ["FindingEvent", "LogView", "WatchOutput", "summary_text"]
