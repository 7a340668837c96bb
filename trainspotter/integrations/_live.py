"""What both callbacks do with the metrics a framework logs: feed a `Monitor`, say each
new finding in one line, decide whether to stop, and write the reports at the end.

Every string that comes from the log (metric names, titles) goes through
`report.escape.terminal_text` before it reaches the framework's logger.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from trainspotter.api import Analysis, ConfigLike
from trainspotter.errors import TrainspotterError
from trainspotter.model import Finding, Severity
from trainspotter.monitor import Monitor
from trainspotter.readers.memory import as_number
from trainspotter.report.escape import terminal_text
from trainspotter.report.terminal import finding_place

REPORT_STEM = "trainspotter-report"
"""The reports are written as `<folder>/trainspotter-report.json` and `.html`."""


def missing_framework(module: str, framework: str, extra: str) -> ImportError:
    """The ImportError for an integration whose framework is not installed."""
    return ImportError(
        f"{module} needs {framework}, which is not installed: pip install 'trainspotter[{extra}]'"
    )


def finding_line(finding: Finding) -> str:
    """One line for the framework's logger."""
    return (
        f"trainspotter: {finding.severity.label}: {terminal_text(finding.title)} "
        f"({finding_place(finding)})"
    )


class LiveCheck:
    """A Monitor plus the callbacks' options (see `TrainspotterCallback` in each module)."""

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        stop_on: Severity | str | None = None,
        name: str = "training run",
        source_format: str = "monitor",
        write_reports: bool = True,
        say: Callable[[Severity, str], None] | None = None,
    ) -> None:
        self.config = config
        self.stop_on = Severity.parse(stop_on) if isinstance(stop_on, str) else stop_on
        self.name = name
        self.source_format = source_format
        self.write_reports = write_reports
        self.say = say
        self.monitor = Monitor(config, name=name, source_format=source_format)
        self.findings: list[Finding] = []
        """Every finding reported so far, in the order reported."""
        self.stopped_by: Finding | None = None
        """The finding that asked the framework to stop, if one did."""

    def start(self, max_steps: int | None) -> None:
        """A new run: a fresh Monitor that knows the planned length (when positive)."""
        planned = max_steps if max_steps is not None and max_steps > 0 else None
        self.monitor = Monitor(
            self.config, name=self.name, max_steps=planned, source_format=self.source_format
        )
        self.findings = []
        self.stopped_by = None

    def record(self, step: int, metrics: Mapping[str, object]) -> bool:
        """Feed the numeric metrics logged at `step`; report what is news; return whether
        training should stop (a finding at or above `stop_on`)."""
        numbers = {
            k: v for k, v in ((k, as_number(v)) for k, v in metrics.items()) if v is not None
        }
        if not numbers:
            return False
        news = self.monitor.log(step, wall_time=time.time(), **numbers)
        stop = False
        for finding in news:
            self._report(finding)
            if self.stop_on is not None and finding.severity >= self.stop_on:
                stop = True
                if self.stopped_by is None:
                    self.stopped_by = finding
                    if self.say is not None:
                        self.say(
                            finding.severity,
                            f"trainspotter: stopping training at step {step}: a finding at "
                            f"or above {self.stop_on.label}",
                        )
        return stop

    def _report(self, finding: Finding) -> None:
        """Keep a finding that is news and say it on the framework's logger."""
        self.findings.append(finding)
        if self.say is not None:
            self.say(finding.severity, finding_line(finding))

    def finish(self, folder: str | Path | None) -> Analysis | None:
        """The final analysis, with the JSON and HTML reports written into `folder` (when
        given and `write_reports`); None when nothing was logged."""
        try:
            analysis = self.monitor.finish()
        except TrainspotterError:
            return None  # nothing logged: no report to write
        for finding in self.monitor.news_at_finish:
            self._report(finding)
        if folder is not None and self.write_reports:
            target = Path(folder)
            target.mkdir(parents=True, exist_ok=True)
            (target / f"{REPORT_STEM}.json").write_text(analysis.to_json(), encoding="utf-8")
            (target / f"{REPORT_STEM}.html").write_text(analysis.to_html(), encoding="utf-8")
        return analysis


class CallbackBase:
    """What the framework callbacks share: their options (`config`, `stop_on`,
    `write_reports`), the `LiveCheck`, and what they expose after training (`findings`,
    `stopped_by`, `analysis`). A subclass sets `say`: how a line reaches its logger, and
    `source_format`: the reader name of its framework's logs, so fixes name the framework."""

    source_format = "monitor"

    @staticmethod
    def say(severity: Severity, line: str) -> None:
        """Write one line to the framework's logger."""

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        stop_on: Severity | str | None = None,
        write_reports: bool = True,
    ) -> None:
        self.live = LiveCheck(
            config,
            stop_on=stop_on,
            write_reports=write_reports,
            say=type(self).say,
            source_format=self.source_format,
        )
        self.analysis: Analysis | None = None
        """The final analysis, after training ended."""

    @property
    def findings(self) -> list[Finding]:
        """The findings reported while training, in the order reported."""
        return self.live.findings

    @property
    def stopped_by(self) -> Finding | None:
        """The finding that stopped training, if one did."""
        return self.live.stopped_by
