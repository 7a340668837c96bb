"""The CI gate: glob patterns -> logs -> analyses -> every output -> one exit code.

1. **Expand** each pattern relative to the base folder (`**` spans folders; hidden files
   and folders are not matched, the report folder never is). A pattern without glob
   characters names one file or folder. A matched folder is a log when a reader finds
   one in it (a TensorBoard run folder, a Hugging Face output folder) and no matched file
   lies inside it. TensorBoard event files stand for their run folder (Keras `train/` and
   `validation/` sub-folders for the folder above), so a run is read once, whole. Of the
   `trainer_state.json` files of one Hugging Face output folder only the newest is read
   (the top-level one, else the highest `checkpoint-N/`): each checkpoint's file holds
   the log up to that checkpoint, so the others would repeat it; they are listed as
   skipped. A pattern whose last part is `*` or `**` sweeps folders: there, files that no
   reader recognises are skipped and listed; any other matched file is a log and must be
   readable. A pattern that yields no log is an error, unless `allow_empty`.
2. **Analyse** each log with the config's detector settings, aliases and `ignore` rules
   (a suppressed finding stays in every report, marked with its reason).
3. **Report**: the terminal log on stdout, GitHub annotations (in GitHub Actions only),
   and in the report folder: `summary.md` (job summary), `comment.md` (PR comment),
   `trainspotter.json` (all logs), `html/<log>.html` per log plus `html/index.html`, and
   on request SARIF, GitLab Code Quality and JUnit files.
4. **Exit code**: 2 when a log could not be read or a pattern found nothing (the gate
   could not check everything it was asked to; every readable log is still analysed and
   reported, like a compiler that reports every file before failing), else 1 when the
   highest unsuppressed severity is at or above `fail_on`, else 0.

Inside GitHub Actions every line of human-readable output (which holds log-derived
text: paths, metric names) is printed between `::stop-commands::<random token>` and
`::<token>::`, so no log can issue a workflow command; our own annotations come after.

This module parses no log format and formats no finding itself: readers and the
`REPORTS` registry do; it composes them and decides where each output goes.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import html
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from trainspotter.analysis import Analysis, analyze
from trainspotter.batch import analyze_targets
from trainspotter.config import Config, glob_problem
from trainspotter.errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    TrainspotterError,
    UsageError,
)
from trainspotter.model import Severity
from trainspotter.readers import detect_format, read_runs
from trainspotter.readers.base import ReadOptions
from trainspotter.readers.hf import CHECKPOINT_PREFIX, STATE_FILE
from trainspotter.readers.tensorboard_events import EVENT_FILE_PREFIX, KERAS_FOLDERS
from trainspotter.report import REPORTS, RenderOptions
from trainspotter.report.escape import markdown_text, workflow_message, workflow_property
from trainspotter.report.markdown import SUMMARY_LIMIT_BYTES, render_markdown

COMMENT_LIMIT_BYTES = 60_000
"""GitHub rejects a comment body over 65,536 characters; this leaves room for the
sticky-comment marker the Action adds."""
SKIPPED_LISTED = 50
"""At most this many skipped paths are named in the summary (the rest are counted)."""
FILE_NAME_LIMIT = 100

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
_GLOB_CHARS = re.compile(r"[*?\[]")
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
)


@dataclass(frozen=True)
class LogTarget:
    """One log to analyse."""

    path: Path
    """Where to read it (file or folder)."""
    display: str
    """How reports name it: relative to the display root, forward slashes."""
    pattern: str
    """The pattern that found it (for per-pattern `format` entries)."""


@dataclass(frozen=True)
class Problem:
    """A path the gate skipped, or one it could not check."""

    display: str
    reason: str
    is_pattern: bool = False
    """A pattern that found nothing, rather than a file (no annotation location)."""


@dataclass
class Collected:
    """The result of expanding the patterns."""

    targets: list[LogTarget] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    """Matched paths that are not logs (a sweep) or that repeat another log."""
    failures: list[Problem] = field(default_factory=list)
    """Patterns that found nothing (when not allowed)."""


# --------------------------------------------------------------------------- expanding


def has_glob(pattern: str) -> bool:
    """Whether a pattern holds glob characters (else it names one path)."""
    return bool(_GLOB_CHARS.search(pattern))


def shown(path: Path, display_root: Path) -> str:
    """A path relative to the display root (forward slashes), else absolute."""
    try:
        return path.resolve().relative_to(display_root.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and folder in path.parents


def _is_sweep(pattern: str) -> bool:
    last = pattern.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return last in ("*", "**")


def _event_run_folder(file: Path) -> Path:
    folder = file.parent
    return folder.parent if folder.name in KERAS_FOLDERS else folder


def _hf_output_folder(file: Path) -> Path:
    folder = file.parent
    if re.fullmatch(re.escape(CHECKPOINT_PREFIX) + r"\d+", folder.name):
        return folder.parent
    return folder


def _hf_rank(file: Path) -> int:
    """Top-level trainer_state.json first, then the highest checkpoint number."""
    match = re.fullmatch(re.escape(CHECKPOINT_PREFIX) + r"(\d+)", file.parent.name)
    return -1 if match is None else int(match.group(1))


def _expand_one(
    pattern: str,
    base: Path,
    display_root: Path,
    exclude: Path | None,
    config: Config | None,
) -> tuple[list[Path], list[Problem]]:
    """The log paths one glob pattern yields, and the matched paths it skipped."""
    matches = sorted(glob.glob(pattern, root_dir=base, recursive=True))
    paths = [base / m for m in matches]
    if exclude is not None:
        paths = [p for p in paths if p.resolve() != exclude and exclude not in p.resolve().parents]
    files = [p for p in paths if p.is_file()]
    folders = [p for p in paths if p.is_dir()]
    skipped: list[Problem] = []
    logs: list[Path] = []

    events = [f for f in files if f.name.startswith(EVENT_FILE_PREFIX)]
    states = [f for f in files if f.name == STATE_FILE]
    others = [f for f in files if f not in events and f not in states]

    # TensorBoard: one log per run folder, however many event files it holds.
    logs.extend(dict.fromkeys(_event_run_folder(f) for f in events))
    # Hugging Face: the newest trainer_state.json of each output folder.
    by_output: dict[Path, list[Path]] = {}
    for file in states:
        by_output.setdefault(_hf_output_folder(file), []).append(file)
    for group in by_output.values():
        group.sort(key=_hf_rank)
        newest = group[0] if _hf_rank(group[0]) == -1 else group[-1]
        logs.append(newest)
        for older in group:
            if older != newest:
                skipped.append(
                    Problem(
                        shown(older, display_root),
                        f"an older copy of the log in {shown(newest, display_root)}",
                    )
                )
    sweep = _is_sweep(pattern)
    for file in others:
        forced = config is not None and config.format_for(pattern, shown(file, display_root))
        if sweep and not forced:
            try:
                detect_format(file, shown(file, display_root))
            except TrainspotterError:
                skipped.append(Problem(shown(file, display_root), "not a recognised training log"))
                continue
        logs.append(file)
    # A matched folder is a log only when nothing matched inside it is one already.
    for folder in folders:
        if any(_inside(f, folder) for f in files) or any(_inside(p, folder) for p in logs):
            continue
        if any(_inside(other, folder) for other in folders):
            continue
        if folder in logs:
            continue
        try:
            detect_format(folder, shown(folder, display_root))
        except TrainspotterError:
            continue  # a folder without a log in it is just a folder
        logs.append(folder)
    return logs, skipped


def expand_patterns(
    patterns: Sequence[str],
    *,
    base: Path,
    display_root: Path | None = None,
    allow_empty: bool = False,
    exclude: Path | None = None,
    config: Config | None = None,
) -> Collected:
    """The logs the patterns name, in pattern order, each once; see the module docstring.
    Raises UsageError for an invalid pattern."""
    display_root = display_root or base
    exclude_resolved = exclude.resolve() if exclude is not None else None
    collected = Collected()
    seen: set[Path] = set()
    for pattern in patterns:
        problem = glob_problem(pattern)
        if problem:
            raise UsageError(f"invalid glob {pattern!r}: {problem}")
        if has_glob(pattern):
            paths, skipped = _expand_one(pattern, base, display_root, exclude_resolved, config)
            collected.skipped.extend(skipped)
            entries = [(p, shown(p, display_root)) for p in paths]
        else:
            target = base / pattern
            if target.exists():
                display = pattern if base == display_root else shown(target, display_root)
                entries = [(target, display)]
            else:
                entries = []
        fresh = 0
        for path, display in entries:
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            fresh += 1
            collected.targets.append(LogTarget(path, display, pattern))
        if not entries and not allow_empty:
            what = "matched no training log" if has_glob(pattern) else "no such file or folder"
            collected.failures.append(Problem(pattern, what, is_pattern=True))
    return collected


def read_and_analyze(
    target: LogTarget, config: Config, fmt: str | None, run_name: str | None = None
) -> Analysis:
    """Read one log with the config's aliases and analyse it with its settings and
    suppressions. Raises TrainspotterError when the log cannot be read."""
    return read_and_analyze_runs(target, config, fmt, run_name)[0]


def read_and_analyze_runs(
    target: LogTarget, config: Config, fmt: str | None, run_name: str | None = None
) -> list[Analysis]:
    """`read_and_analyze` for every run the log holds (`readers.read_runs`: each run of a
    multi-run W&B export is a log of its own in the report); one Analysis for most logs."""
    chosen = fmt or config.format_for(target.pattern, target.display)
    options = ReadOptions(
        run_name=run_name, aliases=dict(config.aliases), display_path=target.display
    )
    runs = read_runs(target.path, fmt=chosen, options=options)
    return [config.suppress(analyze(run, config.analysis_settings())) for run in runs]


# --------------------------------------------------------------------------- outputs


def fence_workflow_commands(text: str) -> str:
    """Text for a GitHub Actions log with workflow commands switched off around it:
    `::stop-commands::<fresh random token>`, the text, `::<token>::`. Nothing inside
    (a metric name, a path) can issue a command, and the token cannot be guessed."""
    token = secrets.token_hex(16)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


def report_file_name(display: str, used: set[str]) -> str:
    """A safe, unique HTML file name for a log: only `[A-Za-z0-9._-]`, no leading dot, at
    most ~100 characters, unique case-insensitively (a hash suffix when needed), never a
    Windows device name. It cannot leave the folder it is written to."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", display.replace("\\", "/"))
    stem = re.sub(r"_+", "_", stem).strip("._-") or "log"
    if stem.split(".")[0].upper() in _WINDOWS_RESERVED:
        stem = "log_" + stem
    digest = hashlib.sha256(display.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    if len(stem) > FILE_NAME_LIMIT:
        stem = stem[: FILE_NAME_LIMIT - 11].rstrip("._-") + "-" + digest
    name = stem + ".html"
    if name.casefold() in used:
        name = f"{stem[: FILE_NAME_LIMIT - 11]}-{digest}.html"
    counter = 2
    while name.casefold() in used:  # a hash collision of two displays: practically never
        name = f"{stem[: FILE_NAME_LIMIT - 15]}-{digest}-{counter}.html"
        counter += 1
    used.add(name.casefold())
    return name


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
    comment: bool | None = None
    """Write comment.md; None: the config's `report.comment`."""
    jobs: int | None = None
    """Processes for reading and analysing logs; None: one per core."""
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


def _totals(analyses: Iterable[Analysis]) -> dict[str, int]:
    totals = {s.label: 0 for s in sorted(Severity, reverse=True)}
    for analysis in analyses:
        for label, count in analysis.counts().items():
            totals[label] += count
    return totals


def _verdict(result_code: int, worst: Severity | None, fail_on: Severity, failures: int) -> str:
    if result_code == EXIT_BAD_INPUT:
        return f"could not check everything: {failures} problem{'s' if failures != 1 else ''}"
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
        tail.extend(
            f"- `{_code_span(p.display)}`: {markdown_text(p.reason[:500])}"
            for p in failures[:SKIPPED_LISTED]
        )
        if len(failures) > SKIPPED_LISTED:
            tail.append(f"- and {len(failures) - SKIPPED_LISTED} more (see the job log)")
        tail.append("")
    if skipped:
        tail.append(f"\n<details><summary>{len(skipped)} matched paths skipped</summary>\n")
        tail.extend(
            f"- `{_code_span(p.display)}`: {markdown_text(p.reason)}"
            for p in skipped[:SKIPPED_LISTED]
        )
        if len(skipped) > SKIPPED_LISTED:
            tail.append(f"- and {len(skipped) - SKIPPED_LISTED} more")
        tail.append("\n</details>\n")
    return head, "\n".join(tail)


def _code_span(text: str) -> str:
    """Log-derived text inside a Markdown code span: no backtick can close it, no
    control character can break the line; code spans render no HTML or links."""
    cleaned = re.sub(r"[\x00-\x1f\x7f-\x9f]", "", text).replace("`", "'")
    return cleaned[:300]


def _markdown(
    analyses: Sequence[Analysis], limit: int, head: str, tail: str, note: str | None
) -> str:
    extra = head + tail + (f"\n{note}\n" if note else "")
    body = (
        render_markdown(analyses, max(limit - len(extra.encode("utf-8")), 16 * 1024))
        if analyses
        else ""
    )
    return head + body + tail + (f"\n{note}\n" if note else "")


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


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_gate(options: GateOptions, stdout: TextIO, stderr: TextIO) -> GateResult:
    """Expand, analyse, write every output, and decide the exit code."""
    config = options.config
    base = options.base
    display_root = options.display_root or base
    fail_on = options.fail_on or config.fail_on
    patterns = options.patterns or config.paths
    if not patterns:
        raise UsageError(
            "no log patterns: give PATTERN arguments (the Action's `paths` input) "
            "or set `paths` in .trainspotter.yml"
        )
    if options.format is not None:
        config = _with_format(config, options.format)
    outputs = options.outputs if options.outputs is not None else config.report.outputs
    if not (options.comment if options.comment is not None else config.report.comment):
        outputs = tuple(o for o in outputs if o != "comment")
    report_dir = options.report_dir or (base / config.report.directory)

    collected = expand_patterns(
        patterns,
        base=base,
        display_root=display_root,
        allow_empty=config.allow_empty,
        exclude=report_dir,
        config=config,
    )
    analyses: list[Analysis] = []
    failures = list(collected.failures)
    results = analyze_targets(
        collected.targets, config, jobs=options.jobs, progress=options.progress
    )
    for target, result in zip(collected.targets, results, strict=True):
        if isinstance(result, TrainspotterError):
            problem = getattr(result, "problem", None) or str(result)
            failures.append(Problem(target.display, str(problem)))
        else:
            analyses.extend(result)

    worst_list = [a.worst for a in analyses if a.worst is not None]
    worst = max(worst_list) if worst_list else None
    if failures:
        code = EXIT_BAD_INPUT
    elif worst is not None and worst >= fail_on:
        code = EXIT_GATE_FAILED
    else:
        code = EXIT_OK
    verdict = _verdict(code, worst, fail_on, len(failures))

    # The terminal log (holds log-derived text: fenced off from workflow commands).
    render = RenderOptions(color=options.color and not options.github, fail_on=fail_on)
    lines: list[str] = []
    if analyses:
        lines.append(REPORTS["terminal"].render(analyses, render).rstrip("\n"))
    lines.extend(f"skipped {p.display}: {p.reason}" for p in collected.skipped)
    checked = f"{len(analyses)} log{'s' if len(analyses) != 1 else ''} checked"
    lines.append(f"trainspotter gate: {checked}; {verdict}")
    text = "\n".join(lines) + "\n"
    error_lines = "".join(f"trainspotter: error: {p.display}: {p.reason}\n" for p in failures)
    if options.github:
        stdout.write(fence_workflow_commands(error_lines + text))
    else:
        stdout.write(text)
        stderr.write(error_lines)

    skipped_outputs: dict[str, str] = {}
    for name in outputs:
        report = _REPORT_OF_OUTPUT[name]
        if report not in REPORTS:
            skipped_outputs[name] = f"the {report!r} report format is not available"
    if options.github and "annotations" in outputs and "annotations" not in skipped_outputs:
        stdout.write(REPORTS["github"].render(analyses, render))
        for p in failures:
            where = "" if p.is_pattern else f"file={workflow_property(p.display)},"
            title = workflow_property("trainspotter: not checked")
            message = workflow_message(f"{p.display}: {p.reason}" if p.is_pattern else p.reason)
            stdout.write(f"::error {where}title={title}::{message}\n")
    stdout.flush()

    files: dict[str, Path] = {}
    html_files: list[Path] = []
    head, tail = _gate_markdown(verdict, code, failures, collected.skipped)
    summary = _markdown(analyses, SUMMARY_LIMIT_BYTES, head, tail, options.artifact_note)
    wanted = [o for o in outputs if o not in skipped_outputs and o != "annotations"]
    if wanted:
        report_dir.mkdir(parents=True, exist_ok=True)
    for name in wanted:
        if name == "summary":
            files[name] = _write(report_dir / OUTPUT_FILES[name], summary)
        elif name == "comment":
            comment = _markdown(analyses, COMMENT_LIMIT_BYTES, head, tail, options.artifact_note)
            files[name] = _write(report_dir / OUTPUT_FILES[name], comment)
        elif name == "html":
            used: set[str] = {"index.html"}
            entries: list[tuple[str, str, Severity | None]] = []
            for analysis in analyses:
                file_name = report_file_name(analysis.run.source_path, used)
                page = REPORTS["html"].render([analysis], render)
                html_files.append(_write(report_dir / "html" / file_name, page))
                entries.append((analysis.run.source_path, file_name, analysis.worst))
            if entries:
                files["html"] = _write(report_dir / "html" / "index.html", _index_html(entries))
        else:
            rendered = REPORTS[_REPORT_OF_OUTPUT[name]].render(analyses, render)
            files[name] = _write(report_dir / OUTPUT_FILES[name], rendered)

    return GateResult(
        exit_code=code,
        fail_on=fail_on,
        analyses=analyses,
        failures=failures,
        skipped=collected.skipped,
        counts=_totals(analyses),
        max_severity=worst,
        report_dir=report_dir if wanted else None,
        files=files,
        html_files=html_files,
        summary_markdown=summary,
        skipped_outputs=skipped_outputs,
    )


def _with_format(config: Config, fmt: str) -> Config:
    return dataclasses.replace(config, format=fmt, formats={})


__all__ = [
    "GateOptions",
    "GateResult",
    "LogTarget",
    "Problem",
    "expand_patterns",
    "report_file_name",
    "run_gate",
]
