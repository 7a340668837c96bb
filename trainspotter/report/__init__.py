"""The report registry: one module per output format; adding one is a module and a line."""

from __future__ import annotations

from trainspotter.report import json_report, terminal
from trainspotter.report.base import RenderOptions, ReportFormat

REPORTS: dict[str, ReportFormat] = {
    terminal.REPORT.name: terminal.REPORT,
    json_report.REPORT.name: json_report.REPORT,
}

__all__ = ["REPORTS", "RenderOptions", "ReportFormat"]
