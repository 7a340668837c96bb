"""The Markdown report: a GitHub job summary (`$GITHUB_STEP_SUMMARY`) or a PR comment.

Layout, for a reviewer who reads ten seconds:
1. A headline that fits one screen: the verdict (passed / failed against `fail_on`) with
   the counts over all logs; one line per log that needs attention (its worst severity,
   the root cause's title and the incident chain, as the JSON's `chains` list it); one
   line per healthy log.
2. One section per log with a warning or an error: the root cause, a loss chart GitHub
   draws itself (a Mermaid `xychart-beta` block, `mermaid_chart.py`) with a caption that
   says which line is which, then a collapsed `<details>` block with the findings table,
   each finding's message, evidence and fixes, and what was checked.

Size: GitHub rejects a step summary over 1 MiB and a comment over 65,536 characters. The
report is assembled from pieces in tiers, kept in this order while they fit: the
headline's first lines; the rest of the headline; each section's frame (heading, root
cause, the `<details>` tags, so HTML stays balanced); charts; table rows; details. A
piece of a section whose frame was left out is left out too. The report says what it
left out when it truncates.

Safety: the only HTML is our own `<details>`/`<summary>` tags, whose contents are our
words (counts, ids, severities, step numbers). Every log-derived string passes through
`escape.markdown_text` and appears only in Markdown context (blank lines around the HTML
tags), so a log cannot inject raw HTML, mention a user or team, or plant a link; inside
the Mermaid block names are reduced to a safe charset (`mermaid_chart.chart_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import comparison
from trainspotter.report.base import TextReport
from trainspotter.report.common import (
    chain_findings,
    chain_link,
    chain_path,
    checks_not_run,
    checks_ran,
    counts_phrase,
    findings_root_cause_first,
    log_label,
    not_checked_reason,
    plural,
    step_range,
    steps_logged,
    total_counts,
)
from trainspotter.report.escape import format_number, markdown_text, shorten
from trainspotter.report.mermaid_chart import caption, loss_chart
from trainspotter.verdict import worst_of

SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub's limit for one step's job summary."""
SAFETY_MARGIN_BYTES = 8 * 1024
"""Room left under the limit for a caller that appends a line or two."""
TITLE_LIMIT = 200
TEXT_LIMIT = 2000
HEADLINE_LOGS = 10
"""Log lines of each kind (attention, healthy) always kept in the headline."""
MAX_CHARTS = 10
"""Sections that get a chart (about 3.5 KB each): the first ones, in report order."""

_MARK = {Severity.ERROR: "\U0001f534", Severity.WARNING: "\U0001f7e1", Severity.INFO: "\U0001f535"}
_HEALTHY_MARK = "\u2705"
_NOT_CHECKED_MARK = "\u26aa"

HEAD, LOG_LINES, FRAMES, CHARTS, ROWS, DETAILS = range(6)
"""Tiers: what is kept first when the report must be truncated."""
_LEFT_OUT_NAMES = {
    LOG_LINES: "headline lines",
    FRAMES: "log sections",
    CHARTS: "charts",
    ROWS: "table rows",
    DETAILS: "detail blocks",
}


@dataclass(frozen=True)
class _Piece:
    text: str
    tier: int
    section: int = -1
    """The section whose frame must be kept for this piece to be (-1: none)."""


def _badge(severity: Severity | None) -> str:
    if severity is None:
        return f"{_HEALTHY_MARK} healthy"
    return f"{_MARK[severity]} {severity.label}"


def _log_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Log text for Markdown, shortened; `(empty)` when nothing printable is left (an
    empty `**...**` would render as a horizontal rule)."""
    return markdown_text(shorten(text, limit)) or "*(empty)*"


def needs_attention(analysis: Analysis, fail_on: Severity) -> bool:
    """A log that gets a section: a warning or an error, or a finding at `fail_on`."""
    worst = analysis.worst
    return worst is not None and worst >= min(fail_on, Severity.WARNING)


def _log_verdict(analysis: Analysis, fail_on: Severity) -> str:
    """`failed`, `passed`, or `not checked`: the gate's word for one log."""
    worst = analysis.worst
    if worst is not None and worst >= fail_on:
        return "failed"
    if not_checked_reason(analysis) is not None:
        return "not checked"
    return "passed"


