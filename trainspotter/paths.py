"""How a path is shown to the user: one rule for messages, reports and CI outputs.

Relative to a root (the working folder unless given: the repository root in CI, the
workspace for the Action's outputs) with forward slashes when the path lies inside it, so
annotations, SARIF locations and summaries name repository files; else as given. Symlinks
and `..` are resolved before comparing, so a path reached two ways is shown one way.
"""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: str | Path, root: Path | None = None) -> str:
    """`path` relative to `root` (default: the working folder) when inside it, with
    forward slashes; otherwise as given."""
    try:
        relative = Path(path).resolve().relative_to((root or Path.cwd()).resolve())
    except (ValueError, OSError):
        return str(path).replace(os.sep, "/")
    return relative.as_posix()


def is_within(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies below it; both already resolved (symlinks and
    `..` followed), so neither can leave `folder` unseen. The one containment test:
    the Action's inputs (`entrypoint.inside_workspace`), the report folder
    (`safe_write.prepare_folder`) and the logs it reads (`discover`, `globbing`)."""
    return path == folder or folder in path.parents


def resolves_within(path: str | Path, folder: Path) -> bool:
    """Whether `path`, its symlinks and `..` followed, is the resolved `folder` or lies
    below it. A symlink loop resolves to where the loop is (`os.path.realpath`): reading
    it then fails on its own, with its own error."""
    return is_within(Path(os.path.realpath(path)), folder)


__all__ = ["is_within", "resolves_within", "shown_path"]
