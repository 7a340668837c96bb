"""The numpy fast path for TensorBoard scalar events: every layout the writers use, decoded
for a whole buffer of records at once from the protobuf wire format, no protobuf objects.

An `Event` payload is decoded here when it is exactly

    09 <wall f64> [10 <step varint>] 2a <len> ( 0a <len> <Summary.Value> )*

(step 0 is left out by the writers) and each `Summary.Value` is a sequence of fields among
`tag` (0a), `simple_value` (15), `tensor` (42), `metadata` (4a), `node_name` (3a) and the
other value kinds (images, histograms, audio: skipped like the protobuf path skips them),
each at most once. That covers the three layouts in the wild:

- one `simple_value` per event (PyTorch, tensorboardX `add_scalar`);
- several values per event (TF1 merged summaries, tensorboardX `add_summary` of a merged
  `Summary`, scalars beside histograms);
- TF2 `tf.summary.scalar` (and Keras, `tensorboard.summary.Writer`, tensorboardX
  `new_style`): a rank-0 `tensor` of dtype float or double, written as `tensor_content`
  (TF's `AsProtoTensorContent`) or as `float_val` / `double_val` (packed or not), with or
  without an empty `tensor_shape`, and the scalars plugin's `metadata` on every event or
  only the first.

The record walk runs as a few numpy passes: one per value position in an event and one per
field position in a value (a handful each), so the cost is per buffer, not per record. Any
record that differs (other Event fields, a tensor of another dtype or rank, a field twice,
a varint or length that runs past its end, a tag that is not UTF-8, metadata that does not
parse) is left whole for the protobuf parser, which decides; the two paths agree on every
record they both accept (tests/readers/test_tensorboard_scanner.py checks this on random
events). Metadata blobs repeat (one per tag), so each distinct blob is parsed once with
TensorBoard's `SummaryMetadata` class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trainspotter.model import FloatArray, IntArray
from trainspotter.readers._tfrecord import BoolArray, UInt8Array

MAX_VALUES_PER_EVENT = 4096
"""Values per event walked here; an event with more goes to the protobuf parser."""
MAX_FIELDS_PER_VALUE = 8
POSITION_BITS = 16
"""A point's sort key is `record << POSITION_BITS | position in the event`."""

_TAG, _SIMPLE, _NODE, _TENSOR, _METADATA = 0x0A, 0x15, 0x3A, 0x42, 0x4A
_OTHER_KINDS = (0x1A, 0x22, 0x2A, 0x32)  # old histogram, image, histo, audio
_LENGTH_DELIMITED = np.zeros(256, dtype=bool)
_LENGTH_DELIMITED[[_TAG, _NODE, _TENSOR, _METADATA, *_OTHER_KINDS]] = True
# Rank-0 float/double tensors as the writers lay them out: (prefix after the dtype and
# optional empty shape, value bytes, numpy dtype) for DT_FLOAT (1) and DT_DOUBLE (2).
_TENSOR_FORMS = (
    (1, b"\x22\x04", "<f4"),  # tensor_content (TF2 summary ops)
    (1, b"\x2a\x04", "<f4"),  # packed float_val (tensorboardX new_style, tb Writer)
    (1, b"\x2d", "<f4"),  # unpacked float_val
    (2, b"\x22\x08", "<f8"),
    (2, b"\x32\x08", "<f8"),
    (2, b"\x31", "<f8"),
)


def gather(buf: UInt8Array, index: IntArray) -> UInt8Array:
    """`buf[index]` with out-of-range indices clipped (their rows are rejected anyway)."""
    out: UInt8Array = buf.take(index, mode="clip")
    return out


