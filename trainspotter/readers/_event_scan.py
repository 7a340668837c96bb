"""Scanning TensorBoard event files: whole records only, remembering where it stopped.

`EventFileScanner` is how both `read` and `watch` (which feeds it only the bytes appended
since the last poll) parse event files; see `tensorboard_events.py` for the format notes.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter.model import FloatArray, IntArray
from trainspotter.readers._tfrecord import (
    FRAMING_HEADER_BYTES,
    UInt8Array,
    decode_simple_values,
    frame_records,
)

READ_CHUNK_BYTES = 16 << 20
"""Bytes read per call when scanning a file (bounds the memory beyond the points kept)."""
SCALAR_PLUGINS = frozenset({"scalars", ""})
"""Plugins whose rank-0 numeric tensors are scalars ("" is a tensor with no plugin)."""


# TensorFlow DataType -> numpy dtype of `tensor_content`, and the repeated field holding
# the value when the content is not packed. Bool, string and complex tensors are not scalars.
_TENSOR_DTYPES: dict[int, tuple[str, str]] = {
    1: ("<f4", "float_val"),
    2: ("<f8", "double_val"),
    3: ("<i4", "int_val"),
    4: ("u1", "int_val"),
    5: ("<i2", "int_val"),
    6: ("i1", "int_val"),
    9: ("<i8", "int64_val"),
    14: ("bfloat16", "half_val"),
    17: ("<u2", "int_val"),
    19: ("<f2", "half_val"),
    22: ("<u4", "uint32_val"),
    23: ("<u8", "uint64_val"),
}


def _bits_to_float(bits: int, dtype: str) -> float:
    if dtype == "bfloat16":
        return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])
    return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def tensor_scalar(tensor: Any) -> float | None:
    """The value of a rank-0 numeric TensorProto, or None (other ranks, non-numeric)."""
    if len(tensor.tensor_shape.dim):
        return None
    kind = _TENSOR_DTYPES.get(int(tensor.dtype))
    if kind is None:
        return None
    dtype, repeated = kind
    content = tensor.tensor_content
    if content:
        if dtype == "bfloat16":
            if len(content) != 2:
                return None
            return _bits_to_float(int.from_bytes(content, "little"), dtype)
        item = np.dtype(dtype).itemsize
        if len(content) != item:
            return None
        return float(np.frombuffer(content, dtype=dtype)[0])
    values = getattr(tensor, repeated)
    if len(values) != 1:
        return None
    if repeated == "half_val":
        bits = int(values[0])
        # half_val is an int32 field carrying 16 bits: anything else is a malformed
        # tensor, skipped like any other value we cannot read.
        return _bits_to_float(bits, dtype) if 0 <= bits <= 0xFFFF else None
    return float(values[0])


class TagPoints:
    """One tag's points in file order, as numpy chunks (one per `feed`), compacted now and
    then so a long watch does not pile up thousands of tiny arrays."""

    COMPACT_AT = 256

    def __init__(self) -> None:
        self._steps: list[IntArray] = []
        self._values: list[FloatArray] = []
        self._wall: list[FloatArray] = []

    def extend(self, steps: IntArray, values: FloatArray, wall: FloatArray) -> None:
        """Append points (in file order)."""
        self._steps.append(steps)
        self._values.append(values)
        self._wall.append(wall)
        if len(self._steps) >= self.COMPACT_AT:
            self._steps = [np.concatenate(self._steps)]
            self._values = [np.concatenate(self._values)]
            self._wall = [np.concatenate(self._wall)]

    def arrays(self) -> tuple[IntArray, FloatArray, FloatArray]:
        """Steps, values and wall times, concatenated (a copy)."""
        if not self._steps:
            return np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64)
        return (
            np.concatenate(self._steps),
            np.concatenate(self._values),
            np.concatenate(self._wall),
        )

    def __len__(self) -> int:
        return sum(len(chunk) for chunk in self._steps)


class EventFileScanner:
    """Parses one event file's records, whole records only, remembering where it stopped.

    `feed(buffer)` consumes the complete records at the start of `buffer` and returns how
    many bytes that was: the caller keeps the rest (an incomplete record) and feeds it again
    with more bytes. After a damaged record (bad length CRC, payload that does not parse)
    the scanner stops for good and `damaged_at` holds the record's file offset.

    Speed: the framing is walked in a tight loop, then the length CRCs are checked per
    distinct header, and the common record, a `simple_value` scalar event as PyTorch and
    tensorboardX write it (wall_time, step, one value with a short tag), is decoded for all
    records at once with numpy from its fixed wire layout. Every other record (the file
    version, tensor scalars, events with metadata, step 0, several values) is parsed by
    TensorBoard's `Event` protobuf class. The two paths are merged back into file order.
    """

    def __init__(self, event_class: Any) -> None:
        self._event = event_class()
        self.tags: dict[str, TagPoints] = {}
        self.plugins: dict[str, str] = {}
        """Tag -> the plugin named by the last metadata seen for it."""
        self.offset = 0
        """File offset of the next unread record."""
        self.records = 0
        self.damaged_at: int | None = None
        self.keep_fresh = False
        """Also list each feed's new points in `fresh` (for `watch`'s online checks)."""
        self.fresh: list[tuple[str, IntArray, FloatArray]] = []

    def feed(self, buffer: bytes) -> int:
        """Consume the complete records at the start of `buffer`; return the bytes used."""
        if self.damaged_at is not None or len(buffer) < FRAMING_HEADER_BYTES:
            return 0
        frames = frame_records(buffer)
        end, damaged = frames.end, frames.damaged_at
        count = int(frames.starts.shape[0])
        if count:
            used = self._decode(buffer, frames.starts, frames.lengths)
            if used < count:  # a payload that does not parse: the file is damaged there
                end = damaged = int(frames.starts[used])
                count = used
        self.records += count
        if damaged is not None:
            self.damaged_at = self.offset + damaged
        self.offset += end
        return end

    def feed_bounded(self, data: bytes) -> int:
        """`feed` in windows of `READ_CHUNK_BYTES`, so the vectorised decoding of a large
        buffer (a whole file at watch's first poll) keeps its scratch arrays small."""
        pos = 0
        while pos < len(data) and self.damaged_at is None:
            window = data[pos : pos + READ_CHUNK_BYTES]
            used = self.feed(window)
            if used == 0:
                if len(window) < READ_CHUNK_BYTES:
                    break  # an incomplete record at the end
                used = self.feed(data[pos:])  # one record larger than a window
                pos += used
                break
            pos += used
        return pos

    def _decode(self, buffer: bytes, starts: IntArray, lengths: IntArray) -> int:
        """Decode the framed records; return how many were used (fewer than given when a
        payload does not parse: that record and every later one are dropped)."""
        buf: UInt8Array = np.frombuffer(buffer, dtype=np.uint8)
        count = int(starts.shape[0])
        fast = decode_simple_values(buf, starts + FRAMING_HEADER_BYTES, lengths)
        slow_records = np.flatnonzero(~fast.ok)
        # Per tag: (record index, steps, values, wall) blocks from both paths.
        parts: dict[str, list[tuple[IntArray, IntArray, FloatArray, FloatArray]]] = {}
        used = count
        if slow_records.shape[0]:
            slow, used = self._parse_slow(buffer, starts, lengths, slow_records)
            for tag, block in slow.items():
                parts.setdefault(tag, []).append(block)
        for tag, rows in fast.by_tag.items():
            if used < count:
                rows = rows[rows < used]
                if not rows.shape[0]:
                    continue
            parts.setdefault(tag, []).append(
                (rows, fast.steps[rows], fast.values[rows], fast.wall[rows])
            )
        # New tags enter `self.tags` in order of first appearance in the file, however the
        # file was cut into buffers (metric order in the Run follows it).
        first_seen = {
            tag: min(int(b[0][0]) for b in blocks if b[0].shape[0]) for tag, blocks in parts.items()
        }
        for tag in sorted(parts, key=first_seen.__getitem__):
            blocks = parts[tag]
            points = self.tags.get(tag)
            if points is None:
                points = self.tags[tag] = TagPoints()
            if len(blocks) == 1:
                _, steps, values, wall = blocks[0]
            else:
                order = np.argsort(np.concatenate([b[0] for b in blocks]), kind="stable")
                steps = np.concatenate([b[1] for b in blocks])[order]
                values = np.concatenate([b[2] for b in blocks])[order]
                wall = np.concatenate([b[3] for b in blocks])[order]
            points.extend(steps, values, wall)
            if self.keep_fresh:
                self.fresh.append((tag, steps, values))
        return used

    def _parse_slow(
        self, buffer: bytes, starts: IntArray, lengths: IntArray, which: IntArray
    ) -> tuple[dict[str, tuple[IntArray, IntArray, FloatArray, FloatArray]], int]:
        """Protobuf-parse the records `which`: per tag (record, step, value, wall), and the
        number of records usable (the index of the first damaged one, else all)."""
        event = self._event
        parse = event.ParseFromString
        view = memoryview(buffer)
        found: dict[str, tuple[array[int], array[int], array[float], array[float]]] = {}
        used = int(starts.shape[0])
        for index in which.tolist():
            start = int(starts[index]) + FRAMING_HEADER_BYTES
            try:
                parse(view[start : start + int(lengths[index])])
            except Exception:  # google.protobuf.message.DecodeError: damaged payload
                used = index
                break
            values = event.summary.value
            if not values:
                continue
            step, wall = event.step, event.wall_time
            for value in values:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    number = value.simple_value
                elif kind == "tensor":
                    number = self._tensor_value(value)
                    if number is None:
                        continue
                else:
                    continue
                lists = found.get(value.tag)
                if lists is None:
                    lists = found[value.tag] = (array("q"), array("q"), array("d"), array("d"))
                lists[0].append(index)
                lists[1].append(step)
                lists[2].append(number)
                lists[3].append(wall)
        out: dict[str, tuple[IntArray, IntArray, FloatArray, FloatArray]] = {}
        for tag, (rec, steps, values, wall) in found.items():
            out[tag] = (
                np.frombuffer(rec, dtype=np.int64).copy(),
                np.frombuffer(steps, dtype=np.int64).copy(),
                np.frombuffer(values, dtype=np.float64).copy(),
                np.frombuffer(wall, dtype=np.float64).copy(),
            )
        return out, used

    def _tensor_value(self, value: Any) -> float | None:
        tag = value.tag
        if value.HasField("metadata"):
            self.plugins[tag] = value.metadata.plugin_data.plugin_name
        if self.plugins.get(tag, "") not in SCALAR_PLUGINS:
            return None
        return tensor_scalar(value.tensor)

    def scan_file(self, path: Path, limit: int | None = None) -> int:
        """Read `path` from `self.offset` to its end (or to byte `limit`) in bounded chunks;
        return the bytes left over after the last complete record."""
        with path.open("rb") as handle:
            handle.seek(self.offset)
            pending = b""
            remaining = None if limit is None else max(0, limit - self.offset)
            while remaining is None or remaining > 0:
                want = READ_CHUNK_BYTES if remaining is None else min(READ_CHUNK_BYTES, remaining)
                chunk = handle.read(want)
                if not chunk:
                    break
                if remaining is not None:
                    remaining -= len(chunk)
                pending = pending + chunk if pending else chunk
                used = self.feed(pending)
                pending = pending[used:]
                if self.damaged_at is not None:
                    break
                if len(pending) > READ_CHUNK_BYTES and used == 0:
                    continue  # one record larger than a chunk: keep reading it
        return len(pending)
