"""Scanning TensorBoard event files: whole records only, remembering where it stopped.

`EventFileScanner` is how both `read` and `watch` (which feeds it only the bytes appended
since the last poll) parse event files; see `tensorboard_events.py` for the format notes.
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter.model import FloatArray, IntArray
from trainspotter.readers._event_layout import PointInfo
from trainspotter.readers._event_wire import POSITION_BITS, Block, Points, by_tag, decode_events
from trainspotter.readers._tfrecord import (
    FRAMING_HEADER_BYTES,
    UInt8Array,
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

    Speed: the framing is walked with numpy (`_tfrecord.py`), the length CRCs are checked
    once per distinct length, and the records are decoded by record layout
    (`_event_wire.py`): per shape of record (a tag's `simple_value` event, a merged summary,
    a TF2 tensor scalar with its metadata) one record is parsed by TensorBoard's `Event`
    class (`_describe`) and its layout proved (`_event_layout.py`), and every record equal
    to it outside its wall time, step and float bytes is read as columns. Every other
    record (the file version, graphs, histograms, anything unusual) is parsed by the
    protobuf class (`_parse_slow`). The two paths are merged back into file order, then a
    tag's tensor values are kept while the plugin its metadata names is the scalars plugin.
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
        fast = decode_events(buf, starts + FRAMING_HEADER_BYTES, lengths, self._describe)
        slow_records = np.flatnonzero(~fast.ok)
        used = count
        blocks = [fast.blocks]
        if slow_records.shape[0]:
            slow, used = self._parse_slow(buffer, starts, lengths, slow_records)
            blocks.append(by_tag(slow))
        limit = used << POSITION_BITS
        merged: dict[str, Block] = {}
        for found in blocks:
            for tag, block in found.items():
                if used < count:
                    block = block.take(np.flatnonzero(block.key < limit))
                previous = merged.get(tag)
                merged[tag] = block if previous is None else previous.join(block)
        kept: dict[str, Block] = {}
        for tag, block in merged.items():
            block = self._scalars_only(tag, block)
            if block.key.shape[0]:
                kept[tag] = block
        # New tags enter `self.tags` in order of first appearance in the file, however the
        # file was cut into buffers (metric order in the Run follows it).
        for tag in sorted(kept, key=lambda tag: int(kept[tag].key[0])):
            block = kept[tag]
            points = self.tags.get(tag)
            if points is None:
                points = self.tags[tag] = TagPoints()
            points.extend(block.steps, block.values, block.wall)
            if self.keep_fresh:
                self.fresh.append((tag, block.steps, block.values))
        return used

    def _describe(self, payload: bytes | memoryview) -> tuple[int, float, list[PointInfo]]:
        """Parse one Event payload (raises on a damaged one): step, wall time, and its
        scalar values with their plugin (see `PointInfo`)."""
        event = self._event
        event.ParseFromString(payload)
        points: list[PointInfo] = []
        for position, value in enumerate(event.summary.value):
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                points.append((position, value.tag, False, value.simple_value, None))
            elif kind == "tensor":
                plugin = None
                if value.HasField("metadata"):
                    plugin = str(value.metadata.plugin_data.plugin_name)
                points.append((position, value.tag, True, tensor_scalar(value.tensor), plugin))
        return int(event.step), float(event.wall_time), points

    def _scalars_only(self, tag: str, block: Block) -> Block:
        """Keep a tag's tensor values only while the plugin its last metadata named (in
        file order, from earlier buffers too) is a scalars plugin; remember that plugin."""
        if not block.tensor.any():
            return block
        tensor_rows = np.flatnonzero(block.tensor)
        plugin = block.plugin[tensor_rows]
        named = np.flatnonzero(plugin >= 0)
        # The metadata in force at each tensor value: the last one at or before it, else
        # the one remembered from earlier buffers (index -1: the last entry below).
        last = np.maximum.accumulate(np.where(plugin >= 0, np.arange(plugin.shape[0]), -1))
        in_force_id = np.where(last >= 0, plugin[np.maximum(last, 0)], -1)
        before = self.plugins.get(tag, "") in SCALAR_PLUGINS
        scalar = np.array([name in SCALAR_PLUGINS for name in block.plugins] + [before])
        in_force = scalar[in_force_id]
        if named.shape[0]:
            self.plugins[tag] = block.plugins[int(plugin[named[-1]])]
        keep = np.ones(block.key.shape[0], dtype=bool)
        keep[tensor_rows] = in_force & block.readable[tensor_rows]
        return block if bool(keep.all()) else block.take(np.flatnonzero(keep))

    def _parse_slow(
        self, buffer: bytes, starts: IntArray, lengths: IntArray, which: IntArray
    ) -> tuple[Points, int]:
        """Protobuf-parse the records `which`: their points (tensor values with their
        metadata's plugin, unreadable tensors marked), and the number of records usable
        (the index of the first damaged one, else all)."""
        view = memoryview(buffer)
        keys, steps, numbers, wall = array("q"), array("q"), array("d"), array("d")
        tag_ids, tensor, plugin, readable = array("q"), array("b"), array("q"), array("b")
        tags: dict[str, int] = {}
        plugins: dict[str, int] = {}
        used = int(starts.shape[0])
        for index in which.tolist():
            start = int(starts[index]) + FRAMING_HEADER_BYTES
            try:
                step, wall_time, points = self._describe(view[start : start + int(lengths[index])])
            except Exception:  # google.protobuf.message.DecodeError: damaged payload
                used = index
                break
            for position, tag, is_tensor, number, plugin_name in points:
                keys.append((index << POSITION_BITS) | position)
                steps.append(step)
                wall.append(wall_time)
                numbers.append(math.nan if number is None else number)
                tag_ids.append(tags.setdefault(tag, len(tags)))
                tensor.append(is_tensor)
                plugin.append(
                    -1 if plugin_name is None else plugins.setdefault(plugin_name, len(plugins))
                )
                readable.append(number is not None)
        return Points(
            key=np.frombuffer(keys, dtype=np.int64).copy(),
            steps=np.frombuffer(steps, dtype=np.int64).copy(),
            values=np.frombuffer(numbers, dtype=np.float64).copy(),
            wall=np.frombuffer(wall, dtype=np.float64).copy(),
            tag=np.frombuffer(tag_ids, dtype=np.int64).copy(),
            tags=list(tags),
            tensor=np.frombuffer(tensor, dtype=np.int8).astype(bool),
            plugin=np.frombuffer(plugin, dtype=np.int64).copy(),
            plugins=list(plugins),
            readable=np.frombuffer(readable, dtype=np.int8).astype(bool),
        ), used

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
