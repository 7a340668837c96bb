"""Incremental reading of a growing log: each poll reads only what was appended.

A `Tail` (`readers/base.py`) follows one log (a file, or a folder a reader accepts) for
`trainspotter watch`; each reader makes its own with `Reader.open_tail`. `poll()` reads
the new complete data and returns a `Growth` (how many points arrived, and the new values
per metric for watch's cheap online checks); `run()` builds the `Run` from everything read
so far through the reader's own code (`table_to_run`, `JsonlLines.run`,
`HfTrainerStateReader.run_from_state`, `tensorboard_events.build_run`), so after a final
poll the Run is exactly the one `read_log` builds from the same file.

Per format:

- CSV, Lightning `metrics.csv`, W&B exports (append-only; `readers/_csv_tail.py`): the
  header is parsed once; each poll parses only the bytes after the last complete line with
  pandas' C parser (the same options as `read_csv_table`, column names given), cut at the
  last newline that is not inside a quoted cell. Parsed cells go into capacity-doubling
  numpy arrays per column (amortised O(new)). Bad-line numbers are shifted so notes match
  a whole-file read.
- JSON Lines (append-only; `jsonl.JsonlTail`): the complete new lines go to the reader's
  `JsonlLines`.
- TensorBoard event files (append-only; `tensorboard_events.TensorBoardTail`): one
  `EventFileScanner` per file continues from its byte offset, whole records only; new
  event files in a run folder are picked up.
- Printed training output (append-only; `stdout.StdoutTail`): the complete new lines go
  to the reader's `StdoutLines`, which keeps its step counters between polls. A progress
  bar rewritten with `\r` is read when its line ends (with `\n`). A truncation's NUL
  hole is skipped as `read` skips it (`_holes.py`).
- MLflow file stores (append-only metric files; `mlflow.MlflowTail`): the run is found as
  `read` finds it, each poll; one `TextFollower` and `MetricFile` per metric file, new
  metric files (a metric logged for the first time) are picked up.
- `trainer_state.json` (rewritten whole on every save; `hf.HfTail`): re-read only when its
  size, mtime or inode changed; a file that does not parse (half-written) is kept waiting
  for the next poll and the last good state stays. The new `log_history` entries (those
  past the old length, when the old ones are unchanged) are the growth.

Every text format consumes complete lines only: a half-written last line waits for the
next poll, except in the final poll (`poll(final=True)`, when watch stops), which reads the
file to its end exactly as `read_log` would. A file that shrank, changed inode (rotation)
or whose first bytes changed (a log truncated under its writer, now starting with a NUL
hole) is read again from the start (`Growth.restarted`). A file that
does not exist yet is waited for. This module holds the part every append-only format
shares, `Follower`; it does not decide when to analyse: that is `trainspotter.watch`.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainspotter.errors import InputError
from trainspotter.readers._files import decode_next
from trainspotter.readers._holes import NulHoles
from trainspotter.readers.base import Reader

FINGERPRINT_BYTES = 64
"""The first bytes of a file, compared each poll: if they change, the file was replaced."""
LOG_DELETED = "the log was deleted while watched; its last data read is kept"
"""The problem a tail reports when a file it had read disappears (it is not waited for
silently, and a summary must not present the last data as current)."""


class Follower:
    """Reads the bytes appended to one file since the last call; detects replacement."""

    def __init__(self, path: Path, max_pending: int | None = None) -> None:
        self.path = path
        self.max_pending = max_pending
        """With a limit, an unfinished last line longer than this is an InputError: a
        line-based log is held to the readers' line limit (`_files.MAX_LINE_BYTES`)."""
        self.consumed = 0
        """Bytes already turned into data."""
        self.buffer = b""
        """Bytes read but not yet used (an incomplete last line or record)."""
        self._inode: int | None = None
        self._fingerprint = b""

    def reset(self) -> None:
        self.consumed = 0
        self.buffer = b""
        self._inode = None
        self._fingerprint = b""

    def read(self) -> tuple[bytes, bool]:
        """`buffer` plus the new bytes, and whether the file was replaced (then everything
        is new). A missing file reads as nothing new."""
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            if self._inode is not None:
                raise InputError(str(self.path), LOG_DELETED) from None
            return self.buffer, False
        except OSError as exc:
            raise InputError(str(self.path), f"cannot read: {exc.strerror or exc}") from None
        with handle:
            stat = os.fstat(handle.fileno())
            known = self.consumed + len(self.buffer)
            replaced = False
            if self._inode is not None:
                head = handle.read(min(FINGERPRINT_BYTES, len(self._fingerprint)))
                replaced = (
                    stat.st_ino != self._inode
                    or stat.st_size < known
                    or head != self._fingerprint[: len(head)]
                )
            if replaced:
                self.reset()
                known = 0
            if self._inode is None:
                self._inode = stat.st_ino
            if stat.st_size <= known:
                return self.buffer, replaced
            handle.seek(known)
            new = handle.read(stat.st_size - known)
        if len(self._fingerprint) < FINGERPRINT_BYTES and self.consumed == 0:
            self._fingerprint = (self.buffer + new)[:FINGERPRINT_BYTES]
        return self.buffer + new, replaced

    def keep(self, data: bytes, used: int) -> None:
        """`used` bytes of `data` (what `read` returned) were consumed; keep the rest."""
        self.consumed += used
        self.buffer = data[used:]
        if self.max_pending is not None and len(self.buffer) > self.max_pending:
            self.buffer = b""  # not kept: the log is unusable until it is replaced
            raise InputError(
                str(self.path),
                f"a line is longer than {self.max_pending} bytes (the limit for one line of a log)",
            )
        if len(self._fingerprint) < FINGERPRINT_BYTES and self.consumed:
            # Grow the fingerprint as the head of the file fills in.
            with self.path.open("rb") as handle:
                self._fingerprint = handle.read(FINGERPRINT_BYTES)


