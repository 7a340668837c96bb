"""The reader registry: pick the reader for a path (by content) and read it into a `Run`.

One module per format; adding a format is adding a module and one line to `READERS`.
A folder is searched by each reader's `find_in_folder` in registry order (a HF output
folder, a Lightning `version_N/`, a TensorBoard run folder, ...). What the front ends
need to know of a format they ask here, and this asks the readers: `resolve` (which reader
and which path, sniffed or forced), `log_root` and `copy_rank` (matched files that are
pieces or copies of one log, for discovery).
"""

from __future__ import annotations

import codecs
import stat
from pathlib import Path

from trainspotter.errors import InputError, UnreadableError
from trainspotter.model import Run
from trainspotter.readers import (
    csvlog,
    hf,
    jsonl,
    lightning_csv,
    mlflow,
    stdout,
    tensorboard_events,
    wandb_csv,
)
from trainspotter.readers._holes import head_after_hole, only_nuls, text_after_holes
from trainspotter.readers.base import Reader, ReadOptions

# Order matters twice: folders are searched in this order, and on equal sniff scores the
# earlier, more specific reader wins over the generic CSV/JSONL ones.
READERS: dict[str, Reader] = {
    hf.READER.name: hf.READER,
    lightning_csv.READER.name: lightning_csv.READER,
    mlflow.READER.name: mlflow.READER,
    tensorboard_events.READER.name: tensorboard_events.READER,
    wandb_csv.READER.name: wandb_csv.READER,
    jsonl.READER.name: jsonl.READER,
    stdout.READER.name: stdout.READER,
    csvlog.READER.name: csvlog.READER,
}

HEAD_BYTES = 64 * 1024

__all__ = [
    "READERS",
    "ReadOptions",
    "Reader",
    "copy_rank",
    "detect_format",
    "log_root",
    "read_log",
    "require_data",
    "resolve",
]


