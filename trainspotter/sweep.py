"""One log as bytes, and its check as a pure function of (bytes, format, config); and
`gate`'s flags that choose where a sweep's logs are checked.

A sweep past one machine (`gate --engine dask`) cannot hand a worker a path: the worker
may not see this machine's disk, or the bucket the log was staged from. So the client
packs each discovered log into a `LogBytes` (`pack`: the file, or the folder's files, with
the folder names the readers look at kept), and `check_log_bytes` checks it on any
worker: it lays the bytes out in a private temporary folder, reads and checks them there
exactly as `batch.check_target` checks a local log, and removes the folder. The result
depends on nothing but its arguments (the log's bytes and names, the forced format, the
config), so the engine only moves work, and any worker may run any log.

What is packed: the log file; or for a folder log (a TensorBoard run folder, a Hugging
Face output folder, an MLflow store) every file under it except weights and other binary
artefacts (`remote.NOT_LOG_SUFFIXES`: a checkpoint folder's gigabytes are not read by any
reader); and the `meta.yaml` of the two folders above it, with those folders' names
(an MLflow run or metric file takes its experiment's and run's names from there). The
readers' own file checks (empty, binary, line length) then run on the worker, on the same
bytes, so the one-line errors are the same as for a local check.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from trainspotter.analysis import Analysis
from trainspotter.batch import check_target, default_jobs
from trainspotter.config import Config
from trainspotter.discover import LogTarget
from trainspotter.errors import InputError, UsageError
from trainspotter.remote import is_weights

MAX_PACKED_BYTES = 1 << 30
"""The most one packed log may hold (1 GiB): past that, it is the one-line error rather
than a worker's memory spent on it."""
ANCESTOR_META = "meta.yaml"
ANCESTORS = 2
ENGINES = ("processes", "dask")


@dataclass(frozen=True)
class LogBytes:
    """One log's files, laid out relative to a folder of their own."""

    display: str
    pattern: str
    """The pattern that found it (the config's per-pattern `format` entries)."""
    name: str
    """Where the log (file or folder) lies in the layout, e.g. `exp/run/metrics.csv`."""
    files: tuple[tuple[str, bytes], ...]
    """Relative forward-slash path -> the file's bytes."""
    detected: str | None = None
    """The reader discovery sniffed for it (`LogTarget.detected`)."""


def add_sweep_flags(parser: argparse.ArgumentParser, jobs_type: Callable[[str], int]) -> None:
    """`gate`'s `--jobs`, `--engine` and `--scheduler`: where a sweep's logs are checked."""
    parser.add_argument(
        "--jobs",
        type=jobs_type,
        default=None,
        metavar="N",
        help="analyse up to N logs at once, one process each (default: the number of cores)",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="processes",
        help="where logs are analysed: processes on this machine (--jobs), or a Dask "
        "cluster (the 'dask' extra; --scheduler, else a local cluster of --jobs workers)",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --engine dask: tcp://host:port"
    )


def sweep_options(args: argparse.Namespace) -> dict[str, Any]:
    """`GateOptions`' `jobs`, `engine` and `scheduler` from those flags; UsageError for
    `--scheduler` without `--engine dask`."""
    if args.scheduler is not None and args.engine != "dask":
        raise UsageError("--scheduler needs --engine dask")
    return {"jobs": args.jobs or default_jobs(), "engine": args.engine, "scheduler": args.scheduler}


def pack(target: LogTarget) -> LogBytes:
    """The files of a discovered log (see the module docstring). InputError when they
    cannot be read or hold more than MAX_PACKED_BYTES."""
    path = Path(os.path.abspath(target.path))  # named ancestors, `..` folded
    ancestors = [p.name for p in path.parents][:ANCESTORS][::-1]
    ancestors = [a for a in ancestors if a not in ("", ".", "..")]
    top = PurePosixPath(*ancestors) if ancestors else PurePosixPath()
    name = top / path.name
    files: list[tuple[str, bytes]] = []
    total = 0
    try:
        sources = [(name, path)] if path.is_file() else _folder_files(path, name)
        for depth in range(len(ancestors)):
            folder = path.parents[depth]
            meta = folder / ANCESTOR_META
            if meta.is_file():
                sources.append((name.parents[depth] / ANCESTOR_META, meta))
        for relative, source in sources:
            data = source.read_bytes()
            total += len(data)
            if total > MAX_PACKED_BYTES:
                raise InputError(
                    target.display,
                    f"more than {MAX_PACKED_BYTES >> 20} MiB of log files: too large to "
                    "send to a worker",
                )
            files.append((relative.as_posix(), data))
    except OSError as exc:
        raise InputError(target.display, f"cannot read: {exc.strerror or exc}") from None
    return LogBytes(target.display, target.pattern, name.as_posix(), tuple(files), target.detected)


def _folder_files(folder: Path, name: PurePosixPath) -> list[tuple[PurePosixPath, Path]]:
    found = []
    for file in sorted(folder.rglob("*")):
        if file.is_file() and not is_weights(file.name):
            found.append((name / file.relative_to(folder).as_posix(), file))
    return found


def check_log_bytes(
    log: LogBytes, config: Config, fmt: str | None = None, run_name: str | None = None
) -> list[Analysis]:
    """`batch.check_target` on a packed log: its files laid out in a temporary folder,
    read and checked there, the folder removed. Raises TrainspotterError as the local
    check does."""
    with tempfile.TemporaryDirectory(prefix="trainspotter-log-") as folder:
        root = Path(folder)
        for relative, data in log.files:
            parts = PurePosixPath(relative).parts
            if not parts or any(p in ("", ".", "..") for p in parts) or relative.startswith("/"):
                raise InputError(log.display, f"unsafe file name in a packed log: {relative!r}")
            file = root.joinpath(*parts)
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(data)
        target = root.joinpath(*PurePosixPath(log.name).parts)
        if not log.files:
            target.mkdir(parents=True, exist_ok=True)  # an empty folder stays one
        located = LogTarget(target, log.display, log.pattern, log.detected)
        return check_target(located, config, fmt, run_name)


__all__ = [
    "ENGINES",
    "MAX_PACKED_BYTES",
    "LogBytes",
    "add_sweep_flags",
    "check_log_bytes",
    "pack",
    "sweep_options",
]
