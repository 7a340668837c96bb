"""The CI gate: glob patterns -> logs -> analyses -> every output -> one exit code.

`run_gate` is five named steps:

1. **Plan**: the options over the config (patterns, fail_on, outputs, report folder).
2. **Check**: discover the logs (`trainspotter.discover`: globs, folders, TensorBoard run
   folders, the newest Hugging Face checkpoint copy, sweeps) and check each one
   (`batch.check_target`: the config's format, aliases, detector settings and `ignore`
   rules; a suppressed finding stays in every report, marked with its reason); compare
   each with the config's `baseline:` and check its `rules:` (`trainspotter.compare`).
   Logs arrive one by one, in input order: each log's HTML page is rendered then (and
   staged until step 5), and only what the other reports read of it is kept
   (`trainspotter.reduced`), so memory does not grow with the logs' size.
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
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from trainspotter.analysis import Analysis
from trainspotter.batch import analyze_targets
from trainspotter.compare.apply import compare_analyses
from trainspotter.compare.command import load_baseline
from trainspotter.config import Config
from trainspotter.discover import Collected, Problem, expand_patterns, outside_problem
from trainspotter.errors import (
    TrainspotterError,
    UsageError,
)
from trainspotter.gate_text import (
    COMMENT_LIMIT_BYTES,
    gate_markdown,
    index_html,
    markdown_report,
    verdict_text,
)
from trainspotter.model import Severity
from trainspotter.paths import shown_path
from trainspotter.reduced import reduce_for_reports
from trainspotter.report import REPORTS, RenderOptions, wording
from trainspotter.report.common import total_counts
from trainspotter.report.escape import (
    fence_workflow_commands,
    workflow_message,
    workflow_property,
)
from trainspotter.report.markdown import (
    MAX_CHARTS,
    SUMMARY_LIMIT_BYTES,
    needs_attention,
)
from trainspotter.safe_write import InputGuard, prepare_folder, report_file_name, write_inside
from trainspotter.verdict import exit_code, worst_of

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
    within: Path | None = None
    """Read no log (nor the baseline) outside this folder: the workspace in the GitHub
    Action, where a pull request can change the config's patterns and commit symlinks
    (`discover`: a pattern, a symlink or a folder log that leads out is refused); None:
    any path, as on the user's own machine (the CLI)."""
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
    """Every log's analysis, most reduced to what the reports read (`trainspotter.reduced`:
    per metric its counts and end points, not its arrays)."""
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
    within: Path | None
    """The folder every log read must resolve inside (`GateOptions.within`)."""
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
        within=options.within,
        render=RenderOptions(
            color=options.color and not options.github,
            fail_on=fail_on,
            verbose=options.verbose,
            quiet=options.quiet,
            width=options.width,
        ),
    )


class _Pages:
    """Each log's HTML page, rendered while its analysis is whole and staged in a private
    temporary folder until the report folder is written (the gate keeps only a reduced
    analysis of each log: `trainspotter.reduced`)."""

    def __init__(self, folder: Path, render: RenderOptions) -> None:
        self.folder = folder
        self.render = render
        self.staged: list[Path] = []

    def stage(self, analysis: Analysis) -> None:
        page = self.folder / f"{len(self.staged)}.html"
        page.write_text(REPORTS["html"].render([analysis], self.render), encoding="utf-8")
        self.staged.append(page)


def _check(plan: _Plan, options: GateOptions, pages: _Pages | None) -> _Checked:
    """Discover and check every log; compare each with the baseline (`_baseline`); stage
    its HTML page (`pages`); keep what the other reports need of it (`_kept`)."""
    collected: Collected = expand_patterns(
        plan.patterns,
        base=plan.base,
        display_root=plan.display_root,
        allow_empty=plan.config.allow_empty,
        exclude=plan.report_dir,
        config=plan.config,
        within=plan.within,
    )
    checked = _Checked([], list(collected.failures), collected.skipped)
    checked.inputs = [target.path for target in collected.targets]
    baseline, unreadable_baseline = _baseline(plan, checked)
    results = analyze_targets(
        collected.targets,
        plan.config,
        jobs=options.jobs,
        progress=options.progress,
        engine=options.engine,
        scheduler=options.scheduler,
    )
    charted = 0
    for target, result in zip(collected.targets, results, strict=True):
        if isinstance(result, TrainspotterError):
            checked.failures.append(_not_checked(target.display, result))
            continue
        for analysis in result:
            if unreadable_baseline is None:
                analysis = compare_analyses(analysis, baseline, plan.config)
            if pages is not None:
                pages.stage(analysis)
            whole = charted < MAX_CHARTS and needs_attention(analysis, plan.fail_on)
            charted += whole
            checked.analyses.append(analysis if whole else reduce_for_reports(analysis))
    if unreadable_baseline is not None:
        checked.failures.append(unreadable_baseline)
    return checked


def _not_checked(display: str, error: TrainspotterError) -> Problem:
    """A log that could not be checked: the error's `problem`, else its whole message."""
    return Problem(display, str(getattr(error, "problem", None) or error))


def _baseline(plan: _Plan, checked: _Checked) -> tuple[Analysis | None, Problem | None]:
    """The config's `baseline:` log's analysis (None when there is none), each log compared with it
    and checked against the `rules:` (`trainspotter.compare`); or, when the baseline
    cannot be read, why: a log that could not be checked (exit 2), and nothing compared."""
    config = plan.config
    if config.baseline is None:
        return None, None
    checked.inputs.append(plan.base / config.baseline)  # never replaced by a report
    outside = plan.within and outside_problem(plan.base / config.baseline, plan.within)
    if outside:
        return None, Problem(f"baseline {config.baseline}", outside)
    try:
        return load_baseline(config.baseline, config, base=plan.base), None
    except TrainspotterError as exc:
        return None, _not_checked(f"baseline {config.baseline}", exc)


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
    pages: _Pages,
) -> _Written:
    analyses, render = checked.analyses, plan.render
    head, tail = gate_markdown(verdict, code, checked.failures, checked.skipped)
    note = options.artifact_note
    summary = markdown_report(analyses, SUMMARY_LIMIT_BYTES, head, tail, note, plan.fail_on)
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
            comment = markdown_report(analyses, COMMENT_LIMIT_BYTES, head, tail, note, plan.fail_on)
            written.files[name] = write_inside(folder, OUTPUT_FILES[name], comment)
        elif name == "html":
            entries: list[tuple[str, str, Severity | None]] = []
            names = _html_names(analyses)
            for analysis, file_name, staged in zip(analyses, names, pages.staged, strict=True):
                page = staged.read_text(encoding="utf-8")
                written.html_files.append(write_inside(folder, f"html/{file_name}", page))
                staged.unlink()  # the staged pages never take twice their room on disk
                entries.append((analysis.run.source_path, file_name, analysis.worst))
            if entries:
                index = write_inside(folder, "html/index.html", index_html(entries))
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
    with tempfile.TemporaryDirectory(prefix="trainspotter-pages-") as staging:
        pages = _Pages(Path(staging), plan.render)
        checked = _check(
            plan, options, pages if "html" in _file_outputs(plan, unavailable) else None
        )
        refused = _refuse_inputs(plan, checked, unavailable)
        code = exit_code(checked.analyses, plan.fail_on, unchecked=len(checked.failures))
        worst = worst_of(checked.analyses)
        verdict = verdict_text(code, worst, plan.fail_on, len(checked.failures))
        _print_log(plan, options, checked, verdict, unavailable, (stdout, stderr))
        written = _write_outputs(plan, options, checked, verdict, code, unavailable, refused, pages)
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