def _mark(analysis: Analysis, fail_on: Severity) -> str:
    verdict = _log_verdict(analysis, fail_on)
    if verdict == "not checked":
        return _NOT_CHECKED_MARK
    worst = analysis.worst
    if worst is None or (worst < Severity.WARNING and verdict == "passed"):
        return _HEALTHY_MARK
    return _MARK[worst]


def _headline(analyses: Sequence[Analysis], fail_on: Severity) -> list[_Piece]:
    worst = worst_of(analyses)
    logs = f" in {len(analyses)} logs" if len(analyses) > 1 else ""
    counts = total_counts(analyses)
    unchecked = sum(1 for a in analyses if _log_verdict(a, fail_on) == "not checked")
    if worst is not None and worst >= fail_on:
        failed = sum(1 for a in analyses if _log_verdict(a, fail_on) == "failed")
        which = f"{failed} of {len(analyses)} logs, " if len(analyses) > 1 else ""
        head = f"{_MARK[worst]} failed ({which}{counts_phrase(counts)})"
    elif worst is not None and worst >= Severity.WARNING:
        head = f"{_MARK[worst]} passed with warnings ({counts_phrase(counts)}){logs}"
    elif unchecked:
        head = f"{_NOT_CHECKED_MARK} not checked: no findings{logs}, {unchecked} not checked"
    elif worst is None:
        head = f"{_HEALTHY_MARK} passed: no findings{logs}"
    else:
        notes = plural(counts[Severity.INFO], "info")
        head = f"{_HEALTHY_MARK} passed: no warnings or errors ({notes}){logs}"
    pieces = [_Piece(f"## trainspotter: {head}\n\n", HEAD)]
    attention = [a for a in analyses if needs_attention(a, fail_on)]
    others = [a for a in analyses if not needs_attention(a, fail_on)]
    for rank, analysis in enumerate(attention):
        tier = HEAD if rank < HEADLINE_LOGS else LOG_LINES
        pieces.append(_Piece(_attention_line(analysis, fail_on), tier))
    for rank, analysis in enumerate(others):
        tier = HEAD if rank < HEADLINE_LOGS else LOG_LINES
        pieces.append(_Piece(_healthy_line(analysis, fail_on), tier))
    return pieces


def _attention_line(analysis: Analysis, fail_on: Severity) -> str:
    """`- 🔴 **path**: failed (1 error, 2 warnings): root cause TITLE (F1 a → F2 b)`."""
    label = _log_text(log_label(analysis.run), 300)
    counts = counts_phrase(total_counts([analysis]))
    line = f"- {_mark(analysis, fail_on)} **{label}**: {_log_verdict(analysis, fail_on)} ({counts})"
    chains = chain_findings(analysis)
    if chains:
        root = chains[0]
        line += (
            f": root cause {_log_text(root[0].title, TITLE_LIMIT)} "
            f"({_log_text(chain_path(root), 400)})"
        )
        if len(chains) > 1:
            line += f", and {plural(len(chains) - 1, 'other incident')}"
    else:
        first = findings_root_cause_first(analysis)[0]
        line += f": {first.id} {_log_text(first.title, TITLE_LIMIT)}"
    return line + "\n"


def _healthy_line(analysis: Analysis, fail_on: Severity) -> str:
    """`- ✅ path: passed, 1,000 steps, no findings` (or why it was not checked)."""
    label = _log_text(log_label(analysis.run), 300)
    verdict = _log_verdict(analysis, fail_on)
    line = f"- {_mark(analysis, fail_on)} {label}: {verdict}, {steps_logged(analysis.run)}"
    unchecked = not_checked_reason(analysis)
    infos = total_counts([analysis])[Severity.INFO]
    if unchecked is not None:  # verdict "not checked"
        line += f", {markdown_text(unchecked)}"
    elif analysis.worst is None:
        line += ", no findings"
    elif analysis.worst is Severity.INFO:
        line += f", no warnings or errors ({plural(infos, 'info')})"
    else:
        line += f" ({counts_phrase(total_counts([analysis]))})"
    return line + "\n"


