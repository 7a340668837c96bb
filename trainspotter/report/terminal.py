"""The terminal report: what a person reads first.

Layout per log: a header (file, format, steps, metrics), a one-line verdict with counts,
the root cause of each linked incident, then each finding: severity, step range,
detector and title; the evidence in words with numbers; the metric; the fixes.
Reader notes (skipped cells, other runs in the file) come last.

Colour only when asked (a TTY without NO_COLOR); every log-derived string passes through
`escape.terminal_text` so a metric name cannot move the cursor or clear the screen, and
the whole report through `escape.runner_inert_lines`, so a wrapped line that starts with
a word from the log cannot be read as a CI workflow command (`::add-mask::`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report.base import RenderOptions
from trainspotter.report.common import (
    checks_not_run,
    checks_ran,
    counts_phrase,
    findings_root_cause_first,
    not_a_health_verdict,
    plural,
    step_range,
    steps_logged,
    total_counts,
)
from trainspotter.report.escape import format_number, runner_inert_lines, terminal_text

_COLOR = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_RESET = "\x1b[0m"
_WIDTH = 92


class Style:
    """The terminal's colours (none unless `color`); `watch` prints with them too."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.color else text

    def severity(self, severity: Severity) -> str:
        return self.paint(severity.label.upper().ljust(7), _COLOR[severity])

    def severity_label(self, severity: Severity) -> str:
        """The lower-case label in its colour, padded to 7 columns."""
        pad = " " * (7 - len(severity.label))
        return self.paint(severity.label, _COLOR[severity]) + pad


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, width=_WIDTH, initial_indent=indent, subsequent_indent=indent) or [
        indent
    ]


def _header(analysis: Analysis, style: Style) -> list[str]:
    run = analysis.run
    lengths = [len(s) for s in run.metrics.values()]
    name = terminal_text(run.source_path)
    run_name = run.meta.get("run_name")
    extra = f" run {terminal_text(str(run_name))}" if run_name else ""
    title = f"{name} ({run.source_format}{extra})"
    facts = f"{steps_logged(run)}, {len(run.metrics)} metrics, {sum(lengths):,} points"
    return [style.paint(title, _BOLD), style.paint(facts, _DIM)]


def _verdict(analysis: Analysis, style: Style) -> str:
    counts = analysis.counts()
    worst = analysis.worst
    parts = [plural(counts[s.label], s.label) for s in sorted(Severity, reverse=True)]
    suppressed = sum(1 for f in analysis.findings if f.suppressed is not None)
    if suppressed:
        parts.append(f"{suppressed} suppressed")
    if worst is None or worst is Severity.INFO:
        if not analysis.detectors_run:
            return "no detectors ran"
        unchecked = not_a_health_verdict(analysis)
        if unchecked is not None:
            # Never green on nothing: the checks lines below say what was looked at.
            return style.paint(f"no warnings or errors, but {unchecked}", _BOLD)
        # Info findings (a converged tail, a recognised restart schedule) are notes, not
        # problems: the verdict stays "healthy" so a good run reads as one.
        notes = [p for p in parts[2:] if not p.startswith("0 ")]
        return style.paint("healthy: no warnings or errors", "\x1b[1;32m") + (
            f" ({', '.join(notes)})" if notes else ""
        )
    return style.paint(f"{worst.label.upper()}: ", _COLOR[worst]) + ", ".join(parts)


def _check_lines(analysis: Analysis) -> list[str]:
    """What was checked: each detector that ran and its metrics; why the others did not."""
    lines = []
    ran, not_run = checks_ran(analysis), checks_not_run(analysis)
    if ran:
        lines.extend(_wrap("Checked: " + terminal_text("; ".join(ran)), ""))
    if not_run:
        lines.extend(_wrap("Not checked: " + terminal_text("; ".join(not_run)), ""))
    return lines


def _chain_lines(analysis: Analysis, style: Style) -> list[str]:
    lines = []
    for chain in analysis.chains:
        text = ""
        for pos, finding_id in enumerate(chain):
            f = analysis.by_id(finding_id)
            # "->" where one finding caused the next, "+" where they happened together.
            joint = "" if pos == 0 else (" -> " if f.cause is not None else " + ")
            text += f"{joint}{f.detector} at step {f.step_start:,} ({f.id})"
        root = analysis.by_id(chain[0])
        lines.append(style.paint("Root cause: ", _BOLD) + terminal_text(root.title))
        lines.extend(_wrap("chain: " + text, "  "))
    return lines


def _finding_lines(finding: Finding, style: Style) -> list[str]:
    head = (
        f"{finding.id} {style.severity(finding.severity)} {step_range(finding)}  "
        f"[{finding.detector}] {terminal_text(finding.title)}"
    )
    if finding.suppressed is not None:
        head += style.paint(f"  (suppressed: {terminal_text(finding.suppressed)})", _DIM)
    lines = [head]
    lines.extend(_wrap(terminal_text(finding.message), "    "))
    lines.append(f"    metric: {terminal_text(finding.metric)}")
    if finding.evidence:
        evidence = ", ".join(
            f"{terminal_text(k)}={terminal_text(format_number(v))}"
            for k, v in finding.evidence.items()
        )
        lines.extend(_wrap("evidence: " + evidence, "    "))
    if finding.cause:
        lines.append(f"    caused by: {finding.cause}")
    for fix in finding.fixes:
        lines.extend(_wrap("fix: " + terminal_text(fix), "    "))
    return lines


def _metric_lines(analysis: Analysis) -> list[str]:
    rows = []
    for name, series in sorted(analysis.run.metrics.items()):
        if not len(series):
            continue
        last = format_number(float(series.values[-1]))
        bad = series.nonfinite_count()
        rows.append(
            f"  {terminal_text(name)[:40]:<40} {len(series):>9,} pts  "
            f"steps {int(series.steps[0]):,}-{int(series.steps[-1]):,}  last {last}"
            + (f"  non-finite {bad:,}" if bad else "")
        )
    return ["Metrics:", *rows] if rows else ["Metrics: none"]


def render_one(analysis: Analysis, options: RenderOptions) -> str:
    """One log's report."""
    style = Style(options.color)
    lines = _header(analysis, style)
    lines.append(_verdict(analysis, style))
    lines.extend(style.paint(line, _DIM) for line in _check_lines(analysis))
    chains = _chain_lines(analysis, style)
    if chains:
        lines.append("")
        lines.extend(chains)
    for finding in findings_root_cause_first(analysis):  # the cause before its symptoms
        lines.append("")
        lines.extend(_finding_lines(finding, style))
    if options.verbose or not analysis.detectors_run:
        lines.append("")
        lines.extend(_metric_lines(analysis))
    notes = analysis.run.notes()
    if notes:
        lines.append("")
        lines.append("Reader notes:")
        lines.extend(line for note in notes for line in _wrap(terminal_text(note), "  "))
    return "\n".join(lines) + "\n"


class TerminalReport:
    """Human-readable text, coloured on a TTY."""

    name = "terminal"
    description = "human-readable text report (coloured on a TTY unless NO_COLOR is set)"

    def render(self, analyses: Sequence[Analysis], options: RenderOptions) -> str:
        parts = [render_one(a, options) for a in analyses]
        if len(analyses) > 1:
            parts.append(f"{len(analyses)} logs: {counts_phrase(total_counts(analyses))}\n")
        return runner_inert_lines("\n".join(parts))


REPORT = TerminalReport()
