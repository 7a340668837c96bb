"""Discovery: glob patterns -> the logs to check, each once (the first step of every front end).

Each pattern is expanded relative to the base folder (`**` spans folders; hidden files and
folders are not matched, the report folder never is). A pattern without glob characters
names one file or folder. A matched folder is a log when a reader finds one in it (a
TensorBoard run folder, a Hugging Face output folder) and no matched file lies inside it.
A matched file that is one piece of a folder log stands for that folder (`Reader.log_root`:
TensorBoard event files stand for their run folder, Keras `train/` and `validation/`
sub-folders for the folder above), so a run is read once, whole. Of several copies of one
log only the newest is read (`Reader.copy_rank`: of the `trainer_state.json` files of one
Hugging Face output folder, the top-level one, else the highest `checkpoint-N/`; each
checkpoint's file holds the log up to that checkpoint, so the others would repeat it);
the others are listed as skipped. A pattern whose last part is `*` or `**` sweeps folders:
there, files that no reader recognises are skipped and listed; any other matched file is
a log and must be readable. A pattern that yields no log is a failure, unless `allow_empty`.
A URL (`s3://`, `gs://`, `hf://`, `https://`) is staged in a local mirror first
(`trainspotter.remote`) and expanded there by the same rules; reports name its logs by
their URLs. A URL whose listing fails (credentials, network) is a failure of its pattern.

Confined to a folder (`within`: the workspace, in the GitHub Action, where a pull request
can change the config's patterns and commit symlinks), nothing outside it is read: a
pattern whose fixed part (before its first glob character) resolves outside it, through
`..`, an absolute path or a symlink, is a UsageError naming the pattern; so is a URL
pattern, and a URL `baseline:` in the config (it would be fetched with the credentials of
whoever runs the tool: the runner's, in the Action); a symlink (or a
`..` after a glob part) met while expanding, and a matched folder log holding a symlink
out, are failures naming the path and the pattern, and are neither followed nor read.

This module reads no log and formats nothing: it asks the readers what a path is.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainspotter.config import Config, glob_problem
from trainspotter.errors import InputError, TrainspotterError, UnreadableError, UsageError
from trainspotter.globbing import expand_glob, fixed_part
from trainspotter.paths import resolves_within, shown_path
from trainspotter.readers import copy_rank, detect_format, log_root
from trainspotter.remote import RemoteUnavailable, is_url, mirror, shown_url

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class LogTarget:
    """One log to analyse."""

    path: Path
    """Where to read it (file or folder)."""
    display: str
    """How reports name it: relative to the display root, forward slashes."""
    pattern: str
    """The pattern that found it (for per-pattern `format` entries)."""
    detected: str | None = None
    """The reader id discovery already sniffed for it (a sweep's matched file), so the
    check reads it with that reader instead of sniffing it a second time; None: sniff."""


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


def has_glob(pattern: str) -> bool:
    """Whether a pattern holds glob characters (else it names one path)."""
    return bool(_GLOB_CHARS.search(pattern))


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and folder in path.parents


NOT_REGULAR = "not a regular file (a FIFO, socket or device): not read"


def _kind(path: Path) -> str:
    """`file`, `folder`, `other` (FIFO, socket, device), `missing`, or why it cannot be
    examined (`cannot read: ...`). Never opens the path: a FIFO would block."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot read: {exc.strerror or type(exc).__name__}"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "other"


OUTSIDE = "outside the workspace"
"""How messages name the folder a confined expansion (`within`) stays in."""


def _url_refused(what: str, url: str) -> UsageError:
    """The error for a URL met when confined: a URL is read with the credentials of
    whoever runs the tool (the runner's, in the Action), so it leads outside too."""
    return UsageError(
        f"{what} {shown_url(url)!r} is a URL, which leads {OUTSIDE}; "
        "the Action reads logs only inside it"
    )


def _leaving_pattern(pattern: str, base: Path, within: Path) -> UsageError | None:
    """The error for a pattern that is a URL or whose fixed part resolves outside
    `within`, else None."""
    if is_url(pattern):
        return _url_refused("pattern", pattern)
    if resolves_within(base / fixed_part(pattern), within):
        return None
    return UsageError(
        f"pattern {pattern!r} leads {OUTSIDE} (through '..', an absolute path or a "
        "symbolic link); the Action reads logs only inside it"
    )


def link_out(folder: Path, within: Path) -> str | None:
    """The first symlink below `folder` that resolves outside `within`, as a path
    relative to `folder`; None when there is none. Readers open the files inside a folder
    log by name, so one link out would be read. Hidden entries too; links that stay
    inside are followed, each real folder once."""
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[str, str]] = [(str(folder), "")]
    while stack:
        path, relative = stack.pop()
        try:
            info = os.stat(path)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            with os.scandir(path) as listing:
                entries = list(listing)
        except OSError:
            continue  # the reader says why, in its own words
        for entry in entries:
            try:
                link, folder_entry = entry.is_symlink(), entry.is_dir()
            except OSError:
                continue
            if link and not resolves_within(entry.path, within):
                return relative + entry.name
            if folder_entry:
                stack.append((entry.path, f"{relative}{entry.name}/"))
    return None


