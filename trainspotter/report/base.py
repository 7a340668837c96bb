"""The interface every report format satisfies.

A report renders the analyses of one or more logs (each a `Run` plus its ordered, linked
findings) to text. Reports see only `Analysis` objects: never files, readers or
detectors, so two formats rendered from the same analyses cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from trainspotter.analysis import Analysis
from trainspotter.model import Severity


@dataclass(frozen=True)
class RenderOptions:
    """How to render: colour, width, the gate's level, how much detail."""

    color: bool = False
    """ANSI colours (terminal only); off when piped or NO_COLOR is set."""
    fail_on: Severity = Severity.ERROR
    """The gate's level: formats that mark failures (JUnit, headlines) use it."""
    verbose: bool = False
    """Terminal: every finding in full (evidence, every fix), the checks and metrics."""
    quiet: bool = False
    """Terminal: only the verdict line of each log."""
    finding: str | None = None
    """Terminal: show only this finding id, in full (`--finding F2`)."""
    width: int = 80
    """Terminal: the column to wrap at (`wording.terminal_width`)."""


class ReportFormat(Protocol):
    """One output format."""

    name: str
    """The id used by `--output`."""
    description: str

    def render(self, analyses: Sequence[Analysis], options: RenderOptions) -> str:
        """The whole report as text."""
        ...


class TextReport:
    """A format whose text is one function of the analyses and the gate's level
    (`fail_on`): HTML, Markdown, GitHub annotations, JUnit. Colour, width and the detail
    flags are the terminal report's and do not reach it."""

    def __init__(
        self, name: str, description: str, text: Callable[[Sequence[Analysis], Severity], str]
    ) -> None:
        self.name = name
        self.description = description
        self.text = text

    def render(self, analyses: Sequence[Analysis], options: RenderOptions) -> str:
        return self.text(analyses, options.fail_on)


class JsonDocumentReport:
    """A format that is one JSON document built by `document` (JSON, SARIF, GitLab Code
    Quality): indented, newline-terminated, and strict, so a NaN or infinity that slipped
    into a document is an error here rather than a file other tools reject."""

    def __init__(
        self, name: str, description: str, document: Callable[[Sequence[Analysis]], Any]
    ) -> None:
        self.name = name
        self.description = description
        self.document = document

    def render(self, analyses: Sequence[Analysis], options: RenderOptions) -> str:
        return json.dumps(self.document(analyses), indent=2, allow_nan=False) + "\n"
