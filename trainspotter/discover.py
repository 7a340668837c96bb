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

This module reads no log and formats nothing: it asks the readers what a path is.
"""

from __future__ import annotations

import functools
import glob
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainspotter.config import Config, glob_problem
from trainspotter.errors import InputError, TrainspotterError, UsageError
from trainspotter.paths import shown_path
from trainspotter.readers import copy_rank, detect_format, log_root
from trainspotter.remote import RemoteUnavailable, is_url, mirror

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
) -> tuple[list[Path], list[Problem]]:
    """The log paths one glob pattern yields, and the matched paths it skipped (`show`:
    how a path is named in reports)."""
    matches = sorted(glob.glob(pattern, root_dir=base, recursive=True))
    paths = [base / m for m in matches]
    if exclude is not None:
        paths = [p for p in paths if p.resolve() != exclude and exclude not in p.resolve().parents]
    files = [p for p in paths if p.is_file()]
    folders = [p for p in paths if p.is_dir()]

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
    logs = list(roots)
    newest, skipped = _newest_copies(copies, show)
    logs.extend(newest)
    sweep = _is_sweep(pattern)
    for file in others:
        display = show(file)
        forced = config is not None and config.format_for(pattern, display)
        if sweep and not forced:
            try:
                detect_format(file, display)
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
        try:
            detect_format(folder, show(folder))
        except TrainspotterError:
            continue  # a folder without a log in it is just a folder
        logs.append(folder)
    return logs, skipped


def _expand_url(
    pattern: str, config: Config | None
) -> tuple[list[tuple[Path, str]], list[Problem]]:
    """A URL pattern: staged in the local mirror (`trainspotter.remote`), then expanded
    there as a local pattern; each log named by its URL."""
    staged = mirror().stage(pattern)
    if has_glob(staged.pattern):
        paths, skipped = _expand_one(staged.pattern, staged.base, staged.url_of, None, config)
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
        if is_url(pattern):
            try:
                entries, skipped = _expand_url(pattern, config)
            except RemoteUnavailable:
                raise  # no URL can be read here: one clear error, not one per pattern
            except InputError as exc:  # this listing failed (credentials, network)
                collected.failures.append(Problem(pattern, exc.problem, is_pattern=True))
                continue
            collected.skipped.extend(skipped)
        elif has_glob(pattern):
            show = functools.partial(shown_path, root=display_root)
            paths, skipped = _expand_one(pattern, base, show, exclude_resolved, config)
            collected.skipped.extend(skipped)
            entries = [(p, show(p)) for p in paths]
        else:
            target = base / pattern
            if target.exists():
                display = pattern if base == display_root else shown_path(target, display_root)
                entries = [(target, display)]
            else:
                entries = []
        for path, display in entries:
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            collected.targets.append(LogTarget(path, display, pattern))
        if not entries and not allow_empty:
            what = "matched no training log" if has_glob(pattern) else "no such file or folder"
            collected.failures.append(Problem(pattern, what, is_pattern=True))
    return collected


__all__ = ["Collected", "LogTarget", "Problem", "expand_patterns", "has_glob"]
