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
  (`html/`) that is a symlink is refused. For each file, the report folder is reached
  from the filesystem root one component at a time, each folder opened relative to the
  one above without following a symlink (`O_NOFOLLOW`, `dir_fd`), then each sub-folder
  the same way, and the file is created and renamed relative to the last open folder:
  the report folder, or any folder above it (`a` of a config's `a/b/c`), swapped for a
  symlink after it was checked (another process sharing it) is never written through.
  `prepare_folder` creates the missing folders down the same walk. Each file's write
  walks again (no descriptor is kept between the files of one report).
- **Inputs are never replaced** (`replaces_input`): a destination that is one of the logs
  being read, or an existing file that a reader recognises as a log inside a log folder
  being read, is refused (`--out runs/a.csv` for `runs/*.csv`, `--html
  hf_dir/trainer_state.json` for `hf_dir`, `gate trainspotter.json --report-dir .`).

- **File names made from log names** (`report_file_name`) hold only `[A-Za-z0-9._-]`, so
  a page name cannot leave its folder.

This module formats nothing; the gate and the CLI decide what to write.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from trainspotter.errors import TrainspotterError
from trainspotter.paths import is_within, shown_path

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


def prepare_folder(
    folder: Path, *, within: Path | None = None, what: str = "report folder"
) -> Path:
    """Create `folder` (with its parents) and return its resolved path: the one checked.
    The missing folders are created down that path one component at a time, each opened
    without following a symlink (`_walk`), and `write_inside` walks it the same way, so a
    symlink swapped in since for the folder or any folder above it is refused, not
    followed. OutputError when something else is in the way, it cannot be created, or
    (with `within`) it resolves outside `within` (through `..`, an absolute path or a
    symlink)."""
    shown = shown_path(folder)
    try:
        if folder.is_symlink() and not folder.exists():
            raise OutputError(f"{shown}: the {what} is a symbolic link to nothing")
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"{shown}: the {what} exists and is not a folder")
        real = folder.resolve()
        if within is not None and not is_within(real, within.resolve()):
            raise OutputError(
                f"{shown}: the {what} must lie inside the working folder "
                f"(it resolves to {real}); use a relative path without '..' or symlinks out"
            )
        # Created down the path just checked, never through a symlink swapped in since.
        _walk(real, create=True).close()
        if not os.access(real, os.W_OK | os.X_OK):
            raise OutputError(f"{shown}: cannot write the {what}: permission denied")
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"{shown}: cannot create the {what}: a file is in the way") from None
    except OSError as exc:
        raise OutputError(f"{shown}: cannot create the {what}: {_reason(exc)}") from None
    return real


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_PATH_ONLY = getattr(os, "O_PATH", 0)
"""Linux: a folder descriptor to look names up in, which needs no read permission on the
folder (a folder above the report folder may be search-only); elsewhere O_RDONLY."""
_FOLDER_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _PATH_ONLY
_BY_DESCRIPTOR = (
    bool(_NOFOLLOW and _DIRECTORY)
    and {
        os.open,
        os.mkdir,
        os.stat,
        os.unlink,
        os.rename,
    }
    <= os.supports_dir_fd
)