def outside_problem(path: Path, within: Path) -> str | None:
    """Why the log at `path` (a file or folder) may not be read when confined to
    `within`: it resolves outside, or it is a folder holding a symlink out; else None."""
    within = within.resolve()
    if not resolves_within(path, within):
        return f"leads {OUTSIDE} (a symbolic link or '..'): not read"
    if os.path.isdir(path):
        link = link_out(path, within)
        if link is not None:
            return f"holds a symbolic link {OUTSIDE} ({link}): not read"
    return None


def _refused(
    folder: Path, display: str, pattern: str, within: Path, failures: list[Problem]
) -> bool:
    """Whether a folder log holds a symlink out of `within` (then it is a failure naming
    the link and the pattern, and nothing in it is read)."""
    link = link_out(folder, within)
    if link is None:
        return False
    reason = f"holds a symbolic link {OUTSIDE} ({link}, matched by {pattern!r}): not read"
    failures.append(Problem(display, reason))
    return True


def _shown_link(path: Path, show: Callable[[Path], str]) -> str:
    """A path that leads outside, named where it is (its folder shown as any path, its
    own name kept), not where it leads."""
    folder = show(path.parent)
    return path.name if folder in ("", ".") else f"{folder.rstrip('/')}/{path.name}"


def _is_sweep(pattern: str) -> bool:
    last = pattern.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return last in ("*", "**")


def _newest_copies(
    copies: dict[Path, tuple[Path, tuple[int, int]]], show: Callable[[Path], str]
) -> tuple[list[Path], list[Problem]]:
    """The highest-ranked copy of each log, and the others as skipped (in rank order)."""
    groups: dict[Path, list[Path]] = {}
    for file, (group, _) in copies.items():
        groups.setdefault(group, []).append(file)
    logs: list[Path] = []
    skipped: list[Problem] = []
    for files in groups.values():
        files.sort(key=lambda f: copies[f][1])
        newest = files[-1]
        logs.append(newest)
        reason = f"an older copy of the log in {show(newest)}"
        skipped.extend(Problem(show(f), reason) for f in files[:-1])
    return logs, skipped


def _expand_one(
    pattern: str,
    base: Path,
    show: Callable[[Path], str],
    exclude: Path | None,
    config: Config | None,
    failures: list[Problem],
    detected: dict[Path, str],
    within: Path | None = None,
) -> tuple[list[Path], list[Problem]]:
    """The log paths one glob pattern yields, and the matched paths it skipped (`show`:
    how a path is named in reports); paths that could not be examined or (with `within`)
    lead outside it go to `failures`, the reader sniffed for a matched file or folder to
    `detected`."""
    expansion = expand_glob(pattern, base, within)
    for unreadable, why in expansion.unreadable:
        failures.append(Problem(show(base / unreadable), f"cannot read: {why}"))
    for leaving in expansion.outside:
        reason = f"leads {OUTSIDE} (a symbolic link or '..', matched by {pattern!r}): not read"
        failures.append(Problem(_shown_link(base / leaving, show), reason))
    paths = [base / m for m in expansion.matches]
    if exclude is not None:
        paths = [p for p in paths if p.resolve() != exclude and exclude not in p.resolve().parents]
    kinds = {p: _kind(p) for p in paths}
    files = [p for p in paths if kinds[p] == "file"]
    folders = [p for p in paths if kinds[p] == "folder"]

    roots: dict[Path, None] = {}
    copies: dict[Path, tuple[Path, tuple[int, int]]] = {}
    others: list[Path] = []
    for file in files:
        root = log_root(file)
        rank = copy_rank(file) if root is None else None
        if root is not None:
            roots.setdefault(root)  # one log per folder, however many pieces it holds
        elif rank is not None:
            copies[file] = rank
        else:
            others.append(file)
    logs = [
        root
        for root in roots
        if within is None or not _refused(root, show(root), pattern, within, failures)
    ]
    newest, skipped = _newest_copies(copies, show)
    for path, kind in kinds.items():
        if kind == "other":
            skipped.append(Problem(show(path), NOT_REGULAR))
        elif kind.startswith("cannot read"):
            failures.append(Problem(show(path), kind))
    logs.extend(newest)
    sweep = _is_sweep(pattern)
    for file in others:
        display = show(file)
        forced = config is not None and config.format_for(pattern, display)
        if sweep and not forced:
            try:
                detected[file] = detect_format(file, display)[0].name
            except UnreadableError as exc:
                failures.append(Problem(display, exc.problem))
                continue
            except TrainspotterError:
                skipped.append(Problem(display, "not a recognised training log"))
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
        if within is not None and _refused(folder, show(folder), pattern, within, failures):
            continue
        try:
            detected[folder] = detect_format(folder, show(folder))[0].name
        except TrainspotterError:
            continue  # a folder without a log in it is just a folder
        logs.append(folder)
    return logs, skipped


