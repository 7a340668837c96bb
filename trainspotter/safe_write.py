"""Contained writes: every file the tool writes stays where the user said, and no input
log is ever replaced.

Rules (issue 11, D7/D8/D16 in ../shared/ADVERSARIAL.md):

- **The report folder** (`prepare_folder`) is created if missing; an existing file, a
  dangling symlink or a folder the user cannot write is the one-line exit-2 error
  (`OutputError`), never a traceback. A folder taken from a repository's config must
  resolve inside the working folder (`within`), so neither `../outside`, an absolute path
  nor a committed symlink can point the gate's writes elsewhere; a folder the user named
  on the command line (`--report-dir`) is theirs to choose.
- **Files inside it** (`write_inside`) are written to a fresh temporary file in their
  folder and renamed over the name (`os.replace`): a committed symlink at that name is
  replaced, never written through, and a reader never sees half a file. A sub-folder
  (`html/`) that is a symlink is refused.
- **Inputs are never replaced** (`replaces_input`): a destination that is one of the logs
  being read, or an existing file that a reader recognises as a log inside a log folder
  being read, is refused (`--out runs/a.csv` for `runs/*.csv`, `--html
  hf_dir/trainer_state.json` for `hf_dir`, `gate trainspotter.json --report-dir .`).

- **File names made from log names** (`report_file_name`) hold only `[A-Za-z0-9._-]`, so
  a page name cannot leave its folder.

This module formats nothing; the gate and the CLI decide what to write.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

from trainspotter.errors import TrainspotterError
from trainspotter.paths import shown_path

FILE_NAME_LIMIT = 100
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
)


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


class OutputError(TrainspotterError):
    """A report file or folder that cannot be written where it was asked: exit 2."""


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def prepare_folder(
    folder: Path, *, within: Path | None = None, what: str = "report folder"
) -> Path:
    """Create `folder` (with its parents) and return its resolved path. OutputError when
    something else is in the way, it cannot be created, or (with `within`) it resolves
    outside `within` (through `..`, an absolute path or a symlink)."""
    shown = shown_path(folder)
    try:
        if folder.is_symlink() and not folder.exists():
            raise OutputError(f"{shown}: the {what} is a symbolic link to nothing")
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"{shown}: the {what} exists and is not a folder")
        real = folder.resolve()
        if within is not None and not _inside(real, within.resolve()):
            raise OutputError(
                f"{shown}: the {what} must lie inside the working folder "
                f"(it resolves to {real}); use a relative path without '..' or symlinks out"
            )
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(real, os.W_OK | os.X_OK):
            raise OutputError(f"{shown}: cannot write the {what}: permission denied")
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"{shown}: cannot create the {what}: a file is in the way") from None
    except OSError as exc:
        raise OutputError(f"{shown}: cannot create the {what}: {_reason(exc)}") from None
    return folder.resolve()


def write_inside(folder: Path, relative: str, text: str) -> Path:
    """Write `text` to `folder/relative` (forward slashes; sub-folders are created) without
    following a symlink at the name or in a sub-folder; returns the path written.
    OutputError when it cannot be written."""
    *subfolders, name = relative.split("/")
    target_folder = folder
    try:
        for part in subfolders:
            target_folder = target_folder / part
            if target_folder.is_symlink():
                raise OutputError(
                    f"{shown_path(target_folder)}: is a symbolic link; not writing through it"
                )
            target_folder.mkdir(exist_ok=True)
        target = target_folder / name
        if target.is_dir() and not target.is_symlink():
            raise OutputError(f"{shown_path(target)}: is a folder; cannot write the report there")
        temporary = target_folder / f".{name[:50]}.{secrets.token_hex(8)}.tmp"
        # O_EXCL: never an existing file or symlink; mode 0o666 less the umask, as any
        # file the user's tools write (the Action's upload step reads it as another user).
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(handle, "w", encoding="utf-8", errors="surrogatepass") as out:
                out.write(text)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OutputError:
        raise
    except (FileExistsError, NotADirectoryError):
        raise OutputError(
            f"{shown_path(target_folder)}: cannot write: a file is in the way"
        ) from None
    except OSError as exc:
        raise OutputError(
            f"{shown_path(target_folder / name)}: cannot write: {_reason(exc)}"
        ) from None
    return target


def write_file(path: Path, text: str) -> Path:
    """Write a file the user named (`--out`, `--html`): its folder must exist; the name
    is replaced, not written through if it is a symlink."""
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: no such folder {shown_path(folder)}")
    return write_inside(folder, path.name, text)


class InputGuard:
    """The logs being read (files and folders), resolved once: `replaces(destination)`
    says whether writing there would replace one (it is one, or it is an existing file
    inside an input folder that a reader recognises as a log). Lookups are O(path depth),
    so a gate writing a page per log over thousands of logs stays linear."""

    def __init__(self, inputs: Iterable[Path]) -> None:
        self.files: set[Path] = set()
        self.folders: set[Path] = set()
        for item in inputs:
            try:
                source = item.resolve()
                (self.folders if source.is_dir() else self.files).add(source)
            except OSError:
                continue

    def replaces(self, destination: Path) -> bool:
        from trainspotter.readers import detect_format

        try:
            real = destination.resolve()
            if real in self.files or real in self.folders:
                return True
            if not (real.is_file() and self.folders.intersection(real.parents)):
                return False
            detect_format(real, str(destination))
        except (TrainspotterError, OSError):
            return False
        return True


def replaces_input(destination: Path, inputs: Iterable[Path]) -> bool:
    """Whether writing `destination` would replace one of `inputs` (see `InputGuard`)."""
    return InputGuard(inputs).replaces(destination)


__all__ = [
    "FILE_NAME_LIMIT",
    "InputGuard",
    "OutputError",
    "prepare_folder",
    "replaces_input",
    "report_file_name",
    "write_file",
    "write_inside",
]
