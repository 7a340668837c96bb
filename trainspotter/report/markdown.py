"""The Markdown report: a GitHub job summary (`$GITHUB_STEP_SUMMARY`) or a PR comment.

Layout: a headline with the worst severity and the counts over all logs; with several
logs, a table of logs (the total); then one section per log: what was read, the root
cause of each incident, a table of findings (id, severity, steps, detector, title), and
each finding's message, evidence and fixes in a `<details>` block.

Size: GitHub rejects a step summary over 1 MiB. The report is assembled from pieces in
three tiers (headline, headings and notes always; then table rows; then details, in
page order while they fit) and says what it left out when it truncates.

Safety: the only HTML is our own `<details>`/`<summary>` tags, whose contents are our
words (ids, severity, detector ids, step numbers). Every log-derived string passes
through `escape.markdown_text` and appears only in Markdown context (blank lines around
the HTML tags), so a log cannot inject raw HTML, mention a user or team, or plant a link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import comparison
from trainspotter.report.base import RenderOptions
from trainspotter.report.common import (
    chain_findings,
    checks_not_run,
    checks_ran,
    counts_phrase,
    findings_root_cause_first,
    log_label,
    not_a_health_verdict,
    plural,
    step_range,
    total_counts,
)
from trainspotter.report.escape import format_number, html_text, markdown_text, shorten
from trainspotter.verdict import worst_of

SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub's limit for one step's job summary."""
SAFETY_MARGIN_BYTES = 8 * 1024
"""Room left under the limit for a caller that appends a line or two."""
TITLE_LIMIT = 200
TEXT_LIMIT = 2000

_MARK = {Severity.ERROR: "\U0001f534", Severity.WARNING: "\U0001f7e1", Severity.INFO: "\U0001f535"}
_HEALTHY_MARK = "\u2705"

ALWAYS, ROWS, DETAILS = 0, 1, 2
"""Tiers: what is kept first when the report must be truncated."""


@dataclass(frozen=True)
class _Piece:
    text: str
    tier: int


def _badge(severity: Severity | None) -> str:
    if severity is None:
        return f"{_HEALTHY_MARK} healthy"
    return f"{_MARK[severity]} {severity.label}"


def _log_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Log text for Markdown, shortened; `(empty)` when nothing printable is left (an
    empty `**...**` would render as a horizontal rule)."""
    return markdown_text(shorten(text, limit)) or "*(empty)*"


_NOT_CHECKED = "\u26aa not checked"


def _log_badge(analysis: Analysis) -> str:
    """The log's worst severity; "not checked" instead of "healthy" when nothing was."""
    if analysis.worst is None and not_a_health_verdict(analysis) is not None:
        return _NOT_CHECKED
    return _badge(analysis.worst)


def _headline(analyses: Sequence[Analysis]) -> list[_Piece]:
    worst = worst_of(analyses)
    logs = f" in {len(analyses)} logs" if len(analyses) > 1 else ""
    unchecked = [a for a in analyses if not_a_health_verdict(a) is not None]
    if worst is None and unchecked:
        head = f"## trainspotter: {_NOT_CHECKED}, no findings{logs}, not every log checked\n"
    elif worst is None:
        head = f"## trainspotter: {_badge(None)}, no findings{logs}\n"
    elif worst is Severity.INFO:
        # Notes only (a converged tail, a recognised schedule): the run is healthy.
        notes = plural(total_counts(analyses)[Severity.INFO], "info")
        head = f"## trainspotter: {_badge(None)}, no warnings or errors ({notes}){logs}\n"
    else:
        head = f"## trainspotter: {_badge(worst)}: {counts_phrase(total_counts(analyses))}{logs}\n"
    pieces = [_Piece(head, ALWAYS)]
    if len(analyses) > 1:
        pieces.append(
            _Piece("\n| log | worst | errors | warnings | info |\n|---|---|--:|--:|--:|\n", ALWAYS)
        )
        for analysis in analyses:
            counts = total_counts([analysis])
            cells = [
                _log_text(log_label(analysis.run), 300),
                _log_badge(analysis),
                *(str(n) for n in counts.values()),
            ]
            pieces.append(_Piece("| " + " | ".join(cells) + " |\n", ALWAYS))
    return pieces


def _table_row(finding: Finding) -> str:
    title = _log_text(finding.title, TITLE_LIMIT)
    if finding.suppressed is not None:
        title = f"~~{title}~~ (suppressed)"
    return (
        f"| {finding.id} | {_badge(finding.severity)} | {step_range(finding)} | "
        f"{_log_text(finding.detector, 60)} | {title} |\n"
    )


def _details(finding: Finding) -> str:
    lines = [
        f"<details><summary>{finding.id} \u00b7 {finding.severity.label} \u00b7 "
        f"{html_text(finding.detector)} \u00b7 {step_range(finding)}</summary>",
        "",
        f"**{_log_text(finding.title, TITLE_LIMIT)}**",
        "",
        f"Metric: {_log_text(finding.metric, 300)}. {_log_text(finding.message)}",
        "",
    ]
    if finding.suppressed is not None:
        lines += [f"Suppressed: {_log_text(finding.suppressed)}", ""]
    if finding.cause:
        lines += [f"Caused by {finding.cause}.", ""]
    if finding.evidence:
        evidence = "; ".join(
            f"{_log_text(str(k), 120)} = {_log_text(format_number(v), 300)}"
            for k, v in finding.evidence.items()
        )
        lines += [f"Evidence: {evidence}", ""]
    if finding.fixes:
        lines += ["What to try:", ""]
        lines += [f"{i}. {_log_text(fix)}" for i, fix in enumerate(finding.fixes, start=1)]
        lines.append("")
    lines += ["</details>", ""]
    return "\n".join(lines) + "\n"


