"""Glob patterns expanded like `glob.glob(pattern, root_dir=..., recursive=True)`, but safe
on hostile trees: each real folder is visited once by a `**`, so symlink loops cannot make
the walk explode (two `ln -s . x` links made the standard `**` walk every path up to the
system's length limit: D14 in ../shared/ADVERSARIAL.md), and a folder that cannot be
listed (no permission, a name too long) is reported, not raised.

Semantics kept from `glob`: `*`, `?` and `[...]` match within one path part, `**` as a
whole part matches zero or more folders (as the last part, every file and folder below,
and the folder itself with a trailing slash), names starting with a dot are matched only by
a part that starts with a dot (`**` never enters hidden folders), matching is
case-sensitive on POSIX, results are relative to the root for a relative pattern.
Symlinks to folders are followed (as `glob` does), once per real folder.

Confined (`within`, the Action's workspace): the walk never lists, enters or matches a
path beyond the pattern's fixed part (`fixed_part`, which the caller checks) that
resolves outside `within`: a symlink out or a `..` after a glob part. Such paths are
returned in `Expansion.outside` instead, so the caller can say so; nothing behind them is
read. Only symlinks and fixed parts can leave a folder, so only they are resolved.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainspotter.paths import resolves_within

_MAGIC = re.compile(r"[*?\[]")


@dataclass
class Expansion:
    """What a pattern matched, and the folders that could not be listed."""

    matches: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    """(folder as shown, why) for each folder the walk could not list."""
    outside: list[str] = field(default_factory=list)
    """Paths (as shown) the walk did not follow or match: they resolve outside `within`."""


class _Walk:
    def __init__(self, parts: list[str], root: Path, absolute: bool, within: Path | None) -> None:
        self.parts = parts
        self.root = root
        self.absolute = absolute
        self.within = within
        self.fixed = next((i for i, p in enumerate(parts) if _MAGIC.search(p)), len(parts))
        """How many leading parts hold no glob character (the pattern's fixed part)."""
        self.found: dict[str, None] = {}
        self.unreadable: dict[str, str] = {}
        self.outside: dict[str, None] = {}

    def leaves(self, shown: str) -> bool:
        """Whether `shown` resolves outside `within` (then it is recorded, and neither
        listed nor matched); always False when the walk is not confined."""
        if self.within is None or resolves_within(self.real(shown), self.within):
            return False
        self.outside.setdefault(shown or ".")
        return True

    def real(self, shown: str) -> str:
        """The file-system path of a shown (pattern-relative) path."""
        if self.absolute:
            return shown
        return os.path.join(self.root, shown) if shown else str(self.root)

    def entries(self, shown: str) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(self.real(shown)) as listing:
                return list(listing)
        except OSError as exc:
            if not isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                self.unreadable.setdefault(shown or ".", exc.strerror or type(exc).__name__)
            return []

    def folders_below(self, shown: str) -> list[str]:
        """`shown` and every non-hidden folder below it, each real folder once."""
        try:
            stat = os.stat(self.real(shown))
        except OSError:
            return []
        seen = {(stat.st_dev, stat.st_ino)}
        order = [shown]
        stack = [shown]
        while stack:
            folder = stack.pop()
            # Real sub-folders before symlinks to them: a folder is named its own way.
            entries = sorted(self.entries(folder), key=lambda e: (_is_link(e), e.name))
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if _is_link(entry) and self.leaves(_join(folder, entry.name)):
                    continue
                if not _is_dir(entry):
                    continue
                try:
                    child_stat = entry.stat()
                except OSError as exc:  # e.g. a path longer than the system allows
                    shown_child = _join(folder, entry.name)
                    self.unreadable.setdefault(shown_child, exc.strerror or type(exc).__name__)
                    continue
                key = (child_stat.st_dev, child_stat.st_ino)
                if key in seen:
                    continue  # a symlink loop or a second way to the same folder
                seen.add(key)
                child = _join(folder, entry.name)
                order.append(child)
                stack.append(child)
        return order

    def walk(self, shown: str, index: int) -> None:
        if index == self.fixed and self.leaves(shown):
            return
        if index == len(self.parts):
            self.found.setdefault(shown)
            return
        part = self.parts[index]
        last = index == len(self.parts) - 1
        if part == "**":
            for folder in self.folders_below(shown):
                if last:
                    self.found.setdefault(_join(folder, "") if folder == shown else folder)
                    for entry in self.entries(folder):
                        if entry.name.startswith("."):
                            continue
                        child = _join(folder, entry.name)
                        if _is_link(entry) and self.leaves(child):
                            continue
                        if not _is_dir(entry):
                            self.found.setdefault(child)
                else:
                    self.walk(folder, index + 1)
            return
        if not _MAGIC.search(part):
            child = _join(shown, part)
            if index > self.fixed and os.path.lexists(self.real(child)) and self.leaves(child):
                return  # `..` or a symlink after a glob part
            if last:
                if os.path.lexists(self.real(child)):
                    self.found.setdefault(child)
            elif _isdir(self.real(child)):
                self.walk(child, index + 1)
            return
        hidden_ok = part.startswith(".")
        for entry in self.entries(shown):
            name = entry.name
            if (name.startswith(".") and not hidden_ok) or not fnmatch.fnmatchcase(name, part):
                continue
            child = _join(shown, name)
            if not last and not _is_dir(entry):
                continue  # a file where a folder is needed: never read
            if _is_link(entry) and self.leaves(child):
                continue
            if last:
                self.found.setdefault(child)
            elif _is_dir(entry):
                self.walk(child, index + 1)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _isdir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False


def _join(folder: str, name: str) -> str:
    if not folder or folder.endswith("/"):
        return folder + name
    return f"{folder}/{name}"


def _split(pattern: str) -> tuple[str, list[str]]:
    """A pattern's anchor ("/" or a drive, "" when relative) and its parts."""
    normal = pattern.replace(os.sep, "/") if os.sep != "/" else pattern
    anchor = Path(normal).anchor.replace(os.sep, "/")
    rest = normal[len(anchor) :] if anchor else normal
    return anchor, [p for p in rest.split("/") if p]


def fixed_part(pattern: str) -> str:
    """The leading parts of `pattern` that hold no glob character (the whole pattern when
    it has none), as a path: `logs/run1` of `logs/run1/**/*.csv`, "" of `*.csv`. A walk
    starts there, so a caller confining the walk (`within`) checks it first."""
    anchor, parts = _split(pattern)
    fixed = next((i for i, p in enumerate(parts) if _MAGIC.search(p)), len(parts))
    return anchor + "/".join(parts[:fixed])


def expand_glob(pattern: str, root: Path, within: Path | None = None) -> Expansion:
    """The paths `pattern` matches (relative to `root` unless the pattern is absolute),
    sorted, each once; see the module docstring. `within` (resolved): confine the walk
    to that folder, listing what leads out in `Expansion.outside`."""
    normal = pattern.replace(os.sep, "/") if os.sep != "/" else pattern
    anchor, parts = _split(pattern)
    absolute = bool(anchor)
    # `**/**` is `**`: collapsing keeps the walk linear.
    collapsed: list[str] = []
    for part in parts:
        if not (part == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(part)
    walk = _Walk(collapsed, root, absolute, within)
    walk.walk(anchor if absolute else "", 0)
    matches = sorted(walk.found)
    if normal.endswith("/"):
        matches = [_join(m, "") for m in matches if _isdir(walk.real(m))]
    matched = [m for m in matches if m]
    return Expansion(matched, sorted(walk.unreadable.items()), sorted(walk.outside))


__all__ = ["Expansion", "expand_glob", "fixed_part"]
