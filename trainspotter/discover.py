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
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainspotter.config import Config, glob_problem
from trainspotter.errors import InputError, TrainspotterError, UnreadableError, UsageError
from trainspotter.globbing import expand_glob
from trainspotter.paths import shown_path
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
) -> tuple[list[Path], list[Problem]]:
    """The log paths one glob pattern yields, and the matched paths it skipped (`show`:
    how a path is named in reports); paths that could not be examined go to `failures`,
    the reader sniffed for a matched file or folder to `detected`."""
    expansion = expand_glob(pattern, base)
    for unreadable, why in expansion.unreadable:
        failures.append(Problem(show(base / unreadable), f"cannot read: {why}"))
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
    logs = list(roots)
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
) -> Collected:
    """The logs the patterns name, in pattern order, each once; see the module docstring.
    Raises UsageError for an invalid pattern."""
    display_root = display_root or base
    exclude_resolved = exclude.resolve() if exclude is not None else None
    collected = Collected()
    seen: set[Path] = set()
    detected: dict[Path, str] = {}
    for pattern in patterns:
        problem = glob_problem(pattern)
        if problem:
            raise UsageError(f"invalid glob {pattern!r}: {problem}")
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
                pattern, base, show, exclude_resolved, config, collected.failures, detected
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
        if not entries and not allow_empty:
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


__all__ = ["Collected", "LogTarget", "Problem", "expand_patterns", "has_glob", "input_logs"]
