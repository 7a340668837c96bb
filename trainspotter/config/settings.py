"""The validated settings of `.trainspotter.yml` and the facts other modules share.

`Config` is what the gate, `watch` and `analyze --config` use: the detector selection and
parameters for `analyze`, the reader forced per log pattern, the `ignore` rules applied
to an analysis, and the `report` section. Also here: the matching rules of `ignore` entries
and `format` patterns (`path_pattern_regex`), and the names each of the parser, the schema
and the CLI needs (`GATE_OUTPUTS`, `ARTIFACT_NAME_FORBIDDEN`), stated once.

This module parses no YAML (`parse.py`) and generates no documentation (`schema.py`,
`init_file.py`, `reference.py`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from trainspotter.analysis import Analysis, AnalysisSettings
from trainspotter.compare.rules import ThresholdRule
from trainspotter.detectors import DETECTORS
from trainspotter.errors import TrainspotterError
from trainspotter.model import Finding, Severity

CONFIG_NAMES = (".trainspotter.yml", ".trainspotter.yaml")
"""File names searched for in the working folder, in this order."""

GATE_OUTPUTS: tuple[str, ...] = (
    "annotations",
    "summary",
    "html",
    "json",
    "comment",
    "sarif",
    "codequality",
    "junit",
)
"""What the gate can write: workflow annotations (stdout, GitHub only), the job-summary
Markdown, one HTML page per log, the combined JSON, the PR-comment Markdown, and SARIF,
GitLab Code Quality and JUnit files."""

DEFAULT_OUTPUTS: tuple[str, ...] = ("annotations", "summary", "html", "json", "comment")
DEFAULT_REPORT_DIR = "trainspotter-report"
DEFAULT_ARTIFACT_NAME = "trainspotter-report"
SEVERITY_LABELS: tuple[str, ...] = tuple(s.label for s in Severity)
RESERVED_DETECTOR_KEYS = ("enabled", "severity")

ARTIFACT_NAME_FORBIDDEN = '"<>:|*?\\/\r\n'
"""Characters a GitHub Actions artifact name may not hold (the parser rejects them, the
schema's `pattern` excludes them)."""


class ConfigError(TrainspotterError):
    """A config file that cannot be used: `FILE:LINE: KEY: PROBLEM`, exit code 2."""

    def __init__(self, source: str, line: int | None, key: str, problem: str) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")
        self.source = source
        self.line = line
        self.key = key
        self.problem = problem


class ConfigErrors(ConfigError):
    """Every mistake in one config file, sorted by line. It reads as the first one, plus
    how many more (a one-line error); `errors` holds them all (`check-config` prints each
    on its own line)."""

    def __init__(self, errors: list[ConfigError]) -> None:
        first = errors[0]
        super().__init__(first.source, first.line, first.key, first.problem)
        self.errors = errors
        if len(errors) > 1:
            more = len(errors) - 1
            self.args = (
                f"{self.args[0]} (and {more} more mistake{'s' if more > 1 else ''}: "
                f"trainspotter check-config {first.source} lists all)",
            )


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class DetectorSettings:
    """One detector's entry under `detectors:`."""

    enabled: bool = True
    """Run this detector at all."""
    severity: Severity | None = None
    """Replaces the severity of every finding of this detector; None keeps its own."""
    params: Any = None
    """The detector's `Params` instance with the configured values; None means defaults."""


@dataclass(frozen=True)
class IgnoreRule:
    """One `ignore:` entry. A matching finding is kept and marked suppressed (with the
    reason) in every report; it no longer counts towards the gate."""

    detector: str
    """A detector id, or `*` for any."""
    reason: str
    """Why it is acceptable: shown next to the suppressed finding."""
    metric: str | None = None
    """A metric name or fnmatch pattern (`eval/*`); None matches every metric."""
    steps: tuple[int | None, int | None] = (None, None)
    """Inclusive step range the finding must lie within; None is open-ended."""
    path: str | None = None
    """A glob the log's displayed path must match (`runs/**`); None matches every log."""
    line: int = 0
    """Where the entry is in the config file (for messages)."""

    def matches(self, finding: Finding, log_path: str) -> bool:
        """Whether this rule suppresses `finding` of the log displayed as `log_path`."""
        if self.detector != "*" and finding.detector != self.detector:
            return False
        if self.metric is not None and not fnmatchcase(finding.metric, self.metric):
            return False
        low, high = self.steps
        if low is not None and finding.step_start < low:
            return False
        if high is not None and finding.step_end > high:
            return False
        return self.path is None or path_matches(self.path, log_path)


@dataclass(frozen=True)
class ReportSettings:
    """The `report:` section: what the gate writes and how the Action publishes it."""

    outputs: tuple[str, ...] = DEFAULT_OUTPUTS
    directory: str = DEFAULT_REPORT_DIR
    artifact_name: str = DEFAULT_ARTIFACT_NAME
    comment: bool = True


@dataclass(frozen=True)
class Config:
    """A validated `.trainspotter.yml` (or the defaults when there is none)."""

    source: str | None = None
    """The file it came from, as displayed; None for the built-in defaults."""
    paths: tuple[str, ...] = ()
    """Glob patterns of the logs the gate analyses."""
    format: str | None = None
    """A reader id forced for every log; None lets each log's content decide."""
    formats: Mapping[str, str] = field(default_factory=dict)
    """Pattern -> reader id, for the logs found through (or matching) that pattern."""
    fail_on: Severity = Severity.ERROR
    detectors: Mapping[str, DetectorSettings] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    ignore: tuple[IgnoreRule, ...] = ()
    report: ReportSettings = field(default_factory=ReportSettings)
    allow_empty: bool = False
    baseline: str | None = None
    """The stored run (a log path) the gate compares every log with; None: no baseline."""
    rules: tuple[ThresholdRule, ...] = ()
    """Absolute bounds on final values (`rules:`), checked by the gate and `compare`."""

    def analysis_settings(self) -> AnalysisSettings:
        """The detector selection, parameters and severity overrides for `analyze`."""
        enabled = frozenset(
            name for name in DETECTORS if self.detectors.get(name, DetectorSettings()).enabled
        )
        params = {n: s.params for n, s in self.detectors.items() if s.params is not None}
        severity = {n: s.severity for n, s in self.detectors.items() if s.severity is not None}
        return AnalysisSettings(enabled=enabled, params=params, severity=severity)

    def format_for(self, pattern: str, log_path: str) -> str | None:
        """The reader id forced for a log found through `pattern` (displayed as
        `log_path`): a `format` entry keyed by that pattern, else the first entry whose
        pattern matches the log's path, else the global `format`, else None (sniff)."""
        if pattern in self.formats:
            return self.formats[pattern]
        for key, fmt in self.formats.items():
            if path_matches(key, log_path):
                return fmt
        return self.format

    def suppress(self, analysis: Analysis) -> Analysis:
        """The analysis with every finding matched by an `ignore` rule marked suppressed."""
        if not self.ignore:
            return analysis
        path = analysis.run.source_path
        changed: list[Finding] = []
        for finding in analysis.findings:
            rule = next((r for r in self.ignore if r.matches(finding, path)), None)
            if rule is not None and finding.suppressed is None:
                finding = dataclasses.replace(finding, suppressed=rule.reason)
            changed.append(finding)
        return dataclasses.replace(analysis, findings=changed)


# --------------------------------------------------------------------------- patterns


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable glob, or None if it is."""
    if not pattern.strip():
        return "empty pattern"
    if "\x00" in pattern:
        return "contains a NUL character"
    for part in re.split(r"[/\\]", pattern):
        if "**" in part and part != "**":
            return f"'**' must be a whole path component (e.g. 'logs/**/*.csv'), not {part!r}"
    depth = 0
    for char in pattern:
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
    if depth:
        return "unclosed '[' (a character class needs its ']')"
    return None


@lru_cache(maxsize=256)
def path_pattern_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a path glob: `**` spans folders, `*` and `?` stay within one name,
    `[...]` is a character class. Matched against forward-slash paths."""
    pattern = pattern.replace("\\", "/")
    pattern = pattern.removeprefix("./")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def path_matches(pattern: str, path: str) -> bool:
    """Whether a displayed log path (or a folder above it) matches a path glob."""
    normalised = path.replace("\\", "/").removeprefix("./")
    regex = path_pattern_regex(pattern)
    if regex.match(normalised):
        return True
    # A pattern naming a folder covers the logs inside it (`runs/a` covers `runs/a/x.csv`).
    parts = normalised.split("/")
    return any(regex.match("/".join(parts[:n])) for n in range(1, len(parts)))


__all__ = [
    "ARTIFACT_NAME_FORBIDDEN",
    "CONFIG_NAMES",
    "DEFAULT_ARTIFACT_NAME",
    "DEFAULT_OUTPUTS",
    "DEFAULT_REPORT_DIR",
    "GATE_OUTPUTS",
    "RESERVED_DETECTOR_KEYS",
    "SEVERITY_LABELS",
    "Config",
    "ConfigError",
    "ConfigErrors",
    "DetectorSettings",
    "IgnoreRule",
    "ReportSettings",
    "glob_problem",
    "path_matches",
    "path_pattern_regex",
]
