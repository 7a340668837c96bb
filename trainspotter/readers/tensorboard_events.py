"""TensorBoard event files (`events.out.tfevents.*`): scalar summaries only.

Reads one event file, or a run folder searched recursively; several event files (a resumed
run, or TensorBoard run sub-folders) are merged by tag and step. Both scalar encodings are
read: PyTorch / tensorboardX write `simple_value` scalars, TF2 and `tensorboard.summary`
write rank-0 tensors tagged for the scalars plugin (`metadata.plugin_data.plugin_name ==
"scalars"`, remembered per tag since writers may send the metadata once; numeric rank-0
tensors with no plugin are kept too, other plugins' tensors are not), so histograms, images,
text and every non-numeric tensor are skipped. Wall time comes from each event. Points are
ordered by wall time before `Series.build`, so when a step was logged twice the one written
last wins; steps going backwards in time are counted in `meta["backward_steps"]`.

Tag names: event files all in one folder keep their tags. With files in several folders,
a tag is prefixed with its folder relative to the folder read (`Loss_train/Loss` for
PyTorch's `add_scalars`, `run2/loss`), except files directly in that folder. Keras'
TensorBoard callback writes `train/` and `validation/` folders with `epoch_*` tags: those
become `train/<name>` and `validation/<name>` (so `epoch_loss` in `validation/` is
`validation/loss`, normalised to `eval/loss`).

How: the TFRecord framing is read directly (uint64 length, masked CRC32C of the length,
payload, masked CRC32C of the payload) and each payload is parsed with TensorBoard's own
protobuf class (`tensorboard.compat.proto.event_pb2.Event`, upb-backed), except that the
common record, a one-value `simple_value` event, is decoded for a whole buffer at once with
numpy (see `EventFileScanner`). Measured on a million steps x 3 tags (benchmarks/README.md):
2.5 s and 328 MB, against 65 s and 995 MB for tbparse (which the first version used: it
builds pandas frames through TensorBoard's `EventAccumulator`) and ~10 s for `event_pb2`
alone (reading each field through the protobuf wrappers is the cost, not the parse). The length
CRC of every record is checked (cheaply: record lengths repeat, so the CRC of each distinct
length is computed once); the payload CRC is not (computing a CRC32C over every payload in
Python would cost more than the parsing), so a payload damaged inside a float is not
detected, while one damaged in its structure fails the protobuf parse. At a damaged record
reading stops with a note; an incomplete last record (a run still writing, or killed) is
skipped with a note. `EventFileScanner` consumes whole records only and remembers where it
stopped, which is how `trainspotter watch` reads only the bytes appended since the last
poll.

TensorBoard is an optional extra (`pip install 'trainspotter[tensorboard]'`), imported
inside `read`; without it reading a TensorBoard log is an InputError naming the extra.
Before reading a file the first record's framing is checked, so a file that is not an event
file is rejected clearly instead of being read as empty.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from trainspotter.errors import InputError
from trainspotter.model import FloatArray, IntArray, Run
from trainspotter.readers._files import display_name
from trainspotter.readers._tabular import Column, RunBuilder, canonical_name, list_names
from trainspotter.readers.base import ReadOptions

EVENT_FILE_PREFIX = "events.out.tfevents"
MISSING_EXTRA = "reading TensorBoard logs needs the extra: pip install 'trainspotter[tensorboard]'"
KERAS_FOLDERS = ("train", "validation")
KERAS_TAG_PREFIX = "epoch_"
SCORE_FILE_NAME = 100
SCORE_FRAMING = 90
FRAMING_HEADER_BYTES = 12
RECORD_OVERHEAD = 16
"""Bytes of framing around each payload: length (8), length CRC (4), payload CRC (4)."""
MAX_RECORD_BYTES = 1 << 30
"""A record longer than this is taken as damage, not as data."""
READ_CHUNK_BYTES = 16 << 20
"""Bytes read per call when scanning a file (bounds the memory beyond the points kept)."""
SCALAR_PLUGINS = frozenset({"scalars", ""})
"""Plugins whose rank-0 numeric tensors are scalars ("" is a tensor with no plugin)."""

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


def _read_header(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(FRAMING_HEADER_BYTES)
    except OSError:
        return b""


def event_files(folder: Path) -> list[Path]:
    """Event files under `folder` (recursively), sorted by folder then name: the name holds
    the creation time, so within a folder this is the order they were written."""
    try:
        found = [p for p in folder.rglob(EVENT_FILE_PREFIX + "*") if p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: (p.parent.as_posix(), p.name))


def metric_name(tag: str, file: Path, root: Path, prefix_folders: bool) -> str:
    """The raw metric name for `tag` read from `file` under `root` (module docstring)."""
    relative = file.parent.relative_to(root).as_posix() if file.parent != root else ""
    folder_name = file.parent.name
    if folder_name in KERAS_FOLDERS and tag.startswith(KERAS_TAG_PREFIX):
        return f"{relative or folder_name}/{tag[len(KERAS_TAG_PREFIX) :]}"
    if prefix_folders and relative:
        return f"{relative}/{tag}"
    return tag


def load_event_class(display: str) -> Any:
    """TensorBoard's `Event` protobuf class; InputError naming the extra when missing."""
    try:
        from tensorboard.compat.proto import event_pb2
    except ImportError:
        raise InputError(display, MISSING_EXTRA) from None
    return event_pb2.Event


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


def _gather(buf: UInt8Array, index: IntArray) -> UInt8Array:
    """`buf[index]` with out-of-range indices clipped (their rows are rejected anyway)."""
    clipped: UInt8Array = buf[np.minimum(index, buf.shape[0] - 1)]
    return clipped


