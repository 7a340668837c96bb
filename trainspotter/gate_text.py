"""The gate's own words around the reports: its verdict line, the head and tail of the
job summary and the PR comment (the logs it could not check, the paths it skipped), and
the HTML index page. Log-derived text (paths, reasons) is escaped for where it goes."""

from __future__ import annotations

import html
from collections.abc import Sequence

from trainspotter.analysis import Analysis
from trainspotter.discover import Problem
from trainspotter.errors import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK
from trainspotter.model import Severity
from trainspotter.report import wording
from trainspotter.report.escape import code_span_text, markdown_text
from trainspotter.report.markdown import render_markdown

COMMENT_LIMIT_BYTES = 60_000
"""GitHub rejects a comment body over 65,536 characters; this leaves room for the
sticky-comment marker the Action adds."""
SKIPPED_LISTED = 50
"""At most this many skipped paths are named in the summary (the rest are counted)."""


def verdict_text(result_code: int, worst: Severity | None, fail_on: Severity, failures: int) -> str:
    """The gate's verdict in words, for its exit code."""
    if result_code == EXIT_BAD_INPUT:
        return f"could not check everything: {wording.count(failures, 'problem')}"
    if result_code == EXIT_GATE_FAILED:
        assert worst is not None
        return f"failed: a finding at {worst.label}, at or above fail_on={fail_on.label}"
    shown_worst = worst.label if worst else "none"
    return f"passed: worst unsuppressed severity {shown_worst}, below fail_on={fail_on.label}"


def gate_markdown(
    verdict: str, code: int, failures: Sequence[Problem], skipped: Sequence[Problem]
) -> tuple[str, str]:
    """Our own head and tail for the summary and the comment (paths escaped)."""
    mark = {EXIT_OK: "\u2705", EXIT_GATE_FAILED: "\u274c", EXIT_BAD_INPUT: "\u26a0\ufe0f"}[code]
    head = f"**trainspotter gate {mark} {markdown_text(verdict)}**\n\n"
    tail: list[str] = []
    if failures:
        tail.append("\n### Not checked\n")
        tail.extend(problem_items(failures, " (see the job log)", limit=500))
        tail.append("")
    if skipped:
        tail.append(f"\n<details><summary>{len(skipped)} matched paths skipped</summary>\n")
        tail.extend(problem_items(skipped, ""))
        tail.append("\n</details>\n")
    return head, "\n".join(tail)


def problem_items(problems: Sequence[Problem], more: str, limit: int | None = None) -> list[str]:
    """Up to SKIPPED_LISTED problems as list items (reasons cut at `limit`), then the rest
    counted: `- and N more{more}`."""
    items = [
        f"- `{code_span(p.display)}`: {markdown_text(p.reason[:limit])}"
        for p in problems[:SKIPPED_LISTED]
    ]
    if len(problems) > SKIPPED_LISTED:
        items.append(f"- and {len(problems) - SKIPPED_LISTED} more{more}")
    return items


def code_span(text: str) -> str:
    """Log-derived text inside a Markdown code span (`escape.code_span_text`), at most
    300 characters."""
    return code_span_text(text)[:300]


def markdown_report(
    analyses: Sequence[Analysis],
    limit: int,
    head: str,
    tail: str,
    note: str | None,
    fail_on: Severity = Severity.ERROR,
) -> str:
    """The summary or comment: our head, the Markdown report in what room is left of
    `limit` bytes, our tail and the note."""
    note_text = f"\n{note}\n" if note else ""
    room = max(limit - len((head + tail + note_text).encode("utf-8")), 16 * 1024)
    body = render_markdown(analyses, room, fail_on) if analyses else ""
    return head + body + tail + note_text


def index_html(entries: Sequence[tuple[str, str, Severity | None]]) -> str:
    rows = "\n".join(
        f'<li><a href="{html.escape(name, quote=True)}">{html.escape(display)}</a> '
        f"({html.escape(worst.label if worst else 'healthy')})</li>"
        for display, name, worst in entries
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>trainspotter reports</title></head>\n<body><h1>trainspotter reports</h1>\n"
        f"<ul>\n{rows}\n</ul>\n</body></html>\n"
    )


__all__ = [
    "COMMENT_LIMIT_BYTES",
    "SKIPPED_LISTED",
    "code_span",
    "gate_markdown",
    "index_html",
    "markdown_report",
    "problem_items",
    "verdict_text",
]
