"""The report registry: one module per output format; adding one is a module and a line.

Shared by all formats: `common.py` (counting, ordering, paths, fingerprints, detector
docs) and `escape.py` (one escaping function per sink). The HTML charts are chosen by
`html_charts.py` and drawn by `svg_chart.py` with `axes.py` (ticks, scales) and
`downsample.py` (M4); the Markdown report's loss chart is a Mermaid block
(`mermaid_chart.py`).
"""

from __future__ import annotations

from trainspotter.report import (
    codequality,
    github,
    html,
    json_report,
    junit,
    markdown,
    sarif,
    terminal,
)
from trainspotter.report.base import RenderOptions, ReportFormat

REPORTS: dict[str, ReportFormat] = {
    terminal.REPORT.name: terminal.REPORT,
    json_report.REPORT.name: json_report.REPORT,
    html.REPORT.name: html.REPORT,
    markdown.REPORT.name: markdown.REPORT,
    github.REPORT.name: github.REPORT,
    sarif.REPORT.name: sarif.REPORT,
    codequality.REPORT.name: codequality.REPORT,
    junit.REPORT.name: junit.REPORT,
}

__all__ = ["REPORTS", "RenderOptions", "ReportFormat"]