@dataclass
class _Frames:
    """Where the complete records of a buffer start, and where scanning stopped."""

    starts: IntArray
    lengths: IntArray
    end: int
    damaged_at: int | None


def _frame(buffer: bytes) -> _Frames:
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
    return _Frames(start_arr, lengths, pos, damaged)


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
class _SimpleValues:
    """The records decoded by the fast path."""

    ok: BoolArray
    """Per record: decoded here (else it goes to the protobuf parser)."""
    steps: IntArray
    values: FloatArray
    wall: FloatArray
    by_tag: dict[str, IntArray]
    """Tag -> indices of the decoded records with that tag, in file order."""


def _decode_simple_values(buf: UInt8Array, starts: IntArray, lengths: IntArray) -> _SimpleValues:
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
    return _SimpleValues(ok, steps, values, wall, by_tag)


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
        frames = _frame(buffer)
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
        fast = _decode_simple_values(buf, starts + FRAMING_HEADER_BYTES, lengths)
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


@dataclass
class ScannedFile:
    """One event file's scan, for `build_run`."""

    path: Path
    scanner: EventFileScanner
    leftover: int = 0
    """Bytes after the last complete record (an incomplete record at the end)."""


def build_run(
    scanned: Sequence[ScannedFile],
    root: Path,
    builder: RunBuilder,
    options: ReadOptions,
) -> Run:
    """The Run from scanned event files under `root` (names and merging as documented)."""
    prefix_folders = len({item.path.parent for item in scanned}) > 1
    blocks: dict[str, list[TagPoints]] = {}
    for item in scanned:
        relative = item.path.relative_to(root).as_posix()
        if item.scanner.damaged_at is not None:
            builder.note(
                f"stopped reading {relative} at a damaged record (byte {item.scanner.damaged_at})"
            )
        elif item.leftover:
            builder.note(
                f"skipped an incomplete last record in {relative} (a run still writing, or killed)"
            )
        for tag, points in item.scanner.tags.items():
            raw = metric_name(tag, item.path, root, prefix_folders)
            blocks.setdefault(raw, []).append(points)
    builder.meta["event_files"] = [item.path.relative_to(root).as_posix() for item in scanned]
    if len(scanned) > 1:
        builder.note(f"merged {len(scanned)} event files")
    if not blocks:
        builder.note("no scalar summaries in the event files (histograms/images only?)")
    for raw, parts in blocks.items():
        arrays = [p.arrays() for p in parts]
        if len(arrays) == 1:
            steps, values, wall = arrays[0]
        else:
            steps = np.concatenate([a[0] for a in arrays])
            values = np.concatenate([a[1] for a in arrays])
            wall = np.concatenate([a[2] for a in arrays])
        if wall.shape[0] < 2 or bool(np.all(wall[1:] >= wall[:-1])):
            order = None  # already in wall-time order: no copy
        else:
            order = np.argsort(wall, kind="stable")  # by wall time: the last written wins
        builder.add(
            Column(
                raw_name=raw,
                name=canonical_name(raw, options.aliases),
                steps=steps if order is None else steps[order],
                values=values if order is None else values[order],
                wall_time=wall if order is None else wall[order],
            )
        )
    return builder.build()


class TensorBoardReader:
    """TensorBoard event files (see the module docstring)."""

    name = "tensorboard"
    description = "TensorBoard event files (events.out.tfevents.*) or a run folder"

    def sniff(self, path: Path, head: str) -> int:
        if path.name.startswith(EVENT_FILE_PREFIX):
            return SCORE_FILE_NAME
        return SCORE_FRAMING if has_record_framing(_read_header(path)) else 0

    def find_in_folder(self, folder: Path) -> Path | None:
        return folder if event_files(folder) else None

    def files(self, path: Path, display: str) -> tuple[Path, list[Path]]:
        """The root the tag names are relative to, and the event files to read."""
        if path.is_dir():
            files = event_files(path)
            if not files:
                raise InputError(
                    display, f"no TensorBoard event files ({EVENT_FILE_PREFIX}.*) here"
                )
            return path, files
        return path.parent, [path]

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = display_name(path, options.display_path)
        builder = RunBuilder(self.name, display)
        root, files = self.files(path, display)
        readable = check_framing(files, root, display, builder)
        event_class = load_event_class(display)
        scanned: list[ScannedFile] = []
        for file in readable:
            scanner = EventFileScanner(event_class)
            try:
                leftover = scanner.scan_file(file)
            except OSError as exc:
                relative = file.relative_to(root).as_posix()
                raise InputError(
                    display, f"cannot read {relative}: {exc.strerror or exc}"
                ) from None
            scanned.append(ScannedFile(file, scanner, leftover))
        return build_run(scanned, root, builder, options)


def check_framing(files: list[Path], root: Path, display: str, builder: RunBuilder) -> list[Path]:
    """The files whose first record is framed like TFRecord; empty ones are skipped
    with a note, badly framed ones are an InputError when nothing else is readable."""
    readable: list[Path] = []
    empty: list[str] = []
    broken: list[str] = []
    for file in files:
        header = _read_header(file)
        relative = file.relative_to(root).as_posix()
        if not header:
            empty.append(relative)
        elif has_record_framing(header):
            readable.append(file)
        else:
            broken.append(relative)
    if empty:
        builder.note(f"skipped empty event file(s): {list_names(empty)}")
    if broken and not readable:
        raise InputError(display, "not a TensorBoard event file (no TFRecord framing at the start)")
    if broken:
        builder.note(f"skipped files that are not event files: {list_names(broken)}")
    if not readable:
        raise InputError(display, "the event files are empty")
    return readable


READER = TensorBoardReader()