def _decode_head(raw: bytes) -> str | None:
    """The head as text, or None if it is not UTF-8 (a cut multi-byte tail is allowed)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        return decoder.decode(raw, final=False)
    except UnicodeDecodeError:
        return None


def is_folder(path: Path, display: str) -> bool:
    """Whether `path` is a folder (else a regular file). InputError for a path that does
    not exist or cannot be examined, and for a FIFO, socket or device: opening one could
    block forever or never end, so it is never opened."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(display, "no such file or folder") from None
    except OSError as exc:
        raise UnreadableError(display, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        return True
    if not stat.S_ISREG(mode):
        raise UnreadableError(display, "not a regular file (a FIFO, socket or device): not read")
    return False


def detect_format(path: Path, display: str) -> tuple[Reader, Path]:
    """The reader for `path` and the path it should read (a folder resolves to a file or
    stays a folder for readers that read folders). Raises InputError if none fits."""
    try:
        return _detect_format(path, display)
    except OSError as exc:  # a locked sub-folder or file, a name too long, ...
        raise UnreadableError(display, f"cannot read: {exc.strerror or exc}") from None


def _detect_format(path: Path, display: str) -> tuple[Reader, Path]:
    if is_folder(path, display):
        for reader in READERS.values():
            found = reader.find_in_folder(path)
            if found is not None:
                return reader, found
        raise InputError(
            display,
            "no training log found in this folder (looked for trainer_state.json, "
            "checkpoint-*/, metrics.csv, an MLflow mlruns/ store, TensorBoard event files, "
            "*.csv, *.jsonl)",
        )
    with path.open("rb") as fh:
        # Sniffed as the readers that skip a truncation's NUL hole read it (`_holes.py`).
        raw, removed = head_after_hole(fh, HEAD_BYTES)
    if not raw:
        raise InputError(display, only_nuls(removed) if removed else "file is empty")
    if removed and not text_after_holes(raw):  # NULs then other control bytes: binary
        raise InputError(display, "not a text training log (binary data or not UTF-8)")
    text = _decode_head(raw)
    head = text if text is not None else raw.decode("utf-8", errors="replace")
    best: tuple[int, Reader] | None = None
    for reader in READERS.values():
        score = reader.sniff(path, head)
        if score > 0 and (best is None or score > best[0]):
            best = (score, reader)
    if best is not None:
        return best[1], path
    if text is None or "\x00" in head:
        raise InputError(display, "not a text training log (binary data or not UTF-8)")
    raise InputError(
        display,
        "unrecognised log format (expected trainer_state.json, CSV, JSONL, W&B export, "
        "Lightning metrics.csv, MLflow metric files, TensorBoard events or printed "
        "training output); pass --format to force one",
    )


def resolve(
    path: Path, fmt: str | None, display: str, *, follow: bool = False
) -> tuple[Reader, Path]:
    """The reader for `path` and the path it reads: sniffed (`detect_format`), or the
    reader `fmt` names, a folder resolved by its `find_in_folder`. With `follow` (watch), a
    folder stays a folder for a reader that `follows_folder`, and an empty file is not an
    error yet (it is waited for). Raises InputError when no reader fits."""
    if fmt is None:
        return detect_format(path, display)
    if fmt not in READERS:
        raise InputError(display, f"unknown format {fmt!r} (one of: {', '.join(READERS)})")
    reader = READERS[fmt]
    try:
        if is_folder(path, display):
            if follow and reader.follows_folder:
                return reader, path
            found = reader.find_in_folder(path)
            if found is None:
                raise InputError(display, f"no {fmt} log found in this folder")
            return reader, found
        if not follow and path.stat().st_size == 0:
            raise InputError(display, "file is empty")
    except OSError as exc:
        raise UnreadableError(display, f"cannot read: {exc.strerror or exc}") from None
    return reader, path


def log_root(file: Path) -> Path | None:
    """The folder log a matched file is one piece of (`Reader.log_root`), if any."""
    for reader in READERS.values():
        root = reader.log_root(file)
        if root is not None:
            return root
    return None


def copy_rank(file: Path) -> tuple[Path, tuple[int, int]] | None:
    """The group and rank of a file that is one copy of a log (`Reader.copy_rank`)."""
    for reader in READERS.values():
        rank = reader.copy_rank(file)
        if rank is not None:
            return rank
    return None


def read_log(
    path: str | Path, *, fmt: str | None = None, options: ReadOptions | None = None
) -> Run:
    """Read one log (file or folder) into a Run. `fmt` forces a reader by name."""
    options = options or ReadOptions()
    display = options.display_path or str(path)
    if options.display_path is None:
        options = ReadOptions(options.run_name, options.aliases, display)
    target = Path(path)
    is_folder(target, display)
    reader, target = resolve(target, fmt, display)
    try:
        run = reader.read(target, options)
    except OSError as exc:  # e.g. a locked file inside a log folder
        raise UnreadableError(display, f"cannot read: {exc.strerror or exc}") from None
    require_data(run, display)
    return run


def read_runs(
    path: str | Path, *, fmt: str | None = None, options: ReadOptions | None = None
) -> list[Run]:
    """Every run one log holds, each a Run named by its run (`meta["run_name"]`): a W&B
    chart export of several runs gives one Run per run, so each is checked; any other log
    gives one. With `options.run_name`, only that run. The reader lists the runs it did
    not read in `meta["other_runs"]`; each is read again by name (a chart export is small:
    reading it once per run is cheaper than a second code path)."""
    options = options or ReadOptions()
    first = read_log(path, fmt=fmt, options=options)
    others = first.meta.get("other_runs") or []
    if options.run_name is not None or not isinstance(others, list):
        return [first]
    runs = [first]
    for name in others:
        again = ReadOptions(str(name), options.aliases, options.display_path)
        runs.append(read_log(path, fmt=first.source_format, options=again))
    return runs


def require_data(run: Run, display: str) -> None:
    """Raise InputError when a log holds no logged value at all.

    A run that crashed before its first log line, a header-only CSV, a trainer_state.json
    whose log_history is empty or holds only the run summary: every detector would
    abstain and the run would read as "healthy". Nothing was checked, so it is the input
    error "no data", never a pass. (`watch` builds its Runs without this check: a log that
    has not logged yet is waited for.)
    """
    if any(len(series) for series in run.metrics.values()):
        return
    notes = run.notes()
    detail = notes[-1] if notes else "the log holds no logged metric value"
    raise InputError(display, f"no data points: {detail}")
