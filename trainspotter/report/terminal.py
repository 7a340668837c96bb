"""The terminal report: what a person reads first, in ten seconds.

Per log, one verdict line leads: PASSED, FAILED (a finding at or above fail_on) or NOT
CHECKED (nothing failed, but no detector examined a loss), with the counts and the worst
finding's title. A healthy log stops there (plus one line naming its info notes, if any).
Otherwise the root cause of each linked incident follows, then every finding in chain
order (ids ascending: `analysis.link_findings` numbers them so), each in a few lines: the
title, the first sentence of its message, its first fix (an info note: its title only).
Detail is on demand:

- `verbose`: each finding in full (message, metric, evidence, cause, every fix), what was
  checked and what was not, every metric, the reader's notes;
- `finding="F2"`: that one finding in explain-style detail, with what its detector does;
- `quiet`: the verdict lines only.

Lines are wrapped to `options.width` between words (`wording.wrap`). Colour only when
asked. Every log-derived string passes through `escape.terminal_text`, so a metric name
cannot move the cursor or clear the screen, and the whole report through
`escape.runner_inert_lines`, so a wrapped line that starts with a word from the log cannot
be read as a CI workflow command (`::add-mask::`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import comparison, wording
from trainspotter.report.base import RenderOptions
from trainspotter.report.common import (
    active_findings,
    checks_not_run,
    checks_ran,
    detector_doc,
    not_a_health_verdict,
    step_range,
    steps_logged,
)
from trainspotter.report.escape import runner_inert_lines, terminal_text
from trainspotter.report.terminal_doc import inline_text

_COLOR = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_GREEN = "\x1b[1;32m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_RESET = "\x1b[0m"
_INDENT = "    "
PASSED, FAILED, NOT_CHECKED = "PASSED", "FAILED", "NOT CHECKED"
# A sentence ends at . ! ? followed by a space and a capital (not "e.g. the", not "2.5").
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


class Style:
    """The terminal's colours (none unless `color`); `watch` prints with them too."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and text else text

    def severity(self, severity: Severity) -> str:
        """The lower-case label in its colour, padded to 7 columns."""
        pad = " " * (7 - len(severity.label))
        return self.paint(severity.label, _COLOR[severity]) + pad

    def verdict(self, word: str, warned: bool = False) -> str:
        """FAILED red; PASSED green, yellow when it passed with warnings; NOT CHECKED
        yellow."""
        if word == FAILED:
            return self.paint(word, _COLOR[Severity.ERROR])
        calm = word == PASSED and not warned
        return self.paint(word, _GREEN if calm else _COLOR[Severity.WARNING])


def verdict_word(analysis: Analysis, fail_on: Severity) -> str:
    """PASSED, FAILED (a finding at or above fail_on) or NOT CHECKED (nothing failed, but
    no detector had a loss to examine: never green on nothing)."""
    worst = analysis.worst
    if worst is not None and worst >= fail_on:
        return FAILED
    if not analysis.detectors_run or not_a_health_verdict(analysis) is not None:
        return NOT_CHECKED
    return PASSED


def worst_finding(analysis: Analysis) -> Finding | None:
    """The first unsuppressed finding of the highest severity (report order)."""
    active = active_findings(analysis)
    if not active:
        return None
    worst = max(f.severity for f in active)
    return next(f for f in active if f.severity is worst)


def _counts(analysis: Analysis) -> str:
    counts = {label: n for label, n in analysis.counts().items() if n}
    suppressed = sum(1 for f in analysis.findings if f.suppressed is not None)
    if suppressed:
        counts["suppressed"] = suppressed
    return wording.counts_phrase(counts) if counts else ""


def _label(analysis: Analysis) -> str:
    run = analysis.run
    name = terminal_text(run.source_path)
    run_name = run.meta.get("run_name")
    return f"{name} (run {terminal_text(str(run_name))})" if run_name else name


