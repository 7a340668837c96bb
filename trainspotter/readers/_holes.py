"""NUL holes in a text log: what truncating a log under a running writer leaves.

A training process writing its output to a file without `O_APPEND` (`python train.py >
train.log`: the shell opens it so) keeps its own write offset. Truncating the file under
it (logrotate's `copytruncate`, `: > train.log`, `truncate -s 0`) empties the file, and
the writer's next write lands at its old offset: the file reads back as that many NUL
bytes (a sparse hole) followed by the lines written since. A second writer appending to
the emptied file (`>>`, `tee -a`) can put lines before such a hole, so a hole can also
start at a line start in the middle of a file.

`NulHoles` removes a run of NUL bytes at the start of the file or at the start of a line
(after `\\n` or `\\r`) from a file's bytes, fed in order, and records each run so the
reader can say what it skipped. NUL bytes anywhere else (inside a line) stay, and the
shared binary check (`_files.check_text_bytes`) still rejects them: a binary file has
NULs spread through it, not only at line starts, and is still the one-line error. Holes
are skipped only when what is left of the file's first 64 KiB is printed text
(`text_after_holes`: no control byte but a tab, line breaks, ESC and backspace), since a
binary file can start with NULs too.

A writer that block-buffers its output (C stdio, `grep` or `sed` in a pipeline: 4096-byte
writes) had written part of a line when the file was truncated, so its next write starts
mid-line: the first line after a hole is then the end of a line. It is dropped, with a
note, when it is shaped as the end of the line after it (each number written as 1, a
shorter end of it: `42e-02` of `step 335 | loss 0.0681 | lr 1.41e-02`), since a piece of
a line read as a line gives a wrong point (`| loss 0.06` read at a counted step 0).
False reads: a whole line that happens to be shaped as the end of the next (`loss 0.5`
before `val loss 0.6`) is dropped, and the note shows it; the end of a line unlike the
next (a cut evaluation line before a training line) is read as a line. A NUL run that
starts inside a line (a crash that left NUL blocks at the end of a file) is not a hole.

`leading_hole` finds the length of a file's leading hole without reading it byte by
byte when the file system reports holes (`SEEK_DATA`).

This module does not decode text or parse any log format.
"""

from __future__ import annotations

import errno
import os
import re
from array import array
from typing import BinaryIO

SCAN_BYTES = 1 << 20
"""Bytes read at a time while looking for the end of a leading hole."""
JUDGE_BYTES = 2 << 20
"""The most bytes held after a NUL run to judge the line there (`is_cut_line`): two lines
of the readers' longest (`_files.MAX_LINE_BYTES`); past it the line is kept unjudged."""
TRUNCATION = "a log truncated while its writer kept writing: logrotate copytruncate or `: > file`"
"""Why a log holds a NUL hole, as the notes say it."""

_NUL_RUN = re.compile(rb"\x00+")
_NOT_PRINTED = re.compile(rb"[\x00-\x07\x0e-\x1a\x1c-\x1f\x7f]")
"""Bytes a printed log does not hold (a tab, line breaks, the ESC of colour codes and
tqdm's backspace it does)."""
_LINE_BREAKS = (0x0A, 0x0D)