class _Folder:
    """A folder being written: an open descriptor (`fd`) where the system supports
    `dir_fd` (Linux, macOS), so every name below is looked up in the folder that was
    checked, even if a symlink is swapped in for it afterwards; else its path."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def at(self, name: str) -> tuple[str | Path, dict[str, int]]:
        """`name` inside this folder, as a path argument and the `dir_fd` keyword."""
        if self.fd is None:
            return self.path / name, {}
        return name, {"dir_fd": self.fd}

    def is_folder(self, name: str) -> bool:
        where, at = self.at(name)
        try:
            return stat.S_ISDIR(os.stat(where, follow_symlinks=False, **at).st_mode)
        except OSError:
            return False

    @staticmethod
    def open(path: Path, where: str | Path, at: dict[str, int]) -> _Folder:
        """The folder `path` (`where` relative to `at`), opened without following a
        symlink at its name: OutputError when it is one."""
        if not _BY_DESCRIPTOR:
            if path.is_symlink():
                raise OutputError(f"{shown_path(path)}: is a symbolic link; not writing through it")
            if not path.is_dir():
                raise NotADirectoryError(path)
            return _Folder(path, None)
        try:
            fd = os.open(where, _FOLDER_FLAGS, **at)
        except OSError:
            try:
                link = stat.S_ISLNK(os.stat(where, follow_symlinks=False, **at).st_mode)
            except OSError:
                link = False
            if link:
                raise OutputError(
                    f"{shown_path(path)}: is a symbolic link; not writing through it"
                ) from None
            raise
        return _Folder(path, fd)

    def subfolder(self, name: str) -> _Folder:
        """The sub-folder `name`, created if missing, opened without following a symlink
        at its name (OutputError when it is one)."""
        where, at = self.at(name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(where, **at)
        return _Folder.open(self.path / name, where, at)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _walk(real: Path, *, create: bool = False) -> _Folder:
    """The folder `real` (absolute, every component a real folder: a resolved path),
    opened from the filesystem root one component at a time, each relative to the one
    above (`dir_fd`) and without following a symlink at its name (`O_NOFOLLOW`), missing
    ones created when `create`: a symlink swapped in for the folder or any folder above
    it is an OutputError naming it, never followed. Close the result."""
    current = _Folder.open(Path(real.anchor), real.anchor, {})
    try:
        for part in real.parts[1:]:
            where, at = current.at(part)
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(where, **at)
            below = _Folder.open(current.path / part, where, at)
            current.close()
            current = below
    except BaseException:
        current.close()
        raise
    return current


def write_inside(folder: Path, relative: str, text: str) -> Path:
    """Write `text` to `folder/relative` (forward slashes; sub-folders are created) without
    following a symlink at the name, in a sub-folder, at `folder` itself or at any folder
    above it (pass the path `prepare_folder` returned, or a resolved one); returns the
    path written. OutputError when it cannot be written.

    Each call walks to `folder` from the filesystem root (`_walk`: every component opened
    relative to the one above, without following a symlink at its name), then opens each
    sub-folder the same way, and creates and renames the temporary file relative to the
    last open folder (`dir_fd`): a folder, or any folder above it, swapped for a symlink
    after it was checked is never written through, as it would be by a check of the name
    followed by a write by name. What this does not do: keep one descriptor for all the
    files of a report. Each call walks again, so a real folder renamed away and replaced by
    another real folder at the same path (no symlink) between two calls gets the later
    files; they still land at the path that was checked."""
    *subfolders, name = relative.split("/")
    opened: list[_Folder] = []
    target_folder = folder
    try:
        current = _walk(Path(os.path.abspath(folder)))
        opened.append(current)
        for part in subfolders:
            target_folder = target_folder / part
            current = current.subfolder(part)
            opened.append(current)
        target = target_folder / name
        if current.is_folder(name):
            raise OutputError(f"{shown_path(target)}: is a folder; cannot write the report there")
        temporary, at = current.at(f".{name[:50]}.{secrets.token_hex(8)}.tmp")
        destination, _ = current.at(name)
        # O_EXCL: never an existing file or symlink; mode 0o666 less the umask, as any
        # file the user's tools write (the Action's upload step reads it as another user).
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
        handle = os.open(temporary, flags, 0o666, **at)
        try:
            with os.fdopen(handle, "w", encoding="utf-8", errors="surrogatepass") as out:
                out.write(text)
            renamed = {"src_dir_fd": current.fd, "dst_dir_fd": current.fd} if at else {}
            os.replace(temporary, destination, **renamed)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, **at)
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
    finally:
        for item in opened:
            item.close()
    return target


def write_file(path: Path, text: str) -> Path:
    """Write a file the user named (`--out`, `--html`): its folder must exist; the name
    is replaced, not written through if it is a symlink."""
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: no such folder {shown_path(folder)}")
    try:
        real = folder.resolve()  # the user's own symlinks on the way are theirs to follow
    except (OSError, RuntimeError) as exc:
        raise OutputError(f"cannot write {path}: {exc}") from None
    return write_inside(real, path.name, text)


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