def _table_row(finding: Finding) -> str:
    title = _log_text(finding.title, TITLE_LIMIT)
    if finding.suppressed is not None:
        title = f"~~{title}~~ (suppressed)"
    return (
        f"| {finding.id} | {_badge(finding.severity)} | {step_range(finding)} | "
        f"{_log_text(finding.detector, 60)} | {title} |\n"
    )


def _details(finding: Finding) -> str:
    """One finding in full: our own heading line, then message, evidence and fixes."""
    lines = [
        f"**{finding.id} \u00b7 {finding.severity.label} \u00b7 "
        f"{_log_text(finding.detector, 60)} \u00b7 {step_range(finding)}: "
        f"{_log_text(finding.title, TITLE_LIMIT)}**",
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
    return "\n".join(lines) + "\n"


def _section(analysis: Analysis, section: int, with_chart: bool) -> list[_Piece]:
    """A section for a log that needs attention: frame, chart, collapsed details."""
    run = analysis.run
    worst = analysis.worst
    assert worst is not None
    frame = (
        f"\n### {_MARK[worst]} {_log_text(log_label(run), 300)}\n\n"
        f"Format {_log_text(run.source_format, 40)}, {steps_logged(run)}, "
        f"{len(run.metrics)} metrics; {counts_phrase(total_counts([analysis]))}.\n"
    )
    for chain in chain_findings(analysis):
        frame += (
            f"\n**Root cause:** {_log_text(chain[0].title, TITLE_LIMIT)} "
            f"({_log_text(chain_path(chain), 400)})\n"
        )
    if analysis.comparison is not None:
        frame += comparison.markdown_block(analysis.comparison, markdown_text)
    pieces = [_Piece(frame, FRAMES, section)]
    chart = loss_chart(run, analysis.findings) if with_chart else None
    if chart is not None:
        pieces.append(
            _Piece(f"\n{chart.block}\n*{markdown_text(caption(chart))}*\n", CHARTS, section)
        )
    findings = findings_root_cause_first(analysis)
    pieces.append(
        _Piece(
            f"\n<details><summary>{plural(len(findings), 'finding')}: evidence, fixes "
            "and what was checked</summary>\n\n"
            "| id | severity | steps | detector | title |\n|---|---|---|---|---|\n",
            FRAMES,
            section,
        )
    )
    pieces.extend(_Piece(_table_row(f), ROWS, section) for f in findings)
    pieces.append(_Piece("\n", FRAMES, section))
    pieces.extend(_Piece(_details(f), DETAILS, section) for f in findings)
    checks = _checks_text(analysis)
    if checks:
        pieces.append(_Piece(checks, DETAILS, section))
    notes = run.notes()
    if notes:
        text = "Reader notes: " + "; ".join(_log_text(n, 500) for n in notes) + "\n\n"
        pieces.append(_Piece(text, DETAILS, section))
    pieces.append(_Piece("</details>\n", FRAMES, section))
    return pieces


def _checks_text(analysis: Analysis) -> str:
    """What was checked: detectors and metrics, or why not."""
    ran, not_run = checks_ran(analysis), checks_not_run(analysis)
    lines = []
    if ran:
        lines += ["Checked: " + _log_text("; ".join(ran)), ""]
    if not_run:
        lines += ["Not checked: " + _log_text("; ".join(not_run)), ""]
    return "\n".join(lines) + "\n" if lines else ""


def _comparison_text(analysis: Analysis) -> str:
    """The comparison with a baseline run, when the log has one."""
    if analysis.comparison is None:
        return ""
    return comparison.markdown_block(analysis.comparison, markdown_text).lstrip("\n") + "\n"


def _notes_text(analysis: Analysis) -> str:
    """The info notes of a log without warnings: `Notes: F1 plateau, steps ...: TITLE`."""
    notes = [f for f in findings_root_cause_first(analysis) if f.suppressed is None]
    if not notes:
        return ""
    return "Notes: " + "; ".join(_log_text(chain_link(f), 400) for f in notes) + "\n\n"


def _other_checks(analyses: Sequence[Analysis], section: int) -> list[_Piece]:
    """The comparison, info notes and what was checked on the logs listed in one line each,
    collapsed at the end (a "not checked" line says why in its line already)."""
    blocks = [(a, _comparison_text(a) + _notes_text(a) + _checks_text(a)) for a in analyses]
    blocks = [(a, text) for a, text in blocks if text]
    if not blocks:
        return []
    pieces = [
        _Piece(
            f"\n<details><summary>Notes and checks of the {plural(len(blocks), 'log')} "
            "without warnings</summary>\n\n",
            FRAMES,
            section,
        )
    ]
    pieces.extend(
        _Piece(f"**{_log_text(log_label(a.run), 300)}**\n\n{text}", DETAILS, section)
        for a, text in blocks
    )
    pieces.append(_Piece("</details>\n", FRAMES, section))
    return pieces


def _fit_pieces(pieces: Sequence[_Piece], budget: int) -> tuple[list[_Piece], dict[int, int]]:
    """The pieces that fit in `budget` UTF-8 bytes, in their order: every HEAD piece,
    then each later tier's pieces in order until the first that does not fit. A
    section's frame is kept whole or not at all, and a piece of a section whose frame
    was left out is left out. Also returns how many pieces of each tier were left out
    (frames counted once per section)."""
    sizes = [len(p.text.encode("utf-8")) for p in pieces]
    keep = [p.tier == HEAD for p in pieces]
    used = sum(size for size, k in zip(sizes, keep, strict=True) if k)
    frames: dict[int, list[int]] = {}
    for i, piece in enumerate(pieces):
        if piece.tier == FRAMES:
            frames.setdefault(piece.section, []).append(i)
    kept_sections: set[int] = set()
    for tier in (LOG_LINES, FRAMES, CHARTS, ROWS, DETAILS):
        if tier == FRAMES:
            for section, members in frames.items():
                size = sum(sizes[i] for i in members)
                if used + size > budget:
                    break
                kept_sections.add(section)
                used += size
                for i in members:
                    keep[i] = True
            continue
        for i, piece in enumerate(pieces):
            if piece.tier != tier or (piece.section >= 0 and piece.section not in kept_sections):
                continue
            if used + sizes[i] > budget:
                break
            keep[i] = True
            used += sizes[i]
    omitted = dict.fromkeys(_LEFT_OUT_NAMES, 0)
    omitted[FRAMES] = len(frames) - len(kept_sections)
    for piece, kept in zip(pieces, keep, strict=True):
        if not kept and piece.tier not in (HEAD, FRAMES):
            omitted[piece.tier] += 1
    return [p for p, k in zip(pieces, keep, strict=True) if k], omitted


def render_markdown(
    analyses: Sequence[Analysis],
    limit_bytes: int = SUMMARY_LIMIT_BYTES,
    fail_on: Severity = Severity.ERROR,
) -> str:
    """The report, at most `limit_bytes - SAFETY_MARGIN_BYTES` bytes of UTF-8 (beyond
    that only when the headline's first lines alone are longer)."""
    pieces = _headline(analyses, fail_on)
    attention = [a for a in analyses if needs_attention(a, fail_on)]
    for section, analysis in enumerate(attention):
        pieces.extend(_section(analysis, section, with_chart=section < MAX_CHARTS))
    others = [a for a in analyses if not needs_attention(a, fail_on)]
    pieces.extend(_other_checks(others, section=len(attention)))
    if len(attention) > MAX_CHARTS:
        pieces.append(
            _Piece(
                f"\nCharts are drawn for the first {MAX_CHARTS} logs above only; the HTML "
                "report charts every log.\n",
                CHARTS,
            )
        )
    note_room = 400
    kept, omitted = _fit_pieces(pieces, max(limit_bytes - SAFETY_MARGIN_BYTES - note_room, 0))
    text = "".join(p.text for p in kept)
    if any(omitted.values()):
        left_out = ", ".join(
            f"{count:,} {_LEFT_OUT_NAMES[tier]}" for tier, count in omitted.items() if count
        )
        text += (
            f"\n> **Truncated** to stay under GitHub's {limit_bytes // 1024:,} KiB limit: "
            f"{left_out} left out. The JSON or HTML report has every finding.\n"
        )
    return text


REPORT = TextReport(
    "markdown",
    "Markdown for a GitHub job summary or PR comment, with a loss chart (< 1 MiB)",
    lambda analyses, fail_on: render_markdown(analyses, fail_on=fail_on),
)
"""GitHub-flavoured Markdown for job summaries and PR comments."""