def varints(buf: UInt8Array, pos: IntArray, width: int) -> tuple[IntArray, IntArray, BoolArray]:
    """The varints at `pos` of at most `width` bytes: values (int64, two's complement for
    10-byte negatives), sizes in bytes, and which ones are complete within `width`.
    Byte by byte, each pass over the rows whose varint goes on (most are 1-3 bytes)."""
    byte = gather(buf, pos)
    value = (byte & 0x7F).astype(np.uint64)
    size = np.ones(pos.shape[0], dtype=np.int64)
    going = np.flatnonzero(byte >= 0x80)
    for shift in range(1, width):
        if not going.shape[0]:
            break
        byte = gather(buf, pos[going] + shift)
        value[going] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * shift)
        size[going] += 1
        going = going[byte >= 0x80]
    ok = np.ones(pos.shape[0], dtype=bool)
    ok[going] = False
    return value.view(np.int64), size, ok


def fixed(buf: UInt8Array, pos: IntArray, dtype: str) -> FloatArray:
    """Little-endian floats of `dtype` at `pos`, as float64."""
    width = np.dtype(dtype).itemsize
    raw = np.ascontiguousarray(gather(buf, pos[:, None] + np.arange(width)))
    with np.errstate(invalid="ignore"):  # rows off the fast path hold arbitrary bytes
        out: FloatArray = raw.view(dtype)[:, 0].astype(np.float64)
    return out


def unique_rows(rows: UInt8Array) -> tuple[list[bytes], IntArray]:
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
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return [rows[i].tobytes() for i in first.tolist()], inverse.reshape(-1)


def distinct_spans(
    buf: UInt8Array, starts: IntArray, sizes: IntArray
) -> tuple[list[bytes], IntArray]:
    """The distinct byte strings `buf[start : start + size]` and each span's index among
    them (spans grouped by size, then `unique_rows`)."""
    ids = np.zeros(starts.shape[0], dtype=np.int64)
    found: list[bytes] = []
    for size in np.unique(sizes).tolist():
        rows = np.flatnonzero(sizes == size)
        if size == 0:
            keys, inverse = [b""], np.zeros(rows.shape[0], dtype=np.int64)
        else:
            keys, inverse = unique_rows(buf[starts[rows][:, None] + np.arange(size)])
        ids[rows] = inverse + len(found)
        found.extend(keys)
    return found, ids


@dataclass
class Points:
    """Scalar points decoded from a buffer of records (one row per point)."""

    ok: BoolArray
    """Per record: decoded here (else it goes to the protobuf parser)."""
    key: IntArray
    """`record << POSITION_BITS | position of the value in its event`: file order."""
    steps: IntArray
    values: FloatArray
    wall: FloatArray
    tag: IntArray
    """Index into `tags`."""
    tags: list[str]
    tensor: BoolArray
    """A tensor value (kept only while its tag's plugin is a scalars plugin)."""
    plugin: IntArray
    """For a tensor with metadata: index into `plugins`; -1 when it carries none."""
    plugins: list[str]
    readable: BoolArray
    """False for a tensor that is not a numeric scalar (its metadata still counts)."""


@dataclass
class _Values:
    """The values of the decodable records, one row each."""

    record: IntArray
    position: IntArray
    start: IntArray
    end: IntArray


def _event_headers(
    buf: UInt8Array, starts: IntArray, lengths: IntArray
) -> tuple[BoolArray, IntArray, FloatArray, IntArray, IntArray]:
    """Per record: has the fast layout so far, step, wall time, and the span of its
    Summary's values (first byte, end)."""
    end = starts + lengths
    ok = (lengths >= 11) & (gather(buf, starts) == 0x09)
    wall = fixed(buf, starts + 1, "<f8")
    p = starts + 9
    has_step = gather(buf, p) == 0x10
    step, step_size, step_ok = varints(buf, p + 1, 10)
    ok &= step_ok | ~has_step
    steps = np.where(has_step, step, 0)
    p = np.where(has_step, p + 1 + step_size, p)
    ok &= gather(buf, p) == 0x2A
    summary, summary_size, summary_ok = varints(buf, p + 1, 5)
    first = p + 1 + summary_size
    ok &= summary_ok & (first + summary == end)
    return ok, steps, wall, first, end


