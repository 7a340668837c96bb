"""TFRecord framing and the numpy fast path for TensorBoard's common scalar record.

Pure bytes -> arrays, no protobuf: walking the framing of a buffer (length, masked CRC32C
of the length, payload, payload CRC), and decoding every payload laid out exactly as a
one-value `simple_value` event in one vectorised pass. `readers/_event_scan.py` uses both;
`tensorboard_events.py` documents why (speed, which CRCs are checked).
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from trainspotter.model import FloatArray, IntArray

FRAMING_HEADER_BYTES = 12
RECORD_OVERHEAD = 16
"""Bytes of framing around each payload: length (8), length CRC (4), payload CRC (4)."""
MAX_RECORD_BYTES = 1 << 30
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


def _gather(buf: UInt8Array, index: IntArray) -> UInt8Array:
    """`buf[index]` with out-of-range indices clipped (their rows are rejected anyway)."""
    clipped: UInt8Array = buf[np.minimum(index, buf.shape[0] - 1)]
    return clipped


@dataclass
class Frames:
    """Where the complete records of a buffer start, and where scanning stopped."""

    starts: IntArray
    lengths: IntArray
    end: int
    damaged_at: int | None


def frame_records(buffer: bytes) -> Frames:
    """Walk the TFRecord framing of `buffer`: the complete records, where the walk ended,
    and the offset of a record whose length CRC is wrong (damage), if any."""
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
    start_arr: IntArray = np.frombuffer(starts, dtype=np.int64).copy()
    damaged: int | None = None
    if pos + FRAMING_HEADER_BYTES <= size and not has_record_framing(
        buffer[pos : pos + FRAMING_HEADER_BYTES]
    ):
        damaged = pos  # an "incomplete" record whose length is garbage
    buf: UInt8Array = np.frombuffer(buffer, dtype=np.uint8)
    if start_arr.shape[0]:
        headers = buf[start_arr[:, None] + np.arange(FRAMING_HEADER_BYTES)]
        lengths: IntArray = headers[:, :8].copy().view("<u8")[:, 0].astype(np.int64)
        crcs = headers[:, 8:].copy().view("<u4")[:, 0].astype(np.int64)
        keys = (lengths << 32) | crcs  # lengths < 2**30: one int64 per distinct header
        unique, inverse = np.unique(keys, return_inverse=True)
        good = np.array(
            [
                masked_crc32c(int(key >> 32).to_bytes(8, "little")) == int(key & 0xFFFFFFFF)
                for key in unique.tolist()
            ],
            dtype=bool,
        )
        bad = np.flatnonzero(~good[inverse.reshape(-1)])
        if bad.shape[0]:
            first = int(bad[0])
            damaged = int(start_arr[first])
            pos = damaged
            start_arr, lengths = start_arr[:first], lengths[:first]
    else:
        lengths = np.empty(0, dtype=np.int64)
    return Frames(start_arr, lengths, pos, damaged)


def _unique_rows(rows: UInt8Array) -> tuple[list[bytes], IntArray]:
    """The distinct rows of a 2-D byte array (as bytes) and each row's index among them.

    Rows are hashed to one uint64 each (fast to make unique), then every row is checked
    against its group's representative; on a hash collision the exact (slower) sort of the
    rows as opaque values is used instead."""
    weights = np.random.default_rng(12345).integers(1, 2**63, rows.shape[1], dtype=np.uint64)
    with np.errstate(over="ignore"):
        hashes = (rows.astype(np.uint64) * (weights | np.uint64(1))).sum(axis=1, dtype=np.uint64)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if bool(np.all(rows == rows[first][inverse])):
        return [rows[i].tobytes() for i in first.tolist()], inverse
    keys = np.ascontiguousarray(rows).view(f"V{rows.shape[1]}")[:, 0]
    exact, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    del exact
    return [rows[i].tobytes() for i in first.tolist()], inverse.reshape(-1)


@dataclass
class SimpleValues:
    """The records decoded by the fast path."""

    ok: BoolArray
    """Per record: decoded here (else it goes to the protobuf parser)."""
    steps: IntArray
    values: FloatArray
    wall: FloatArray
    by_tag: dict[str, IntArray]
    """Tag -> indices of the decoded records with that tag, in file order."""


def decode_simple_values(buf: UInt8Array, starts: IntArray, lengths: IntArray) -> SimpleValues:
    """Decode every payload laid out exactly as a one-value `simple_value` event:

    `09 <wall f64> 10 <step varint> 2a <n> 0a <n-2> 0a <t> <tag: t bytes> 15 <value f32>`

    with one-byte lengths (tags under 128 bytes) ending exactly at the payload's end.
    Payloads that differ in any byte of that layout are left for the protobuf parser."""
    count = starts.shape[0]
    ok = (lengths >= 22) & (_gather(buf, starts) == 0x09)
    wall_bytes = _gather(buf, starts[:, None] + np.arange(1, 9))
    wall = np.ascontiguousarray(wall_bytes).view("<f8")[:, 0].copy()
    ok &= _gather(buf, starts + 9) == 0x10
    varint = _gather(buf, starts[:, None] + np.arange(10, 20)).astype(np.uint64)
    more = varint >= 0x80
    ok &= ~more.all(axis=1)
    size = np.argmin(more, axis=1) + 1
    shifts = (np.arange(10, dtype=np.uint64) * np.uint64(7))[None, :]
    used = np.arange(10)[None, :] < size[:, None]
    parts = np.where(used, (varint & np.uint64(0x7F)) << shifts, np.uint64(0))
    steps = np.bitwise_or.reduce(parts, axis=1).view(np.int64)
    p = starts + 10 + size
    summary_len = _gather(buf, p + 1).astype(np.int64)
    value_len = _gather(buf, p + 3).astype(np.int64)
    tag_len = _gather(buf, p + 5).astype(np.int64)
    ok &= _gather(buf, p) == 0x2A
    ok &= _gather(buf, p + 2) == 0x0A
    ok &= _gather(buf, p + 4) == 0x0A
    ok &= (summary_len < 0x80) & (value_len < 0x80) & (tag_len < 0x80)
    ok &= (summary_len == value_len + 2) & (value_len == tag_len + 7)
    ok &= p + 2 + summary_len == starts + lengths
    ok &= _gather(buf, p + 6 + tag_len) == 0x15
    value_bytes = _gather(buf, (p + 7 + tag_len)[:, None] + np.arange(4))
    with np.errstate(invalid="ignore"):  # rows off the fast path hold arbitrary bytes
        values = np.ascontiguousarray(value_bytes).view("<f4")[:, 0].astype(np.float64)
    by_tag: dict[str, IntArray] = {}
    good = np.flatnonzero(ok)
    for length in np.unique(tag_len[good]).tolist():
        rows = good[tag_len[good] == length]
        if length == 0:
            names = np.zeros(rows.shape[0], dtype=np.int64)
            decoded = [""]
        else:
            raw = buf[(p[rows] + 6)[:, None] + np.arange(length)]
            unique, inverse = _unique_rows(raw)
            names = inverse.reshape(-1)
            decoded = []
            for key in unique:
                try:
                    decoded.append(key.decode("utf-8"))
                except UnicodeDecodeError:
                    decoded.append("")  # not valid protobuf: the parser will say so
        for position, tag in enumerate(decoded):
            chosen = rows[names == position]
            if length and not tag:
                ok[chosen] = False
                continue
            if tag in by_tag:
                by_tag[tag] = np.sort(np.concatenate([by_tag[tag], chosen]))
            else:
                by_tag[tag] = chosen
    del count
    return SimpleValues(ok, steps, values, wall, by_tag)
