"""The CI gate: glob patterns -> logs -> analyses -> every output -> one exit code.

`run_gate` is five named steps:

1. **Plan**: the options over the config (patterns, fail_on, outputs, report folder).
2. **Check**: discover the logs (`trainspotter.discover`: globs, folders, TensorBoard run
   folders, the newest Hugging Face checkpoint copy, sweeps) and check each one
   (`batch.check_target`: the config's format, aliases, detector settings and `ignore`
   rules; a suppressed finding stays in every report, marked with its reason); then
   compare each with the config's `baseline:` and check its `rules:` (`trainspotter.compare`).
3. **Exit code** by the rule every front end shares (`trainspotter.verdict`): 2 when a
   log could not be read or a pattern found nothing (the gate could not check everything
   it was asked to; every readable log is still analysed and reported), else 1 when the
   highest unsuppressed severity is at or above `fail_on`, else 0.
4. **Print** the terminal log on stdout, and GitHub annotations (in GitHub Actions only).
5. **Write** to the report folder: `summary.md` (job summary), `comment.md` (PR comment),
   `trainspotter.json` (all logs), `html/<log>.html` per log plus `html/index.html`, and
   on request SARIF, GitLab Code Quality and JUnit files.

Inside GitHub Actions every line of human-readable output (which holds log-derived
text: paths, metric names) is printed between `::stop-commands::<random token>` and
`::<token>::`, so no log can issue a workflow command; our own annotations come after.

This module parses no log format and formats no finding itself: readers and the
`REPORTS` registry do; it composes them and decides where each output goes.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from trainspotter.analysis import Analysis
from trainspotter.batch import analyze_targets
from trainspotter.compare.apply import compare_analyses
from trainspotter.compare.command import load_baseline
from trainspotter.config import Config
from trainspotter.discover import Collected, Problem, expand_patterns
from trainspotter.errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    TrainspotterError,
    UsageError,
)
from trainspotter.model import Severity
from trainspotter.paths import shown_path
from trainspotter.report import REPORTS, RenderOptions, wording
from trainspotter.report.common import total_counts
from trainspotter.report.escape import (
    code_span_text,
    fence_workflow_commands,
    markdown_text,
    workflow_message,
    workflow_property,
)
from trainspotter.report.markdown import SUMMARY_LIMIT_BYTES, render_markdown
from trainspotter.safe_write import InputGuard, prepare_folder, report_file_name, write_inside
from trainspotter.verdict import exit_code, worst_of

COMMENT_LIMIT_BYTES = 60_000
"""GitHub rejects a comment body over 65,536 characters; this leaves room for the
sticky-comment marker the Action adds."""
SKIPPED_LISTED = 50
"""At most this many skipped paths are named in the summary (the rest are counted)."""

OUTPUT_FILES = {
    "summary": "summary.md",
    "comment": "comment.md",
    "json": "trainspotter.json",
    "sarif": "trainspotter.sarif",
    "codequality": "gl-code-quality-report.json",
    "junit": "junit.xml",
}
"""File names in the report folder (HTML pages go to `html/`)."""
_REPORT_OF_OUTPUT = {
    "json": "json",
    "sarif": "sarif",
    "codequality": "codequality",
    "junit": "junit",
    "html": "html",
    "summary": "markdown",
    "comment": "markdown",
    "annotations": "github",
}


@dataclass(frozen=True)
class GateOptions:
    """Everything the gate needs besides the config."""

    patterns: tuple[str, ...] = ()
    """Patterns to check; empty means the config's `paths`."""
    config: Config = field(default_factory=Config)
    fail_on: Severity | None = None
    """None: the config's `fail_on`."""
    format: str | None = None
    """A reader id forced for every log (over the config's `format`)."""
    base: Path = field(default_factory=Path.cwd)
    """Where patterns, the config's paths and the report folder are relative to."""
    display_root: Path | None = None
    """Paths in reports are relative to this (the repository root in CI); default base."""
    report_dir: Path | None = None
    """None: the config's `report.directory` under base."""
    outputs: tuple[str, ...] | None = None
    """None: the config's `report.outputs`."""
    github: bool = False
    """Running in GitHub Actions: annotations and stop-commands wrapping."""
    color: bool = False
    verbose: bool = False
    """The terminal log: every finding in full (else terse), or only verdicts (quiet)."""
    quiet: bool = False
    width: int = 80
    """The terminal log's wrap column."""
    comment: bool | None = None
    """Write comment.md; None: the config's `report.comment`."""
    jobs: int | None = None
    """Processes for reading and analysing logs; None: one per core."""
    engine: str = "processes"
    """`processes` (a pool on this machine) or `dask` (see `batch.analyze_targets`)."""
    scheduler: str | None = None
    """The Dask scheduler's address; None: a LocalCluster of `jobs` workers."""
    progress: TextIO | None = None
    """Where to draw a progress bar for long work (stderr on a TTY); None: no bar."""
    artifact_note: str | None = None
    """A Markdown line (our own text, trusted) appended to the summary and the comment,
    e.g. where to download the HTML reports."""


