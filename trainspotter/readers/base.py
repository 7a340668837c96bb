"""The interface every reader satisfies, and the options a reader is given.

A reader turns one log (a file, or a folder it knows how to search) into a `Run`. It knows
nothing of detectors or reports. It raises `InputError` naming the file and the problem for
anything it cannot read; it never lets another exception escape for bad input.

A reader also owns what the front ends must know about its format: how a log is found in a
folder (`find_in_folder`), which matched files are pieces or copies of one log (`log_root`,
`copy_rank`, asked by discovery), and how the log is followed while it grows (`open_tail`,
`follows_folder`, asked by `watch`). Readers subclass `Reader` to inherit the defaults
("a file is one log, read once"), so adding a format is adding its module and registry line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from trainspotter.errors import InputError
from trainspotter.model import FloatArray, Run


@dataclass(frozen=True)
class ReadOptions:
    """What the user told us about how to read a log."""

    run_name: str | None = None
    """`--run NAME`: which run to take from a file that holds several (W&B exports)."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """User metric aliases (`metrics.aliases` in the config): raw name -> canonical name."""
    display_path: str | None = None
    """The path as the user gave it, for `Run.source_path`; defaults to the path read."""

    def display_for(self, path: Path) -> str:
        """How messages and `Run.source_path` name the log read from `path`."""
        return self.display_path if self.display_path is not None else str(path)


@dataclass
class Growth:
    """What one poll of a followed log found."""

    points: int = 0
    """New rows / records / entries read."""
    fresh: dict[str, FloatArray] = field(default_factory=dict)
    """Canonical metric name -> the new values, in file order (for online checks)."""
    last_step: int | None = None
    """The last step among the new data, when known."""
    restarted: bool = False
    """The file was truncated, replaced or rotated: everything was read again."""


class Tail(Protocol):
    """One followed log (see `readers/incremental.py`)."""

    display: str
    points: int
    """Rows / records / entries read so far."""

    def poll(self, final: bool = False) -> Growth:
        """Read what was appended since the last poll (InputError for a bad log)."""
        ...

    def run(self) -> Run | None:
        """The Run of everything read so far, or None before anything was read."""
        ...


ReaderT = TypeVar("ReaderT")


@dataclass(eq=False)
class FollowedLog(Generic[ReaderT]):
    """What every `Tail` of a reader holds: the reader, the path followed, its display
    name, the options, and the points read so far. Tails subclass it (as dataclasses,
    their own state in fields with `init=False`)."""

    reader: ReaderT
    target: Path
    display: str
    options: ReadOptions
    points: int = field(default=0, init=False)


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

    follows_folder: bool = False
    """`watch` follows a folder given as this format's log as the folder (new checkpoints,
    versions or event files appear in it), not as the file `find_in_folder` picks today."""

    def log_root(self, file: Path) -> Path | None:
        """The folder log that `file` is one piece of, when discovery should read that
        folder instead of the file (a TensorBoard event file stands for its run folder);
        None: the file is a log of its own. Decided from the path alone."""
        return None

    def copy_rank(self, file: Path) -> tuple[Path, tuple[int, int]] | None:
        """When `file` is one of several copies of one log (each Hugging Face checkpoint
        holds the log up to it): the folder the copies share and this copy's rank;
        discovery reads the highest-ranked copy and lists the others as skipped. None: not
        a copy. Decided from the path alone."""
        return None

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        """Follow the log at `target` (a file, or a folder this reader accepts) as it grows."""
        raise InputError(display, f"the {self.name} format cannot be followed")
