"""TFRecord framing: pure bytes -> arrays, no protobuf.

Walking the framing of a buffer (length, masked CRC32C of the length, payload, payload
CRC); `_event_wire.py` decodes the payloads, `readers/_event_scan.py` uses both and
`tensorboard_events.py` documents why (speed, which CRCs are checked).
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from trainspotter.model import IntArray

FRAMING_HEADER_BYTES = 12
RECORD_OVERHEAD = 16
"""Bytes of framing around each payload: length (8), length CRC (4), payload CRC (4)."""
MAX_RECORD_BYTES = 1 << 30
VECTORISE_FROM_BYTES = 1 << 16
"""Buffers smaller than this (a watch poll's few records) are walked record by record."""
PLAIN_STEPS_BEFORE_GIVING_UP = 256
"""Records the vectorised walk takes one by one before it walks the rest the plain way
(a file whose records the guess does not fit: no slower than the plain walk)."""
"""A record longer than this is taken as damage, not as data."""

_LENGTH = struct.Struct("<Q")
UInt8Array = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C of `data` (only ever a few bytes here)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def has_record_framing(header: bytes) -> bool:
    """True if `header` starts with a TFRecord header: uint64 length, masked CRC of it."""
    if len(header) < FRAMING_HEADER_BYTES:
        return False
    return masked_crc32c(header[:8]) == int.from_bytes(header[8:12], "little")


def read_header(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(FRAMING_HEADER_BYTES)
    except OSError:
        return b""


@dataclass
class Frames:
    """Where the complete records of a buffer start, and where scanning stopped."""

    starts: IntArray
    lengths: IntArray
    end: int
    damaged_at: int | None


def _walk_in_python(buffer: bytes) -> tuple[IntArray, int]:
    """The record starts of `buffer` one by one (the reference for `_walk_vectorised`),
    and where the walk stopped."""
    starts: array[int] = array("q")
    unpack = _LENGTH.unpack_from
    pos, size = 0, len(buffer)
    append = starts.append
    while pos + FRAMING_HEADER_BYTES <= size:
        (length,) = unpack(buffer, pos)
        end = pos + RECORD_OVERHEAD + length
        if end > size or length > MAX_RECORD_BYTES:
            break
        append(pos)
        pos = end
    return np.frombuffer(starts, dtype=np.int64).copy(), pos


def _likely_starts(buffer: bytes) -> tuple[IntArray, IntArray]:
    """Offsets that look like the start of an event record (a length of at most
    MAX_RECORD_BYTES, the payload's first byte 0x09: an Event's wall_time field, which
    every writer sets) and where each such record would end. A guess, verified by the
    caller."""
    buf: UInt8Array = np.frombuffer(buffer, dtype=np.uint8)
    led = np.flatnonzero(buf[FRAMING_HEADER_BYTES:] == 0x09)
    if not led.shape[0]:
        return led, led
    header = _words(buf, led, 8, "<u8")
    fits = header <= MAX_RECORD_BYTES
    starts: IntArray = led[fits]
    ends: IntArray = starts + RECORD_OVERHEAD + header[fits].astype(np.int64)
    return starts, ends


def _walk_vectorised(buffer: bytes) -> tuple[IntArray, int]:
    """`_walk_in_python` without a Python step per record, exactly.

    The likely starts are a guess: where one likely start's record ends exactly at the
    next likely start, and the first is a real start, the next one is real too (that is
    the walk). Runs of such links are taken whole; where the guess fails (a record not
    led by 0x09, or 0x09 bytes inside a payload that look like a header) the walk takes
    one record the plain way and tries the guess again from there."""
    size = len(buffer)
    guess, ends = _likely_starts(buffer)
    linked = ends[:-1] == guess[1:]
    breaks = np.flatnonzero(~linked)  # run k..breaks[j] is linked throughout
    parts: list[IntArray] = []
    pos, plain_steps = 0, 0
    while pos + FRAMING_HEADER_BYTES <= size:
        at = int(np.searchsorted(guess, pos))
        if at < guess.shape[0] and guess[at] == pos:
            following = int(np.searchsorted(breaks, at))
            last = int(breaks[following]) if following < breaks.shape[0] else guess.shape[0] - 1
            run = slice(at, last + 1)
            complete = np.flatnonzero(ends[run] <= size)
            if not complete.shape[0]:
                break
            parts.append(guess[run][complete])
            pos = int(ends[at + int(complete[-1])])
            if complete.shape[0] < last + 1 - at:
                break  # the run's last record is incomplete
            continue
        (length,) = _LENGTH.unpack_from(buffer, pos)  # one record the plain way
        end = pos + RECORD_OVERHEAD + length
        if end > size or length > MAX_RECORD_BYTES:
            break
        parts.append(np.array([pos], dtype=np.int64))
        pos = end
        plain_steps += 1
        if plain_steps > PLAIN_STEPS_BEFORE_GIVING_UP:
            rest, end_pos = _walk_in_python(buffer[pos:])
            parts.append(rest + pos)
            pos += end_pos
            break
    starts = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return starts, pos


def _words(buf: UInt8Array, at: IntArray, width: int, dtype: str) -> npt.NDArray[Any]:
    """The little-endian integers of `width` bytes at offsets `at` (all within `buf`),
    gathered through a strided view: one index per row, not one per byte."""
    rows = sliding_window_view(buf, width)[at]
    return rows.view(dtype)[:, 0]


def _length_crcs(lengths: IntArray) -> IntArray:
    """The masked CRC32C of each length's 8 bytes, computed once per distinct length
    (record lengths repeat: a few distinct values in a file of millions)."""
    if int(lengths.max()) < 1 << 16:  # the usual case: a lookup table, no sort
        distinct = np.flatnonzero(np.bincount(lengths))
        table = np.zeros(int(distinct[-1]) + 1, dtype=np.int64)
        table[distinct] = [masked_crc32c(int(n).to_bytes(8, "little")) for n in distinct.tolist()]
        out: IntArray = table[lengths]
        return out
    unique, inverse = np.unique(lengths, return_inverse=True)
    crcs = [masked_crc32c(int(n).to_bytes(8, "little")) for n in unique.tolist()]
    out = np.array(crcs, dtype=np.int64)[inverse.reshape(-1)]
    return out


def frame_records(buffer: bytes) -> Frames:
    """Walk the TFRecord framing of `buffer`: the complete records, where the walk ended,
    and the offset of a record whose length CRC is wrong (damage), if any."""
    if len(buffer) < VECTORISE_FROM_BYTES:
        start_arr, pos = _walk_in_python(buffer)
    else:
        start_arr, pos = _walk_vectorised(buffer)
    size = len(buffer)
    damaged: int | None = None
    if pos + FRAMING_HEADER_BYTES <= size and not has_record_framing(
        buffer[pos : pos + FRAMING_HEADER_BYTES]
    ):
        damaged = pos  # an "incomplete" record whose length is garbage
    buf: UInt8Array = np.frombuffer(buffer, dtype=np.uint8)
    if start_arr.shape[0]:
        lengths: IntArray = _words(buf, start_arr, 8, "<u8").astype(np.int64)
        crcs = _words(buf, start_arr + 8, 4, "<u4").astype(np.int64)
        bad = np.flatnonzero(crcs != _length_crcs(lengths))
        if bad.shape[0]:
            first = int(bad[0])
            damaged = int(start_arr[first])
            pos = damaged
            start_arr, lengths = start_arr[:first], lengths[:first]
    else:
        lengths = np.empty(0, dtype=np.int64)
    return Frames(start_arr, lengths, pos, damaged)