def _walk_values(buf: UInt8Array, ok: BoolArray, first: IntArray, end: IntArray) -> _Values:
    """The `0a <len> <value>` entries of every record's Summary; records that do not
    frame cleanly are marked not ok."""
    parts: list[tuple[IntArray, int, IntArray, IntArray]] = []
    active = np.flatnonzero(ok & (first < end))
    cursor = first[active]
    position = 0
    while active.shape[0]:
        if position >= MAX_VALUES_PER_EVENT:
            ok[active] = False
            break
        size, size_bytes, size_ok = varints(buf, cursor + 1, 5)
        start = cursor + 1 + size_bytes
        stop = start + size
        good = (gather(buf, cursor) == _TAG) & size_ok & (stop <= end[active])
        ok[active[~good]] = False
        active, start, stop = active[good], start[good], stop[good]
        parts.append((active, position, start, stop))
        more = stop < end[active]
        active, cursor = active[more], stop[more]
        position += 1
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return _Values(empty, empty, empty, empty)
    return _Values(
        np.concatenate([p[0] for p in parts]),
        np.concatenate([np.full(p[0].shape[0], p[1], dtype=np.int64) for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]),
    )


def _walk_fields(
    buf: UInt8Array, values: _Values
) -> tuple[BoolArray, dict[int, tuple[IntArray, IntArray]], BoolArray]:
    """Each value's fields: per field key, (start, size) with start -1 when absent; which
    values are decodable; which hold another kind (image, histogram, audio)."""
    count = values.start.shape[0]
    good = np.ones(count, dtype=bool)
    other = np.zeros(count, dtype=bool)
    spans = {
        key: (np.full(count, -1, dtype=np.int64), np.zeros(count, dtype=np.int64))
        for key in (_TAG, _SIMPLE, _TENSOR, _METADATA, _NODE)
    }
    active = np.flatnonzero(values.start < values.end)
    cursor = values.start[active]
    for _ in range(MAX_FIELDS_PER_VALUE):
        if not active.shape[0]:
            break
        key = gather(buf, cursor)
        delimited = _LENGTH_DELIMITED[key]
        size, size_bytes, size_ok = varints(buf, cursor + 1, 5)
        start = np.where(delimited, cursor + 1 + size_bytes, cursor + 1)
        stop = np.where(delimited, start + size, cursor + 5)
        bad = ~(delimited | (key == _SIMPLE)) | (delimited & ~size_ok)
        bad |= stop > values.end[active]
        for field, (where, length) in spans.items():
            this = key == field
            bad |= this & (where[active] >= 0)  # a field twice: the parser decides
            where[active[this]] = start[this]
            length[active[this]] = (stop - start)[this]
        other[active[np.isin(key, _OTHER_KINDS)]] = True
        good[active[bad]] = False
        keep = ~bad & (stop < values.end[active])
        active, cursor = active[keep], stop[keep]
    good[active] = False  # more fields than walked
    return good, spans, other


def _tensor_scalars(
    buf: UInt8Array, start: IntArray, size: IntArray
) -> tuple[BoolArray, FloatArray]:
    """Rank-0 float/double tensors in one of `_TENSOR_FORMS`: which are, and their values."""
    known = np.zeros(start.shape[0], dtype=bool)
    numbers = np.zeros(start.shape[0], dtype=np.float64)
    dtype_ok = gather(buf, start) == 0x08
    dtype = gather(buf, start + 1)
    shaped = (gather(buf, start + 2) == 0x12) & (gather(buf, start + 3) == 0x00)
    body = np.where(shaped, start + 4, start + 2)
    for code, prefix, fmt in _TENSOR_FORMS:
        width = np.dtype(fmt).itemsize
        match = dtype_ok & (dtype == code) & (body + len(prefix) + width == start + size)
        for offset, byte in enumerate(prefix):
            match &= gather(buf, body + offset) == byte
        match &= ~known
        rows = np.flatnonzero(match)
        numbers[rows] = fixed(buf, body[rows] + len(prefix), fmt)
        known |= match
    return known, numbers


