"""File access shared by the readers: text decoding with one-line errors, and folder search.

Every reader reads its bytes through here, so "empty", "binary", "not UTF-8" and "cannot
read" are worded the same for every format. A line-based reader that passes a `NulHoles`
has a truncation's NUL hole (at the file's start or a line start, `_holes.py`) skipped
instead of rejected; for the others a file that starts with one is told so. Folder search
covers the layouts the training tools write: numbered sub-folders (`checkpoint-500/`,
`version_3/`) of which the highest number is the latest.

This module does not parse any log format.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path

from trainspotter.errors import InputError
from trainspotter.readers._holes import (
    NulHoles,
    hole_problem,
    leading_hole,
    only_nuls,
    strip_runs,
    text_after_holes,
)

# Binary data shows itself in the first block; a text log never holds NUL bytes.
BINARY_PROBE_BYTES = 64 * 1024


def read_bytes(path: Path, display: str) -> bytes:
    """The file's bytes; InputError for a folder, an unreadable file or an empty one."""
    if path.is_dir():
        raise InputError(display, "is a folder, not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror or exc}") from None
    if not data:
        raise InputError(display, "file is empty")
    return data


def check_text_bytes(data: bytes, display: str, holes_removed: bool = False) -> None:
    """Reject binary data (NUL bytes near the start) with a one-line InputError; a text
    file that starts with a truncation's NUL hole, read by a format that cannot skip it
    (`_holes.py`), is told so. `holes_removed`: `data` is what is left once NUL holes
    were removed, so it must be printed text (`text_after_holes`) too."""
    probe = data[:BINARY_PROBE_BYTES]
    if holes_removed and not text_after_holes(probe):
        raise InputError(display, "not a text training log (binary data)")
    if b"\x00" in probe:
        raise InputError(display, hole_problem(probe) or "not a text training log (binary data)")


def not_utf8(
    data: bytes,
    exc: UnicodeDecodeError,
    display: str,
    offset: int = 0,
    holes: NulHoles | None = None,
) -> InputError:
    """The one-line error for `data` (which starts at `offset` in the file, or among the
    bytes `holes` kept) that did not decode, naming the first bad byte and its offset in
    the file. utf-8-sig counts positions after a BOM it dropped (only a file's first
    bytes can hold one)."""
    bom = offset == 0 and data.startswith(codecs.BOM_UTF8)
    start = exc.start + (len(codecs.BOM_UTF8) if bom else 0)
    bad = data[start : start + 1].hex()
    at = offset + start if holes is None else holes.file_offset(offset + start)
    return InputError(display, f"not UTF-8 text (byte 0x{bad} at offset {at})")


def decode_next(
    data: bytes, offset: int, display: str, holes: NulHoles | None = None, final: bool = False
) -> str:
    """The next bytes of a file, read in order (from `offset`, to a line break or the
    file's end), as text with the shared checks: the binary probe while within the first
    BINARY_PROBE_BYTES, a BOM dropped at the start, one-line errors naming file offsets.
    With `holes`, NUL runs at line starts (and the cut line after one) are removed first
    (`offset` is where `holes` is: it was fed every byte before these); `final`: these
    are the file's last bytes, and what `holes` held is given back too."""
    if holes is not None:
        offset = holes.kept
        data = holes.strip(data) + holes.finish() if final else holes.strip(data)
    if offset < BINARY_PROBE_BYTES:
        removed = holes is not None and bool(holes.offsets)
        check_text_bytes(data[: BINARY_PROBE_BYTES - offset], display, removed)
    try:
        return data.decode("utf-8-sig" if offset == 0 else "utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc, display, offset, holes) from None


def decode_text(data: bytes, display: str) -> str:
    """UTF-8 text (a BOM is dropped); InputError naming the first bad byte otherwise."""
    check_text_bytes(data, display)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc, display) from None


def decode_head(head: bytes, display: str) -> str:
    """Like `decode_text` for the first block of a file: a multi-byte character cut at the
    block's end is not an error."""
    check_text_bytes(head, display)
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="strict")
    try:
        return decoder.decode(head, final=False)
    except UnicodeDecodeError as exc:
        raise not_utf8(head, exc, display) from None


def read_text(path: Path, display: str) -> str:
    """The whole file as UTF-8 text, with the shared one-line errors."""
    return decode_text(read_bytes(path, display), display)


TEXT_BLOCK_BYTES = 8 << 20
"""Bytes read at a time by `read_text_pieces`."""

MAX_LINE_BYTES = 1 << 20
"""The longest line (1 MiB, without its line break) a JSON Lines or CSV log may hold: a
longer one is the one-line error, so memory follows the data, never one huge line (a
200 MB one-line JSONL object or CSV header would otherwise take gigabytes to parse)."""


class LineLengthGuard:
    """Fed a file's bytes in order, raises InputError at the first line longer than
    `limit` bytes. Two C-level searches per `limit` bytes: no copy, no Python loop over
    lines, so it costs little even on a file of millions of short lines."""

    def __init__(self, display: str, limit: int = MAX_LINE_BYTES) -> None:
        self.display = display
        self.limit = limit
        self.offset = 0
        """Bytes fed so far."""
        self.line_start = 0
        """Offset of the first byte of the current line."""
        self.line_breaks = 0

    def feed(self, data: bytes) -> None:
        position, size = 0, len(data)
        while position < size:
            # Within a span of at most `limit` bytes no whole line can be too long, so only
            # the line that runs into the span needs checking.
            end = min(position + self.limit, size)
            first = data.find(b"\n", position, end)
            reach = (end if first == -1 else first) + self.offset - self.line_start
            if reach > self.limit:
                raise InputError(
                    self.display,
                    f"line {self.line_breaks + 1} is longer than {self.limit} bytes"
                    " (the limit for one line of a log)",
                )
            if first != -1:
                self.line_breaks += data.count(b"\n", first, end)
                self.line_start = self.offset + data.rfind(b"\n", first, end) + 1
            position = end
        self.offset += size