def verdict_lines(analysis: Analysis, options: RenderOptions, style: Style) -> list[str]:
    """The verdict line (wrapped): word, log, counts, and the worst problem's title (or
    why the log could not be checked, or that it is healthy)."""
    word = verdict_word(analysis, options.fail_on)
    worst = worst_finding(analysis)
    counts = _counts(analysis)
    problem = worst is not None and worst.severity > Severity.INFO
    # Info notes are not problems: a healthy log's verdict shows no counts (a note line does).
    label = _label(analysis) + (f" ({counts})" if counts and problem else "")
    if worst is not None and problem:
        what = terminal_text(worst.title)
    elif word == NOT_CHECKED:
        what = not_a_health_verdict(analysis) or "no detector ran"
    else:
        what = f"healthy, {steps_logged(analysis.run)}"
    plain = f"{word}  {label}: {what}"
    lines = wording.wrap(plain, options.width, _INDENT, first_indent="")
    first = lines[0]
    lines[0] = style.verdict(word, warned=problem) + first[len(word) :]
    return lines


def _notes_line(analysis: Analysis, width: int) -> list[str]:
    """A healthy log's info notes in one line (their titles, cut to fit)."""
    notes = [f for f in active_findings(analysis) if f.severity is Severity.INFO]
    if not notes:
        return []
    titles = "; ".join(f"{f.id} {terminal_text(f.title)}" for f in notes)
    head = f"{_INDENT}{wording.plural(len(notes), 'note')}: "
    return [head + wording.one_line(titles, width - len(head))]


def finding_place(finding: Finding) -> str:
    """`grad_norm, steps 301-381`, or `spikes on eval/loss, step 325` when the detector and
    the metric differ and the title does not name the metric."""
    metric = terminal_text(finding.metric)
    named = metric == finding.detector or metric in terminal_text(finding.title)
    what = finding.detector if named else f"{finding.detector} on {metric}"
    return f"{what}, {step_range(finding)}"


def first_sentence(text: str) -> str:
    """A message's first sentence (what a terse line shows of it)."""
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def _root_cause_lines(analysis: Analysis, width: int, style: Style) -> list[str]:
    lines = []
    for chain in analysis.chains:
        root = analysis.by_id(chain[0])
        path = " \u2192 ".join(f"{i} {analysis.by_id(i).detector}" for i in chain)
        text = f"Root cause: {terminal_text(root.title)} ({path})"
        wrapped = wording.wrap(text, width, _INDENT, first_indent="")
        wrapped[0] = style.paint("Root cause:", _BOLD) + wrapped[0][len("Root cause:") :]
        lines.extend(wrapped)
    return lines


def _title_lines(finding: Finding, width: int, style: Style) -> list[str]:
    head = f"{finding.id} {finding.severity.label:<7}  {step_range(finding)}  [{finding.detector}]"
    text = f"{head} {terminal_text(finding.title)}"
    if finding.suppressed is not None:
        text += f" (suppressed: {terminal_text(finding.suppressed)})"
    lines = wording.wrap(text, width, _INDENT, first_indent="")
    skip = len(finding.id) + 1 + 7  # "F2 " and the padded label, repainted
    lines[0] = f"{finding.id} {style.severity(finding.severity)}" + lines[0][skip:]
    return lines


def _brief_finding(finding: Finding, width: int, style: Style) -> list[str]:
    """Title, the message's first sentence, the first fix (an info note: its title)."""
    lines = _title_lines(finding, width, style)
    if finding.severity is Severity.INFO and finding.suppressed is None:
        return lines
    lines.extend(wording.wrap(terminal_text(first_sentence(finding.message)), width, _INDENT))
    if finding.fixes:
        lines.extend(wording.wrap("fix: " + terminal_text(finding.fixes[0]), width, _INDENT))
    return lines