def _decode_tags(buf: UInt8Array, start: IntArray, size: IntArray) -> tuple[list[str], IntArray]:
    """Tag strings (absent: "") and each value's index among them; a tag that is not
    UTF-8 gets index -1 (the protobuf parser rejects it)."""
    present = start >= 0
    blobs, ids = distinct_spans(buf, np.where(present, start, 0), np.where(present, size, 0))
    tags: list[str] = []
    remap = np.full(len(blobs), -1, dtype=np.int64)
    for index, blob in enumerate(blobs):
        try:
            tag = blob.decode("utf-8")
        except UnicodeDecodeError:
            continue
        remap[index] = len(tags)
        tags.append(tag)
    return tags, remap[ids] if ids.shape[0] else ids


def decode_events(
    buf: UInt8Array,
    starts: IntArray,
    lengths: IntArray,
    plugin_name: Callable[[bytes], str | None],
    value_parses: Callable[[bytes], bool],
) -> Points:
    """Decode the payloads at `starts` (see the module docstring). `plugin_name` parses a
    `SummaryMetadata` blob to its plugin name (None: it does not parse); `value_parses`
    says whether a `Summary.Value` parses, for the values whose other parts (a histogram,
    an image, a node name, a simple value's metadata) are skipped here: the protobuf path
    would reject a damaged one, so this one must too."""
    ok, steps, wall, first, end = _event_headers(buf, starts, lengths)
    values = _walk_values(buf, ok, first, end)
    good, spans, other = _walk_fields(buf, values)
    simple_at = spans[_SIMPLE][0]
    tensor_at, tensor_size = spans[_TENSOR]
    has_simple, has_tensor = simple_at >= 0, tensor_at >= 0
    good &= ~(has_simple & has_tensor) & ~(other & (has_simple | has_tensor))
    known, tensor_numbers = _tensor_scalars(buf, tensor_at, tensor_size)
    good &= ~has_tensor | known
    good &= ok[values.record]  # only whole, well-framed values from here on
    tag_at, tag_size = spans[_TAG]
    named = np.flatnonzero(good)
    tags, ids = _decode_tags(buf, tag_at[named], tag_size[named])
    tag_ids = np.full(values.start.shape[0], -1, dtype=np.int64)
    tag_ids[named] = ids
    good &= tag_ids >= 0
    meta_at, meta_size = spans[_METADATA]
    with_meta = np.flatnonzero(has_tensor & (meta_at >= 0) & good)
    plugin = np.full(values.start.shape[0], -1, dtype=np.int64)
    plugins: list[str] = []
    if with_meta.shape[0]:
        blobs, ids = distinct_spans(buf, meta_at[with_meta], meta_size[with_meta])
        names = [plugin_name(blob) for blob in blobs]
        parsed = np.array([name is not None for name in names], dtype=bool)
        good[with_meta[~parsed[ids]]] = False
        plugins = [name or "" for name in names]
        plugin[with_meta] = ids
    unchecked = other | (spans[_NODE][0] >= 0) | (has_simple & (meta_at >= 0))
    for row in np.flatnonzero(unchecked & good).tolist():
        blob = buf[values.start[row] : values.end[row]].tobytes()
        if not value_parses(blob):
            good[row] = False
    ok[values.record[~good]] = False
    point = (has_simple | has_tensor) & ok[values.record]
    rows = np.flatnonzero(point)
    record = values.record[rows]
    numbers = np.where(has_tensor[rows], tensor_numbers[rows], fixed(buf, simple_at[rows], "<f4"))
    return Points(
        ok=ok,
        key=(record << POSITION_BITS) | values.position[rows],
        steps=steps[record],
        values=numbers,
        wall=wall[record],
        tag=tag_ids[rows],
        tags=tags,
        tensor=has_tensor[rows],
        plugin=plugin[rows],
        plugins=plugins,
        readable=np.ones(rows.shape[0], dtype=bool),
    )
