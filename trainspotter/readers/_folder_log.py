"""The base of a reader whose log may be one file picked inside a folder.

A Hugging Face output folder holds `trainer_state.json` in each `checkpoint-N/`, a
Lightning log folder one `metrics.csv` in each `version_N/`. The file right in the folder
wins; otherwise the reader picks one in a sub-folder (`pick`, the newest). Finding the log
in a folder, reading it and following it all go through that one choice, recorded in the
Run as a note and `meta["file"]`.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._tabular import RunBuilder
from trainspotter.readers.base import Reader, ReadOptions


class FolderLogReader(Reader):
    """A reader whose log is a file, or the file `locate` finds inside a folder."""

    follows_folder = True  # a new checkpoint or version appears in it: watch moves there
    log_name: str
    """The log's file name (`trainer_state.json`, `metrics.csv`)."""
    missing: str
    """The error for a folder in which `locate` finds no log."""

    @abstractmethod
    def pick(self, folder: Path) -> tuple[Path, str] | None:
        """The log to read in a sub-folder of `folder` (the newest checkpoint or version)
        and a note naming the choice, or None when there is none."""

    def locate(self, folder: Path) -> tuple[Path, str | None] | None:
        """The log in `folder`: the file right there (no note), else the one `pick`
        chooses; None when the folder holds none."""
        direct = folder / self.log_name
        return (direct, None) if direct.is_file() else self.pick(folder)

    @abstractmethod
    def run_from_file(self, file: Path, builder: RunBuilder, options: ReadOptions) -> Run:
        """The Run of the log file `prepare` chose, built with its `builder`."""

    def find_in_folder(self, folder: Path) -> Path | None:
        """The file itself when it stands right there, the folder when a checkpoint or
        version was chosen inside it (so `read` records that choice as a note)."""
        located = self.locate(folder)
        if located is None:
            return None
        file, note = located
        return file if note is None else folder

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = options.display_for(path)
        file, builder = self.prepare(path, display)
        return self.run_from_file(file, builder, options)

    def prepare(self, path: Path, display: str) -> tuple[Path, RunBuilder]:
        """The file to read for `path` (itself, or the one picked in a folder) and a
        RunBuilder holding that choice; InputError for a folder without a log."""
        builder = RunBuilder(self.name, display)
        if not path.is_dir():
            return path, builder
        located = self.locate(path)
        if located is None:
            raise InputError(display, self.missing)
        file, note = located
        if note:
            builder.note(note)
        builder.meta["file"] = file.relative_to(path).as_posix()
        return file, builder


__all__ = ["FolderLogReader"]