def _expand_url(
    pattern: str, config: Config | None, failures: list[Problem], detected: dict[Path, str]
) -> tuple[list[tuple[Path, str]], list[Problem]]:
    """A URL pattern: staged in the local mirror (`trainspotter.remote`), then expanded
    there as a local pattern; each log named by its URL."""
    staged = mirror().stage(pattern)
    if has_glob(staged.pattern):
        paths, skipped = _expand_one(
            staged.pattern, staged.base, staged.url_of, None, config, failures, detected
        )
    else:
        target = staged.base / staged.pattern
        paths, skipped = ([target] if target.exists() else []), []
    skipped += [Problem(url, "not a recognised training log") for url in staged.left_out]
    return [(p, staged.url_of(p)) for p in paths], skipped


def expand_patterns(
    patterns: Sequence[str],
    *,
    base: Path,
    display_root: Path | None = None,
    allow_empty: bool = False,
    exclude: Path | None = None,
    config: Config | None = None,
    within: Path | None = None,
) -> Collected:
    """The logs the patterns name, in pattern order, each once; see the module docstring.
    `within`: read nothing outside that folder (the Action's workspace); None: any path
    or URL. Raises UsageError for an invalid pattern, or one that leads outside `within`
    (a URL does), or with `within` when `config` names a URL `baseline:`."""
    display_root = display_root or base
    exclude_resolved = exclude.resolve() if exclude is not None else None
    within = within.resolve() if within is not None else None
    baseline = config.baseline if config is not None else None
    if within is not None and baseline is not None and is_url(baseline):
        raise _url_refused("baseline", baseline)  # the gate reads it later: refused first
    collected = Collected()
    seen: set[Path] = set()
    detected: dict[Path, str] = {}
    for pattern in patterns:
        known = len(collected.failures)
        problem = glob_problem(pattern)
        if problem:
            raise UsageError(f"invalid glob {pattern!r}: {problem}")
        if within is not None:
            leaving = _leaving_pattern(pattern, base, within)
            if leaving is not None:
                raise leaving
        if is_url(pattern):
            try:
                entries, skipped = _expand_url(pattern, config, collected.failures, detected)
            except RemoteUnavailable:
                raise  # no URL can be read here: one clear error, not one per pattern
            except InputError as exc:  # this listing failed (credentials, network)
                collected.failures.append(Problem(exc.path, exc.problem, is_pattern=True))
                continue
            collected.skipped.extend(skipped)
        elif has_glob(pattern):
            show = functools.partial(shown_path, root=display_root)
            paths, skipped = _expand_one(
                pattern, base, show, exclude_resolved, config, collected.failures, detected, within
            )
            collected.skipped.extend(skipped)
            entries = [(p, show(p)) for p in paths]
        else:
            target = base / pattern
            kind = _kind(target)
            display = pattern if base == display_root else shown_path(target, display_root)
            if kind.startswith("cannot read"):
                collected.failures.append(Problem(display, kind))
                continue
            if (
                within is not None
                and kind == "folder"
                and _refused(target, display, pattern, within, collected.failures)
            ):
                continue
            entries = [] if kind == "missing" else [(target, display)]
        for path, display in entries:
            try:
                key = path.resolve()
            except OSError:  # a symlink loop or a name too long: read it to say why
                key = path
            if key in seen:
                continue
            seen.add(key)
            collected.targets.append(LogTarget(path, display, pattern, detected.get(path)))
        refused = any(OUTSIDE in p.reason for p in collected.failures[known:])
        if not entries and not allow_empty and not refused:  # said once, as refused
            what = "matched no training log" if has_glob(pattern) else "no such file or folder"
            shown = shown_url(pattern) if is_url(pattern) else pattern  # no signature
            collected.failures.append(Problem(shown, what, is_pattern=True))
    return collected


def input_logs(patterns: Sequence[str], base: Path | None = None) -> list[Path]:
    """Every path the patterns name or match (logs, folders), for the check that no
    output replaces an input (`safe_write.replaces_input`)."""
    base = base or Path(".")
    collected = expand_patterns(patterns, base=base, allow_empty=True)
    return [base / p for p in patterns if not has_glob(p)] + [t.path for t in collected.targets]


__all__ = [
    "Collected",
    "LogTarget",
    "Problem",
    "expand_patterns",
    "has_glob",
    "input_logs",
    "link_out",
    "outside_problem",
]
