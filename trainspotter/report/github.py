"""GitHub Actions annotations: one workflow command per finding, printed to stdout.

`::error file=PATH,title=TITLE::MESSAGE` (and `::warning`, `::notice` for info). GitHub
shows at most 10 annotations of each kind per step, so at most 10 are emitted per kind
(the most severe and earliest first, the report order) and one more notice says how many
were left out; when notices overflow, 9 are emitted so that summary is the tenth.

Every line starts with `::` and holds exactly one command: properties pass through
`escape.workflow_property` (`%`, CR, LF, `:`, `,` encoded) and the message through
`escape.workflow_message` (`%`, CR, LF encoded), so no log-derived text can end the
line or start a command of its own (`::add-mask::`, `::stop-commands::`). This module
prints nothing else: no raw log text ever reaches stdout from here.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.paths import shown_path
from trainspotter.report.base import TextReport
from trainspotter.report.common import (
    SEVERITIES_WORST_FIRST,
    active_findings,
    log_file,
    plural,
    step_range,
)
from trainspotter.report.escape import (
    format_number,
    shorten,
    terminal_text,
    workflow_message,
    workflow_property,
)

PER_KIND_LIMIT = 10
"""GitHub shows at most this many annotations of each kind per step."""
COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
TITLE_LIMIT = 200
MESSAGE_LIMIT = 4000


def annotation(finding: Finding, path: str) -> str:
    """One workflow command line for a finding of the log at `path`."""
    title = shorten(f"trainspotter {finding.detector}: {terminal_text(finding.title)}", TITLE_LIMIT)
    lines = [
        f"{step_range(finding)}, metric {terminal_text(finding.metric)}: "
        f"{terminal_text(finding.message)}"
    ]
    if finding.evidence:
        lines.append(
            "Evidence: "
            + ", ".join(
                f"{terminal_text(str(k))}={terminal_text(format_number(v))}"
                for k, v in finding.evidence.items()
            )
        )
    lines.extend(f"Fix: {terminal_text(fix)}" for fix in finding.fixes)
    message = shorten("\n".join(lines), MESSAGE_LIMIT)
    properties = f"file={workflow_property(shown_path(path))},title={workflow_property(title)}"
    return f"::{COMMAND[finding.severity]} {properties}::{workflow_message(message)}"


def render_annotations(analyses: Sequence[Analysis], fail_on: Severity = Severity.WARNING) -> str:
    """The command lines for every log, capped per kind, with a summary notice.

    Info findings (a converged tail, a recognised restart schedule) become notices only
    when the gate fails on info: a healthy run must pass a PR check in silence.
    """
    lowest = min(fail_on, Severity.WARNING)
    by_severity: dict[Severity, list[tuple[Finding, str]]] = {s: [] for s in SEVERITIES_WORST_FIRST}
    for analysis in analyses:
        for finding in active_findings(analysis):
            if finding.severity >= lowest:
                by_severity[finding.severity].append((finding, log_file(analysis.run)))
    overflow = any(len(items) > PER_KIND_LIMIT for items in by_severity.values())
    lines: list[str] = []
    left_out: dict[Severity, int] = {}
    for severity, items in by_severity.items():
        limit = PER_KIND_LIMIT - 1 if overflow and severity is Severity.INFO else PER_KIND_LIMIT
        lines.extend(annotation(f, path) for f, path in items[:limit])
        if len(items) > limit:
            left_out[severity] = len(items) - limit
    if left_out:
        counts = ", ".join(plural(n, s.label) for s, n in left_out.items())
        message = (
            f"{counts} more not annotated here (GitHub shows at most {PER_KIND_LIMIT} "
            "annotations of each kind per step). The job summary and the HTML and JSON "
            "reports list every finding."
        )
        lines.append(
            f"::notice title={workflow_property('trainspotter: more findings')}::"
            f"{workflow_message(message)}"
        )
    return "".join(line + "\n" for line in lines)


REPORT = TextReport(
    "github",
    "GitHub Actions annotations (::error/::warning/::notice), 10 per kind",
    render_annotations,
)
"""Workflow commands that GitHub turns into annotations on the log files."""