def _full_finding(finding: Finding, width: int, style: Style) -> list[str]:
    """Everything the finding says: message, metric, evidence, cause, every fix."""
    lines = _title_lines(finding, width, style)
    lines.extend(wording.wrap(terminal_text(finding.message), width, _INDENT))
    lines.append(f"{_INDENT}metric: {terminal_text(finding.metric)}")
    if finding.evidence:
        evidence = ", ".join(
            f"{terminal_text(k)}={terminal_text(wording.value(v))}"
            for k, v in finding.evidence.items()
        )
        lines.extend(wording.wrap("evidence: " + evidence, width, _INDENT))
    if finding.cause:
        lines.append(f"{_INDENT}caused by: {finding.cause}")
    for fix in finding.fixes:
        lines.extend(wording.wrap("fix: " + terminal_text(fix), width, _INDENT))
    return lines


def _detail_lines(analysis: Analysis, finding: Finding, width: int, style: Style) -> list[str]:
    """One finding in explain-style detail: in full, its incident, what its detector does."""
    lines = _full_finding(finding, width, style)
    if finding.related:
        lines.append(f"{_INDENT}same incident: {', '.join(finding.related)}")
    doc = detector_doc(finding.detector)
    about = f"about {finding.detector}: {inline_text(doc.description)}"
    lines.extend(wording.wrap(about, width, _INDENT))
    lines.append(f"{_INDENT}how it decides: trainspotter explain {finding.detector}")
    return lines


def _check_lines(analysis: Analysis, width: int) -> list[str]:
    """What was checked: each detector that ran and its metrics; why the others did not."""
    lines = []
    ran, not_run = checks_ran(analysis), checks_not_run(analysis)
    if ran:
        lines.extend(wording.wrap("Checked: " + terminal_text("; ".join(ran)), width, _INDENT))
    if not_run:
        text = "Not checked: " + terminal_text("; ".join(not_run))
        lines.extend(wording.wrap(text, width, _INDENT))
    return lines


def _facts_line(analysis: Analysis) -> str:
    run = analysis.run
    points = sum(len(s) for s in run.metrics.values())
    return (
        f"{run.source_format} log, {steps_logged(run)}, {wording.count(len(run.metrics), 'metric')}"
        f", {wording.count(points, 'point')}"
    )


def _metric_lines(analysis: Analysis) -> list[str]:
    rows = []
    for name, series in sorted(analysis.run.metrics.items()):
        if not len(series):
            continue
        last = wording.value(float(series.values[-1]))
        bad = series.nonfinite_count()
        span = wording.step_span(int(series.steps[0]), int(series.steps[-1]))
        rows.append(
            f"  {terminal_text(name)[:32]:<32} {wording.count(len(series), 'point'):>12}  "
            f"{span}  last {last}" + (f"  non-finite {bad:,}" if bad else "")
        )
    return ["Metrics:", *rows] if rows else ["Metrics: none"]


def _note_lines(analysis: Analysis, width: int) -> list[str]:
    notes = analysis.run.notes()
    if not notes:
        return []
    lines = ["Reader notes:"]
    lines.extend(line for note in notes for line in wording.wrap(terminal_text(note), width, "  "))
    return lines