@dataclass
class GateResult:
    """What the gate found and wrote."""

    exit_code: int
    fail_on: Severity
    analyses: list[Analysis]
    failures: list[Problem]
    skipped: list[Problem]
    counts: dict[str, int]
    max_severity: Severity | None
    report_dir: Path | None
    files: dict[str, Path]
    """Output name (`summary`, `comment`, `json`, ...) -> file written."""
    html_files: list[Path]
    summary_markdown: str
    skipped_outputs: dict[str, str]
    """Output name -> why it was not produced."""


def _verdict(result_code: int, worst: Severity | None, fail_on: Severity, failures: int) -> str:
    if result_code == EXIT_BAD_INPUT:
        return f"could not check everything: {wording.count(failures, 'problem')}"
    if result_code == EXIT_GATE_FAILED:
        assert worst is not None
        return f"failed: a finding at {worst.label}, at or above fail_on={fail_on.label}"
    shown_worst = worst.label if worst else "none"
    return f"passed: worst unsuppressed severity {shown_worst}, below fail_on={fail_on.label}"


def _gate_markdown(
    verdict: str, code: int, failures: Sequence[Problem], skipped: Sequence[Problem]
) -> tuple[str, str]:
    """Our own head and tail for the summary and the comment (paths escaped)."""
    mark = {EXIT_OK: "\u2705", EXIT_GATE_FAILED: "\u274c", EXIT_BAD_INPUT: "\u26a0\ufe0f"}[code]
    head = f"**trainspotter gate {mark} {markdown_text(verdict)}**\n\n"
    tail: list[str] = []
    if failures:
        tail.append("\n### Not checked\n")
        tail.extend(_problem_items(failures, " (see the job log)", limit=500))
        tail.append("")
    if skipped:
        tail.append(f"\n<details><summary>{len(skipped)} matched paths skipped</summary>\n")
        tail.extend(_problem_items(skipped, ""))
        tail.append("\n</details>\n")
    return head, "\n".join(tail)


def _problem_items(problems: Sequence[Problem], more: str, limit: int | None = None) -> list[str]:
    """Up to SKIPPED_LISTED problems as list items (reasons cut at `limit`), then the rest
    counted: `- and N more{more}`."""
    items = [
        f"- `{_code_span(p.display)}`: {markdown_text(p.reason[:limit])}"
        for p in problems[:SKIPPED_LISTED]
    ]
    if len(problems) > SKIPPED_LISTED:
        items.append(f"- and {len(problems) - SKIPPED_LISTED} more{more}")
    return items


def _code_span(text: str) -> str:
    """Log-derived text inside a Markdown code span (`escape.code_span_text`), at most
    300 characters."""
    return code_span_text(text)[:300]


def _markdown(
    analyses: Sequence[Analysis],
    limit: int,
    head: str,
    tail: str,
    note: str | None,
    fail_on: Severity = Severity.ERROR,
) -> str:
    note_text = f"\n{note}\n" if note else ""
    room = max(limit - len((head + tail + note_text).encode("utf-8")), 16 * 1024)
    body = render_markdown(analyses, room, fail_on) if analyses else ""
    return head + body + tail + note_text


def _index_html(entries: Sequence[tuple[str, str, Severity | None]]) -> str:
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


@dataclass(frozen=True)
class _Plan:
    """Step 1: what to check and where to write, the options taken over the config."""

    config: Config
    base: Path
    display_root: Path
    fail_on: Severity
    patterns: tuple[str, ...]
    outputs: tuple[str, ...]
    report_dir: Path
    report_within: Path | None
    """The folder the report folder must resolve inside (the config's is; --report-dir,
    the user's own choice, is not checked)."""
    render: RenderOptions


@dataclass
class _Checked:
    """Step 2: every log analysed, and what could not be checked or was skipped."""

    analyses: list[Analysis]
    failures: list[Problem]
    skipped: list[Problem]
    inputs: list[Path] = field(default_factory=list)
    """Every log read (files and folders): no report may replace one."""