def _log_pieces(analysis: Analysis) -> list[_Piece]:
    run = analysis.run
    last_steps = [int(s.steps[-1]) for s in run.metrics.values() if len(s)]
    span = f"{max(last_steps):,} steps" if last_steps else "no steps"
    heading = (
        f"\n### {_log_text(log_label(run), 300)}: {_log_badge(analysis)}\n\n"
        f"Format {_log_text(run.source_format, 40)}, {span}, {len(run.metrics)} metrics"
    )
    counts = total_counts([analysis])
    if analysis.worst is not None:
        heading += f"; {counts_phrase(counts)}"
    pieces = [_Piece(heading + ".\n", ALWAYS)]
    if analysis.comparison is not None:
        pieces.append(_Piece(comparison.markdown_block(analysis.comparison, markdown_text), ALWAYS))
    for chain in chain_findings(analysis):
        path = " \u2192 ".join(f"{f.id} {_log_text(f.detector, 60)}" for f in chain)
        pieces.append(
            _Piece(f"\n**Root cause:** {_log_text(chain[0].title, TITLE_LIMIT)} ({path})\n", ALWAYS)
        )
    findings = findings_root_cause_first(analysis)
    if findings:
        pieces.append(
            _Piece(
                "\n| id | severity | steps | detector | title |\n|---|---|---|---|---|\n", ALWAYS
            )
        )
        pieces.extend(_Piece(_table_row(f), ROWS) for f in findings)
        pieces.append(_Piece("\n", ALWAYS))
        pieces.extend(_Piece(_details(f), DETAILS) for f in findings)
    elif (unchecked := not_a_health_verdict(analysis)) is not None:
        pieces.append(_Piece(f"\nNo findings, but {markdown_text(unchecked)}.\n", ALWAYS))
    elif analysis.detectors_run:
        pieces.append(_Piece("\nNo findings: the run looks healthy.\n", ALWAYS))
    pieces.append(_Piece(_checks_text(analysis), ALWAYS))
    notes = run.notes()
    if notes:
        pieces.append(
            _Piece("\nReader notes: " + "; ".join(_log_text(n, 500) for n in notes) + "\n", DETAILS)
        )
    return pieces


def _checks_text(analysis: Analysis) -> str:
    """What was checked, in one collapsed block: detectors and metrics, or why not."""
    ran, not_run = checks_ran(analysis), checks_not_run(analysis)
    if not ran and not not_run:
        return ""
    lines = ["\n<details><summary>Checks</summary>", ""]
    if ran:
        lines.append("Checked: " + _log_text("; ".join(ran)))
        lines.append("")
    if not_run:
        lines.append("Not checked: " + _log_text("; ".join(not_run)))
        lines.append("")
    lines.append("</details>\n")
    return "\n".join(lines)


def _fit_pieces(pieces: Sequence[_Piece], budget: int) -> tuple[list[_Piece], dict[int, int]]:
    """The pieces that fit in `budget` UTF-8 bytes, in their order: every ALWAYS piece,
    then ROWS pieces in order until the first that does not fit, then DETAILS likewise.
    Also returns how many pieces of each tier were left out."""
    sizes = [len(p.text.encode("utf-8")) for p in pieces]
    keep = [p.tier == ALWAYS for p in pieces]
    used = sum(size for size, k in zip(sizes, keep, strict=True) if k)
    for tier in (ROWS, DETAILS):
        for i, piece in enumerate(pieces):
            if piece.tier != tier:
                continue
            if used + sizes[i] > budget:
                break
            keep[i] = True
            used += sizes[i]
    omitted = {tier: 0 for tier in (ROWS, DETAILS)}
    for piece, kept in zip(pieces, keep, strict=True):
        if not kept:
            omitted[piece.tier] += 1
    return [p for p, k in zip(pieces, keep, strict=True) if k], omitted


def render_markdown(analyses: Sequence[Analysis], limit_bytes: int = SUMMARY_LIMIT_BYTES) -> str:
    """The report, at most `limit_bytes - SAFETY_MARGIN_BYTES` bytes of UTF-8."""
    pieces = _headline(analyses)
    for analysis in analyses:
        pieces.extend(_log_pieces(analysis))
    note_room = 400
    kept, omitted = _fit_pieces(pieces, max(limit_bytes - SAFETY_MARGIN_BYTES - note_room, 0))
    text = "".join(p.text for p in kept)
    if omitted[ROWS] or omitted[DETAILS]:
        text += (
            f"\n> **Truncated** to stay under GitHub's {limit_bytes // 1024:,} KiB summary limit: "
            f"{omitted[ROWS]:,} table rows and {omitted[DETAILS]:,} detail blocks left out. "
            "The JSON or HTML report has every finding.\n"
        )
    return text


class MarkdownReport:
    """GitHub-flavoured Markdown for job summaries and PR comments."""

    name = "markdown"
    description = "Markdown for a GitHub job summary or PR comment (under 1 MiB)"

    def render(self, analyses: Sequence[Analysis], options: RenderOptions) -> str:
        return render_markdown(analyses)


REPORT = MarkdownReport()