def render_one(analysis: Analysis, options: RenderOptions) -> str:
    """One log's report (no trailing blank line)."""
    style = Style(options.color)
    width = options.width
    lines = verdict_lines(analysis, options, style)
    if options.quiet:
        return "\n".join(lines)
    verdict_only = len(lines) == 1
    if analysis.comparison is not None:  # compared with a baseline: the table, always
        lines.extend(comparison.terminal_lines(analysis.comparison, terminal_text))
    findings = active_findings(analysis) if not options.verbose else analysis.findings
    problems = [f for f in findings if f.severity > Severity.INFO or f.suppressed is not None]
    if not options.verbose and not problems:
        if verdict_only:  # a healthy log is two lines at most: notes only if room
            lines.extend(_notes_line(analysis, width))
        not_run = checks_not_run(analysis)
        if verdict_word(analysis, options.fail_on) == NOT_CHECKED and not_run:
            text = "Not checked: " + terminal_text("; ".join(not_run))
            lines.extend(wording.wrap(text, width, _INDENT, first_indent=_INDENT))
        return "\n".join(lines)
    if options.verbose:
        lines.append(style.paint(f"{_INDENT}{_facts_line(analysis)}", _DIM))
        lines.extend(style.paint(line, _DIM) for line in _check_lines(analysis, width))
    lines.extend(_root_cause_lines(analysis, width, style))
    show = _full_finding if options.verbose else _brief_finding
    for finding in findings:
        lines.append("")
        lines.extend(show(finding, width, style))
    if options.verbose:
        lines.extend(["", *_metric_lines(analysis)])
        notes = _note_lines(analysis, width)
        lines.extend(["", *notes] if notes else [])
    elif analysis.run.notes():
        lines.extend(["", f"{wording.count(len(analysis.run.notes()), 'reader note')}: --verbose"])
    return "\n".join(lines)


def render_finding(analysis: Analysis, finding_id: str, options: RenderOptions) -> str | None:
    """The verdict line and one finding in detail, or None when the log has no such id."""
    finding = next((f for f in analysis.findings if f.id == finding_id), None)
    if finding is None:
        return None
    style = Style(options.color)
    lines = verdict_lines(analysis, options, style)
    lines.append("")
    lines.extend(_detail_lines(analysis, finding, options.width, style))
    return "\n".join(lines)


def _summary_line(analyses: Sequence[Analysis], fail_on: Severity) -> str:
    words = [verdict_word(a, fail_on) for a in analyses]
    verdicts = {w.lower(): words.count(w) for w in (FAILED, NOT_CHECKED, PASSED) if w in words}
    totals: dict[str, int] = {s.label: 0 for s in sorted(Severity, reverse=True)}
    for analysis in analyses:
        for label, n in analysis.counts().items():
            totals[label] += n
    found = wording.counts_phrase(totals) if any(totals.values()) else "no findings"
    shown = ", ".join(f"{n} {w}" for w, n in verdicts.items())
    return f"{wording.count(len(analyses), 'log')}: {shown}; {found}"


def _hint(analyses: Sequence[Analysis]) -> str | None:
    """How to see more, when something was shortened."""
    ids = [f.id for a in analyses for f in active_findings(a) if f.severity > Severity.INFO]
    if not ids:
        return None
    # `gate` has no --finding: name the command that has it (`compare` for a comparison).
    command = "compare" if any(a.comparison is not None for a in analyses) else "analyze"
    return f"More: --verbose for the evidence and every fix; {command} --finding {ids[0]} for one"


class TerminalReport:
    """Human-readable text, terse unless verbose, wrapped to the width, coloured on a TTY."""

    name = "terminal"
    description = "human-readable text report (coloured on a TTY unless NO_COLOR is set)"

    def render(self, analyses: Sequence[Analysis], options: RenderOptions) -> str:
        if options.finding is not None:
            found = [render_finding(a, options.finding, options) for a in analyses]
            return runner_inert_lines("\n\n".join(t for t in found if t is not None) + "\n")
        blocks = [render_one(a, options) for a in analyses]
        text = ""
        for pos, block in enumerate(blocks):
            tall = block.count("\n") >= 2
            if pos and (tall or blocks[pos - 1].count("\n") >= 2):
                text += "\n"
            text += block + "\n"
        if not options.quiet:
            if len(analyses) > 1:
                text += (
                    ("\n" if text.count("\n") > len(analyses) * 2 else "")
                    + _summary_line(analyses, options.fail_on)
                    + "\n"
                )
            hint = None if options.verbose else _hint(analyses)
            if hint is not None:
                text += "\n" + "\n".join(wording.wrap(hint, options.width)) + "\n"
        return runner_inert_lines(text)


REPORT = TerminalReport()