def _plan(options: GateOptions) -> _Plan:
    config = options.config
    patterns = options.patterns or config.paths
    if not patterns:
        raise UsageError(
            "no log patterns: give PATTERN arguments (the Action's `paths` input) "
            "or set `paths` in .trainspotter.yml"
        )
    if options.format is not None:
        config = dataclasses.replace(config, format=options.format, formats={})
    outputs = options.outputs if options.outputs is not None else config.report.outputs
    if not (options.comment if options.comment is not None else config.report.comment):
        outputs = tuple(o for o in outputs if o != "comment")
    fail_on = options.fail_on or config.fail_on
    return _Plan(
        config=config,
        base=options.base,
        display_root=options.display_root or options.base,
        fail_on=fail_on,
        patterns=tuple(patterns),
        outputs=tuple(outputs),
        report_dir=options.report_dir or (options.base / config.report.directory),
        report_within=None if options.report_dir else options.base,
        render=RenderOptions(
            color=options.color and not options.github,
            fail_on=fail_on,
            verbose=options.verbose,
            quiet=options.quiet,
            width=options.width,
        ),
    )


def _check(plan: _Plan, options: GateOptions) -> _Checked:
    collected: Collected = expand_patterns(
        plan.patterns,
        base=plan.base,
        display_root=plan.display_root,
        allow_empty=plan.config.allow_empty,
        exclude=plan.report_dir,
        config=plan.config,
    )
    checked = _Checked([], list(collected.failures), collected.skipped)
    checked.inputs = [target.path for target in collected.targets]
    results = analyze_targets(
        collected.targets,
        plan.config,
        jobs=options.jobs,
        progress=options.progress,
        engine=options.engine,
        scheduler=options.scheduler,
    )
    for target, result in zip(collected.targets, results, strict=True):
        if isinstance(result, TrainspotterError):
            checked.failures.append(_not_checked(target.display, result))
        else:
            checked.analyses.extend(result)
    return checked


def _not_checked(display: str, error: TrainspotterError) -> Problem:
    """A log that could not be checked: the error's `problem`, else its whole message."""
    return Problem(display, str(getattr(error, "problem", None) or error))


def _compare(plan: _Plan, checked: _Checked) -> None:
    """The config's `baseline:` and `rules:` applied to every log (`trainspotter.compare`);
    a baseline that cannot be read is a log that could not be checked (exit 2)."""
    config = plan.config
    baseline = None
    if config.baseline is not None:
        checked.inputs.append(plan.base / config.baseline)  # never replaced by a report
        try:
            baseline = load_baseline(config.baseline, config, base=plan.base)
        except TrainspotterError as exc:
            checked.failures.append(_not_checked(f"baseline {config.baseline}", exc))
            return
    checked.analyses = [compare_analyses(a, baseline, config) for a in checked.analyses]


def _unavailable(outputs: Sequence[str]) -> dict[str, str]:
    """Output name -> why it cannot be produced (its report format is not installed)."""
    missing: dict[str, str] = {}
    for name in outputs:
        report = _REPORT_OF_OUTPUT[name]
        if report not in REPORTS:
            missing[name] = f"the {report!r} report format is not available"
    return missing


def _print_log(
    plan: _Plan,
    options: GateOptions,
    checked: _Checked,
    verdict: str,
    unavailable: dict[str, str],
    streams: tuple[TextIO, TextIO],
) -> None:
    """The terminal log (log-derived text: fenced off from workflow commands in GitHub
    Actions), then our own annotations."""
    stdout, stderr = streams
    render = plan.render
    analyses, failures = checked.analyses, checked.failures
    lines: list[str] = []
    if analyses:
        lines.append(REPORTS["terminal"].render(analyses, render).rstrip("\n"))
    lines.extend(f"skipped {p.display}: {p.reason}" for p in checked.skipped)
    count = f"{wording.count(len(analyses), 'log')} checked"
    lines.append(f"trainspotter gate: {count}; {verdict}")
    text = "\n".join(lines) + "\n"
    error_lines = "".join(f"trainspotter: error: {p.display}: {p.reason}\n" for p in failures)
    if options.github:
        stdout.write(fence_workflow_commands(error_lines + text))
    else:
        stdout.write(text)
        stderr.write(error_lines)
    if options.github and "annotations" in plan.outputs and "annotations" not in unavailable:
        stdout.write(REPORTS["github"].render(analyses, render))
        for p in failures:
            where = "" if p.is_pattern else f"file={workflow_property(p.display)},"
            title = workflow_property("trainspotter: not checked")
            message = workflow_message(f"{p.display}: {p.reason}" if p.is_pattern else p.reason)
            stdout.write(f"::error {where}title={title}::{message}\n")
    stdout.flush()


