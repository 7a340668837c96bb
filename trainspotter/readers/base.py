"""The interface every reader satisfies, and the options a reader is given.

A reader turns one log (a file, or a folder it knows how to search) into a `Run`. It knows
nothing of detectors or reports. It raises `InputError` naming the file and the problem for
anything it cannot read; it never lets another exception escape for bad input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from trainspotter.model import Run


@dataclass(frozen=True)
class ReadOptions:
    """What the user told us about how to read a log."""

    run_name: str | None = None
    """`--run NAME`: which run to take from a file that holds several (W&B exports)."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """User metric aliases (`metrics.aliases` in the config): raw name -> canonical name."""
    display_path: str | None = None
    """The path as the user gave it, for `Run.source_path`; defaults to the path read."""


class Reader(Protocol):
    """One log format."""

    name: str
    """The format id used by `--format` and `Run.source_format`."""
    description: str
    """One line for `--help` and the README."""

    def sniff(self, path: Path, head: str) -> int:
        """How sure this reader is that `path` is its format, 0 (not mine) to 100.

        `head` is the first few KiB of the file decoded as UTF-8 (undecodable bytes
        replaced). Decide from content first, the file name second.
        """
        ...

    def find_in_folder(self, folder: Path) -> Path | None:
        """The log this reader would read inside `folder`, or None if it has none."""
        ...

    def read(self, path: Path, options: ReadOptions) -> Run:
        """Read `path` (a file, or a folder `find_in_folder` accepted) into a Run."""
        ...