class TextFollower:
    """A growing text log read as `read_text_lines` reads it (split on "\n" only, the
    BOM, binary and UTF-8 checks with their one-line errors), complete lines only until
    the final poll. With `skip_holes`, NUL runs at the file's start and at line starts (a
    truncation's holes, `_holes.py`) are skipped and recorded in `holes`, as
    `read_text_lines` does when given a `NulHoles`."""

    def __init__(self, path: Path, display: str, skip_holes: bool = False) -> None:
        self.follower = Follower(path)
        self.display = display
        self.skip_holes = skip_holes
        self.holes: NulHoles | None = NulHoles() if skip_holes else None
        """The holes skipped since the file was last read from its start."""

    def read_lines(self, final: bool = False) -> tuple[list[str], bool]:
        """The new complete lines (all of the rest when `final`), and whether the file was
        replaced (then they start again from its first line)."""
        follower = self.follower
        data, replaced = follower.read()
        if replaced and self.skip_holes:
            self.holes = NulHoles()
        end = len(data) if final else data.rfind(b"\n") + 1
        if end == 0 and not final:
            follower.keep(data, 0)
            return [], replaced
        text = decode_next(data[:end], follower.consumed, self.display, self.holes, final)
        follower.keep(data, end)
        if not text:
            return [], replaced
        lines = text.split("\n")
        if not lines[-1]:
            lines.pop()
        return lines, replaced


def file_to_follow(reader: Reader, target: Path, display: str) -> Path:
    """The file a one-file format follows: `target`, or the file `find_in_folder` picks
    when `target` is a folder."""
    if not target.is_dir():
        return target
    found = reader.find_in_folder(target)
    if found is None:
        raise InputError(display, f"no {reader.name} log in this folder")
    return found


__all__ = ["FINGERPRINT_BYTES", "LOG_DELETED", "Follower", "TextFollower", "file_to_follow"]