@dataclass
class _Written:
    """Step 5: the files written, and the summary Markdown (also for the Action)."""

    files: dict[str, Path]
    html_files: list[Path]
    summary: str
    report_dir: Path | None


def _write_outputs(
    plan: _Plan,
    options: GateOptions,
    checked: _Checked,
    verdict: str,
    code: int,
    unavailable: dict[str, str],
    refused: set[str],
) -> _Written:
    analyses, render = checked.analyses, plan.render
    head, tail = _gate_markdown(verdict, code, checked.failures, checked.skipped)
    note = options.artifact_note
    summary = _markdown(analyses, SUMMARY_LIMIT_BYTES, head, tail, note, plan.fail_on)
    written = _Written({}, [], summary, None)
    wanted = _file_outputs(plan, unavailable)
    if not wanted:
        return written
    report_dir = written.report_dir = plan.report_dir
    folder = prepare_folder(report_dir, within=plan.report_within)
    for name in wanted:
        if name in refused:
            continue
        if name == "summary":
            written.files[name] = write_inside(folder, OUTPUT_FILES[name], written.summary)
        elif name == "comment":
            comment = _markdown(analyses, COMMENT_LIMIT_BYTES, head, tail, note, plan.fail_on)
            written.files[name] = write_inside(folder, OUTPUT_FILES[name], comment)
        elif name == "html":
            entries: list[tuple[str, str, Severity | None]] = []
            for analysis, file_name in zip(analyses, _html_names(analyses), strict=True):
                page = REPORTS["html"].render([analysis], render)
                written.html_files.append(write_inside(folder, f"html/{file_name}", page))
                entries.append((analysis.run.source_path, file_name, analysis.worst))
            if entries:
                index = write_inside(folder, "html/index.html", _index_html(entries))
                written.files["html"] = index
        else:
            rendered = REPORTS[_REPORT_OF_OUTPUT[name]].render(analyses, render)
            written.files[name] = write_inside(folder, OUTPUT_FILES[name], rendered)
    return written


def _file_outputs(plan: _Plan, unavailable: dict[str, str]) -> list[str]:
    """The outputs that are files in the report folder."""
    return [o for o in plan.outputs if o not in unavailable and o != "annotations"]


def _html_names(analyses: Sequence[Analysis]) -> list[str]:
    used: set[str] = {"index.html"}
    return [report_file_name(analysis.run.source_path, used) for analysis in analyses]


def _refuse_inputs(plan: _Plan, checked: _Checked, unavailable: dict[str, str]) -> set[str]:
    """The outputs whose file would replace a log being read: not written, each listed
    as a problem (the gate could not do all it was asked: exit 2)."""
    refused: set[str] = set()
    guard = InputGuard(checked.inputs)
    for name in _file_outputs(plan, unavailable):
        if name == "html":
            relatives = ["html/index.html", *(f"html/{n}" for n in _html_names(checked.analyses))]
        else:
            relatives = [OUTPUT_FILES[name]]
        for relative in relatives:
            destination = plan.report_dir / relative
            if guard.replaces(destination):
                refused.add(name)
                checked.failures.append(
                    Problem(
                        shown_path(destination, plan.display_root),
                        f"the {name} report would replace this input log: not written "
                        "(choose another report folder)",
                    )
                )
                break
    return refused


def run_gate(options: GateOptions, stdout: TextIO, stderr: TextIO) -> GateResult:
    """Plan, check, decide the exit code, print, write every output."""
    plan = _plan(options)
    unavailable = _unavailable(plan.outputs)
    if _file_outputs(plan, unavailable):
        # An unusable report folder is found before the work, not after it.
        prepare_folder(plan.report_dir, within=plan.report_within)
    checked = _check(plan, options)
    _compare(plan, checked)
    refused = _refuse_inputs(plan, checked, unavailable)
    code = exit_code(checked.analyses, plan.fail_on, unchecked=len(checked.failures))
    worst = worst_of(checked.analyses)
    verdict = _verdict(code, worst, plan.fail_on, len(checked.failures))
    _print_log(plan, options, checked, verdict, unavailable, (stdout, stderr))
    written = _write_outputs(plan, options, checked, verdict, code, unavailable, refused)
    return GateResult(
        exit_code=code,
        fail_on=plan.fail_on,
        analyses=checked.analyses,
        failures=checked.failures,
        skipped=checked.skipped,
        counts={s.label: n for s, n in total_counts(checked.analyses).items()},
        max_severity=worst,
        report_dir=written.report_dir,
        files=written.files,
        html_files=written.html_files,
        summary_markdown=written.summary,
        skipped_outputs=unavailable,
    )


__all__ = ["GateOptions", "GateResult", "report_file_name", "run_gate"]