def check_line_lengths(path: Path, display: str, limit: int | None = None) -> None:
    """Read the file once in blocks and raise InputError at a line longer than `limit`
    (default MAX_LINE_BYTES; for a parser, like pandas', that would otherwise load such a
    line whole)."""
    guard = LineLengthGuard(display, MAX_LINE_BYTES if limit is None else limit)
    try:
        with path.open("rb") as handle:
            while block := handle.read(TEXT_BLOCK_BYTES):
                guard.feed(block)
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror or exc}") from None


def read_text_pieces(
    path: Path,
    display: str,
    block: int = TEXT_BLOCK_BYTES,
    max_line: int | None = None,
    holes: NulHoles | None = None,
) -> Iterator[tuple[int, str]]:
    """The file's text in pieces, each ending at a line break (the last at the end of the
    file), with `read_text`'s checks and one-line errors; yields (byte offset, text).
    The pieces joined are `read_text(path)`, so a line-based reader can parse a large
    file without holding all its text, and all its lines, at once. With `max_line`, a
    line longer than that many bytes is an InputError (see `MAX_LINE_BYTES`). With
    `holes` (a fresh `NulHoles`), NUL runs at the file's start and at line starts (a
    truncation's holes, `_holes.py`) are skipped and recorded in it, the leading one
    without reading it when the file system reports holes."""
    guard = LineLengthGuard(display, max_line) if max_line is not None else None
    if path.is_dir():
        raise InputError(display, "is a folder, not a file")
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror or exc}") from None
    with handle:
        try:
            skipped = 0
            if holes is not None:
                skipped = leading_hole(handle)
                holes.skip(skipped)
            head = handle.read(BINARY_PROBE_BYTES)
            if not head:
                raise InputError(display, only_nuls(skipped) if skipped else "file is empty")
            if holes is None:
                check_text_bytes(head, display)
            else:
                probe, removed = strip_runs(head)
                check_text_bytes(probe, display, holes_removed=removed or skipped > 0)
            handle.seek(skipped)
            offset, pending = 0, b""
            while True:
                data = handle.read(block)
                if not data:
                    break
                if holes is not None:
                    data = holes.strip(data)
                if guard is not None:
                    guard.feed(data)
                data = pending + data if pending else data
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    pending = data
                    continue
                yield _located(offset, holes), _decode_piece(data[:cut], offset, display, holes)
                offset, pending = offset + cut, data[cut:]
            if holes is not None and (held := holes.finish()):
                if guard is not None:
                    guard.feed(held)
                pending += held
        except OSError as exc:
            raise InputError(display, f"cannot read: {exc.strerror or exc}") from None
        if pending:
            yield _located(offset, holes), _decode_piece(pending, offset, display, holes)


def read_text_lines(
    path: Path, display: str, block: int = TEXT_BLOCK_BYTES, holes: NulHoles | None = None
) -> Iterator[list[str]]:
    """`read_text_pieces` as lists of lines (split on "\n" only, without it): a
    line-based reader streams a large file with the shared checks and one-line errors,
    and a line longer than `MAX_LINE_BYTES` is the one-line error (printed output and
    MLflow metric files are line logs too). `holes` as for `read_text_pieces`."""
    for _, text in read_text_pieces(path, display, block, MAX_LINE_BYTES, holes):
        lines = text.split("\n")
        if not lines[-1]:
            lines.pop()
        yield lines


def _located(offset: int, holes: NulHoles | None) -> int:
    """The file offset of byte `offset` of what was read (holes skipped)."""
    return offset if holes is None else holes.file_offset(offset)


def _decode_piece(data: bytes, offset: int, display: str, holes: NulHoles | None) -> str:
    try:
        return data.decode("utf-8-sig" if offset == 0 else "utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc, display, offset, holes) from None


def numbered_subfolders(folder: Path, prefix: str) -> list[tuple[int, Path]]:
    """Sub-folders named `<prefix><N>` (e.g. `checkpoint-500`), sorted by N ascending."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)$")
    found: list[tuple[int, Path]] = []
    try:
        children = list(folder.iterdir())
    except OSError:
        return []
    for child in children:
        match = pattern.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    found.sort(key=lambda item: item[0])
    return found


def latest_numbered_file(folder: Path, prefix: str, file_name: str) -> tuple[Path, int] | None:
    """`<prefix><N>/<file_name>` with the highest N that holds the file, and how many
    numbered folders hold it; None if none does."""
    holding = [
        sub / file_name
        for _, sub in numbered_subfolders(folder, prefix)
        if (sub / file_name).is_file()
    ]
    if not holding:
        return None
    return holding[-1], len(holding)


def single_file_with_suffix(folder: Path, suffixes: tuple[str, ...]) -> Path | None:
    """The one file directly in `folder` whose name ends with one of `suffixes`, or None
    when there is none or more than one (several candidates are ambiguous: the user must
    name the file)."""
    try:
        matches = [
            child
            for child in folder.iterdir()
            if child.is_file() and child.name.lower().endswith(suffixes)
        ]
    except OSError:
        return None
    return matches[0] if len(matches) == 1 else None


def first_line(head: str) -> str:
    """The first non-blank line of `head`, without its line ending."""
    for line in head.splitlines():
        if line.strip():
            return line
    return ""