def leading_hole(handle: BinaryIO) -> int:
    """How many NUL bytes the open file starts with (its size when it holds only NULs);
    leaves the handle positioned at that byte. A sparse hole is skipped with `SEEK_DATA`
    where the system has it (a hole reads as NULs, so its bytes need not be read)."""
    start = 0
    if hasattr(os, "SEEK_DATA"):
        try:
            start = os.lseek(handle.fileno(), 0, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data at all: the whole file is a hole
                start = os.fstat(handle.fileno()).st_size
    handle.seek(start)
    while block := handle.read(SCAN_BYTES):
        rest = block.lstrip(b"\x00")
        if rest:
            start += len(block) - len(rest)
            break
        start += len(block)
    handle.seek(start)
    return start


class NulHoles:
    """Fed a file's bytes in order (`strip`), gives them back without the NUL runs at the
    file's start or at a line start, and keeps where each run was; the first line after a
    run that is the cut end of a line (`is_cut_line`) is dropped too and kept in
    `cut_lines`. `finish` gives back what is still held at the end of the file."""

    def __init__(self) -> None:
        self.offsets: array[int] = array("q")
        """File offset of each NUL run removed, in file order."""
        self.lengths: array[int] = array("q")
        """Its length in bytes."""
        self.cut_lines: list[tuple[int, bytes]] = []
        """File offset and bytes (without the line break) of each cut line dropped."""
        self.fed = 0
        """Bytes of the file fed so far (the next byte's file offset)."""
        self.kept = 0
        """Bytes given back so far."""
        self._line_start = True
        """The next byte fed starts a line (or continues a run being removed)."""
        self._unrun = 0
        """Bytes kept by the first stage (NUL runs removed) so far."""
        self._run_at: array[int] = array("q")
        """First-stage position of each NUL run removed (bytes kept before it)."""
        self._cut_at: array[int] = array("q")
        """First-stage position and length of each cut line dropped."""
        self._cut_length: array[int] = array("q")
        self._held = b""
        """First-stage bytes from a run's end on, while the line after it is judged."""
        self._held_at = 0
        """First-stage position of `_held`."""
        self._ends: list[int] = []
        """First-stage positions where a run ended and the line there is not judged yet."""

    def skip(self, count: int) -> None:
        """The file's first `count` bytes are NULs (`leading_hole`), not fed: record them."""
        if count:
            self._add(self.fed, count, self._unrun)
            self.fed += count

    def strip(self, data: bytes) -> bytes:
        """The next bytes of the file without the NUL runs at line starts and the cut
        lines after them; bytes after a run are held until the line after it and the
        next are complete."""
        kept = self._without_runs(data)
        if not self._ends:
            self.kept += len(kept)
            return kept
        return self._judge(kept)

    def finish(self) -> bytes:
        """The held bytes, at the end of the file (a line after a run with no next line
        to judge it by is kept)."""
        held, self._held, self._ends = self._held, b"", []
        self.kept += len(held)
        return held

    def _without_runs(self, data: bytes) -> bytes:
        start, self.fed = self.fed, self.fed + len(data)
        if not data:
            return data
        if b"\x00" not in data:
            self._line_start = data[-1] in _LINE_BREAKS
            self._unrun += len(data)
            return data
        parts, position, removed_at_end, kept = [], 0, False, 0
        for match in _NUL_RUN.finditer(data):
            begin, end = match.span()
            at_line_start = self._line_start if begin == 0 else data[begin - 1] in _LINE_BREAKS
            if at_line_start:
                parts.append(data[position:begin])
                kept += begin - position
                position = end
                self._add(start + begin, end - begin, self._unrun + kept)
                removed_at_end = end == len(data)
        parts.append(data[position:])
        joined = b"".join(parts)
        self._line_start = removed_at_end or data[-1] in _LINE_BREAKS
        self._unrun += len(joined)
        return joined

    def _add(self, offset: int, length: int, unrun: int) -> None:
        """Record a NUL run at file `offset`, after `unrun` first-stage bytes."""
        if self.offsets and self.offsets[-1] + self.lengths[-1] == offset:
            self.lengths[-1] += length  # one run fed in two blocks
            return
        self.offsets.append(offset)
        self.lengths.append(length)
        self._run_at.append(unrun)
        self._ends.append(unrun)

    def _judge(self, kept: bytes) -> bytes:
        """`kept` (first-stage bytes) with the cut line after each run dropped: the bytes
        before the first line that cannot be judged yet are given back, the rest held."""
        buffer = self._held + kept
        base = self._held_at if self._held else self._unrun - len(kept)
        given, position = [], 0
        while self._ends:
            at = self._ends[0] - base
            if at < position:  # inside a cut line already dropped
                self._ends.pop(0)
                continue
            first = buffer.find(b"\n", at)
            second = buffer.find(b"\n", first + 1) if first >= 0 else -1
            if second < 0 and len(buffer) - at <= JUDGE_BYTES:
                break
            if second < 0:  # no line of the longest kind: not a printed line to judge
                self._ends.pop(0)
                continue
            given.append(buffer[position:at])
            position = at
            self._ends.pop(0)
            if is_cut_line(buffer[at:first], buffer[first + 1 : second]):
                self._cut_at.append(base + at)
                self._cut_length.append(first + 1 - at)
                self.cut_lines.append((self._file_offset_first(base + at), buffer[at:first]))
                position = first + 1
        if self._ends:
            held_from = max(position, self._ends[0] - base)
            given.append(buffer[position:held_from])
            self._held, self._held_at = buffer[held_from:], base + held_from
        else:
            given.append(buffer[position:])
            self._held = b""
        out = b"".join(given)
        self.kept += len(out)
        return out

    def _file_offset_first(self, unrun: int) -> int:
        """The file offset of first-stage byte `unrun`."""
        removed = 0
        for at, length in zip(self._run_at, self.lengths, strict=True):
            if at > unrun:
                break
            removed += length
        return unrun + removed

    def file_offset(self, kept: int) -> int:
        """The file offset of the byte at position `kept` of what was given back."""
        unrun = kept
        for at, length in zip(self._cut_at, self._cut_length, strict=True):
            if at > unrun:
                break
            unrun += length
        return self._file_offset_first(unrun)

    def notes(self) -> list[str]:
        """What was skipped, for the Run's notes (none when nothing was)."""
        notes: list[str] = []
        first = 0
        if self.offsets and self.offsets[0] == 0:
            size = self.lengths[0]
            notes.append(
                f"the file starts with {size} NUL bytes ({TRUNCATION}); read from byte {size}"
            )
            first = 1
        inner = len(self.offsets) - first
        if inner == 1:
            notes.append(
                f"skipped {self.lengths[first]} NUL bytes at the start of the line at byte "
                f"{self.offsets[first]} (a hole: {TRUNCATION}); the lines before and after "
                "it are read"
            )
        elif inner:
            notes.append(
                f"skipped {inner} runs of NUL bytes at line starts ({sum(self.lengths[first:])} "
                f"bytes in all; the first, {self.lengths[first]} bytes, at byte "
                f"{self.offsets[first]}) (holes: {TRUNCATION}); the lines around them are read"
            )
        for offset, line in self.cut_lines:
            shown = line.decode("utf-8", errors="replace").strip()
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            notes.append(
                f"not read: the line at byte {offset} after a NUL hole, {shown!r}, is the end "
                "of a line whose start the truncation removed (it is shaped as the end of the "
                "line after it)"
            )
        return notes


_DIGITS = re.compile(rb"[0-9]+")


def is_cut_line(line: bytes, following: bytes) -> bool:
    """Whether `line`, the first after a NUL hole, is the end of a line cut by the hole:
    with each number written as 1, it is a shorter end of the line after it (`ss 1.1 | lr
    1.1e-1` of `step 1 | loss 1.1 | lr 1.1e-1`). A writer whose output is block-buffered
    (Python's stdout sent to a file) wrote its last block before the truncation ending
    mid-line, so its next block starts mid-line."""
    shape, full = _DIGITS.sub(b"1", line), _DIGITS.sub(b"1", following)
    return bool(shape.strip()) and len(shape) < len(full) and full.endswith(shape)


def strip_runs(data: bytes) -> tuple[bytes, bool]:
    """`data`, the start of a file, without its NUL runs at line starts (the binary check
    looks at what is left), and whether it had any."""
    holes = NulHoles()
    return holes._without_runs(data), bool(holes.offsets)


def text_after_holes(data: bytes) -> bool:
    """Whether what is left of a file's start once its NUL runs are removed is printed
    text: no NUL and no other control byte a log does not print. A binary file can start
    with NULs too (`\\x00\\x01\\x02...`): its holes are not skipped."""
    return _NOT_PRINTED.search(data) is None


def head_after_hole(handle: BinaryIO, size: int) -> tuple[bytes, int]:
    """Up to `size` bytes of the open file after its leading hole, without NUL runs at
    line starts (what a reader that skips holes reads first), and how many NUL bytes
    were removed (0: none)."""
    skipped = leading_hole(handle)
    holes = NulHoles()
    holes.skip(skipped)
    head = holes.strip(handle.read(size)) + holes.finish()
    return head, sum(holes.lengths)


def only_nuls(count: int) -> str:
    """The one-line problem for a file of `count` NUL bytes and nothing else."""
    return (
        f"the file holds only {count} NUL bytes and no text ({TRUNCATION}, nothing written since)"
    )


def hole_problem(data: bytes) -> str | None:
    """The one-line problem for the head of a file whose only NUL bytes are holes (at its
    start or at line starts), read by a format that cannot skip them (a CSV log: its
    header went with the truncation, and its parser reads the file whole); None for any
    other head (binary data)."""
    holes = NulHoles()
    rest = holes._without_runs(data)
    if not holes.offsets or not rest or not text_after_holes(rest):
        return None
    if holes.offsets[0] == 0:
        return (
            f"the file starts with {holes.lengths[0]} NUL bytes ({TRUNCATION}); this format "
            "cannot be read without the lines the truncation removed"
        )
    return (
        f"{holes.lengths[0]} NUL bytes at the start of the line at byte {holes.offsets[0]} "
        f"(a hole: {TRUNCATION}); this format cannot be read past it"
    )


__all__ = [
    "TRUNCATION",
    "NulHoles",
    "head_after_hole",
    "hole_problem",
    "is_cut_line",
    "leading_hole",
    "only_nuls",
    "strip_runs",
    "text_after_holes",
]
