"""The numpy fast path for TensorBoard scalar events: a whole buffer of records decoded at
once, in every layout the writers use, by record layout rather than record by record.

The records of an event file repeat a handful of shapes: one per tag and step width for
`simple_value` events (PyTorch, tensorboardX), one per merged summary (TF1: several values
per event), one per tag for TF2 `tf.summary.scalar` tensors (a rank-0 float tensor with or
without the scalars plugin's metadata). Within a shape only the wall time, the step and the
floats change (`_event_layout.py`). So the records of a buffer are grouped by payload
length; in each group the first record's layout is checked with TensorBoard's parser, and
every record equal to it outside the changing bytes (compared eight bytes at a time, as
uint64 words through a strided view of the buffer: no per-record Python) shares its
decoding: wall times, steps and values are read as columns. Records that differ form the
next layout; after a few layouts a group is split by a hash of its masked words instead, so
a group of many shapes costs one sort, not one pass per shape. Records whose layout does
not parse, and what is left past `MAX_LAYOUTS` layouts per buffer, go to the protobuf
parser (`EventFileScanner._parse_slow`), which decides (damage included). The two paths
give identical points (tests/readers/test_tensorboard_scanner.py checks this on random
events, damaged ones included).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from trainspotter.model import FloatArray, IntArray
from trainspotter.readers._event_layout import Describe, Layout, changing_mask, checked_layout
from trainspotter.readers._tfrecord import BoolArray, UInt8Array

POSITION_BITS = 16
"""A point's sort key is `record << POSITION_BITS | position in the event`."""
MAX_LAYOUTS = 512
"""Layouts checked per buffer; records of further shapes go to the protobuf parser."""
SEQUENTIAL_LAYOUTS = 4
"""Layouts tried one after the other in a length group before it is split by hash."""
_WORD = 8
_HASH_SEED = 12345


@dataclass
class Points:
    """Scalar points of the records the protobuf parser decoded (one row per point)."""

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
class Block:
    """One tag's points from one buffer, in file order (fields as in `Points`)."""

    key: IntArray
    steps: IntArray
    values: FloatArray
    wall: FloatArray
    tensor: BoolArray
    plugin: IntArray
    plugins: list[str]
    readable: BoolArray

    def take(self, rows: IntArray) -> Block:
        return Block(
            self.key[rows],
            self.steps[rows],
            self.values[rows],
            self.wall[rows],
            self.tensor[rows],
            self.plugin[rows],
            self.plugins,
            self.readable[rows],
        )

    def join(self, other: Block) -> Block:
        """Both blocks' points in file order (their records never overlap)."""
        shifted = np.where(other.plugin >= 0, other.plugin + len(self.plugins), -1)
        joined = Block(
            np.concatenate([self.key, other.key]),
            np.concatenate([self.steps, other.steps]),
            np.concatenate([self.values, other.values]),
            np.concatenate([self.wall, other.wall]),
            np.concatenate([self.tensor, other.tensor]),
            np.concatenate([self.plugin, shifted]),
            self.plugins + other.plugins,
            np.concatenate([self.readable, other.readable]),
        )
        return joined.take(np.argsort(joined.key, kind="stable"))


def by_tag(points: Points) -> dict[str, Block]:
    """`points` split per tag, each in file order."""
    order = np.argsort(points.key, kind="stable")
    tag = points.tag[order]
    found: dict[str, Block] = {}
    if not order.shape[0]:
        return found
    # Group rows by tag keeping file order within each: a stable sort by tag id.
    grouped = order[np.argsort(tag, kind="stable")]
    ids = points.tag[grouped]
    bounds = np.flatnonzero(np.diff(ids)) + 1
    for rows in np.split(grouped, bounds):
        found[points.tags[int(points.tag[rows[0]])]] = Block(
            points.key[rows],
            points.steps[rows],
            points.values[rows],
            points.wall[rows],
            points.tensor[rows],
            points.plugin[rows],
            points.plugins,
            points.readable[rows],
        )
    return found


@dataclass
class Decoded:
    """What the fast path made of a buffer of records."""

    ok: BoolArray
    """Per record: decoded here (else it goes to the protobuf parser)."""
    blocks: dict[str, Block]
    """Per tag, in order of first appearance among these records."""


@dataclass
class _Piece:
    """The points of one value position of one layout: rows of a few columns."""

    records: IntArray
    position: int
    steps: IntArray
    wall: FloatArray
    values: FloatArray
    tensor: bool
    plugin: int
    readable: bool


@dataclass
class _Checked:
    """A checked layout for payloads of one length: mask words and what it decodes to."""

    mask: IntArray
    """uint64 words (as int64 bits) of `changing_mask`, zero-padded."""
    layout: Layout | None
    """None: the payload does not parse (records equal to it go to the protobuf parser)."""
    points: list[tuple[int, str, bool, float | None, str | None]]


@dataclass
class _Decoder:
    buf: UInt8Array
    describe: Describe
    ok: BoolArray
    pieces: dict[str, list[_Piece]] = field(default_factory=dict)
    plugins: dict[str, int] = field(default_factory=dict)
    layouts: int = 0

    def check(self, start: int, size: int, width: int) -> _Checked | None:
        """The layout of the payload at `start` (None once `MAX_LAYOUTS` are used)."""
        if self.layouts >= MAX_LAYOUTS:
            return None
        self.layouts += 1
        payload = self.buf[start : start + size].tobytes()
        found = checked_layout(payload, self.describe)
        mask = changing_mask(found[0], size) if found else b"\xff" * size
        words = np.frombuffer(mask + bytes(width * _WORD - size), dtype="<u8").view(np.int64)
        if found is None:
            return _Checked(words, None, [])
        return _Checked(words, found[0], found[1])

    def accept(self, checked: _Checked, records: IntArray, rows: UInt8Array) -> None:
        """Records `records` (byte rows `rows`) share `checked`'s decoding."""
        layout = checked.layout
        if layout is None:
            return
        self.ok[records] = True
        count = records.shape[0]
        wall = np.zeros(count)
        if layout.wall_at >= 0:
            wall = _column(rows, layout.wall_at, "<f8")
        steps = np.zeros(count, dtype=np.int64)
        if layout.step_at >= 0:
            steps = _varint_column(rows, layout.step_at, layout.step_size)
        floats = {position: (at, fmt) for position, at, fmt in layout.floats}
        for position, tag, tensor, number, plugin in checked.points:
            if position in floats:
                values = _column(rows, *floats[position])
            else:
                values = np.full(count, np.nan if number is None else number)
            plugin_id = -1 if plugin is None else self.plugins.setdefault(plugin, len(self.plugins))
            piece = _Piece(
                records, position, steps, wall, values, tensor, plugin_id, number is not None
            )
            self.pieces.setdefault(tag, []).append(piece)

    def blocks(self) -> dict[str, Block]:
        """Per tag, the points in file order; tags in order of first appearance."""
        plugins = list(self.plugins)
        found: dict[str, Block] = {}
        for tag, pieces in self.pieces.items():
            key = np.concatenate([(p.records << POSITION_BITS) | p.position for p in pieces])
            block = Block(
                key,
                np.concatenate([p.steps for p in pieces]),
                np.concatenate([p.values for p in pieces]),
                np.concatenate([p.wall for p in pieces]),
                np.concatenate([np.full(p.records.shape[0], p.tensor) for p in pieces]),
                np.concatenate([np.full(p.records.shape[0], p.plugin) for p in pieces]),
                plugins,
                np.concatenate([np.full(p.records.shape[0], p.readable) for p in pieces]),
            )
            if len(pieces) > 1 and not bool(np.all(key[1:] > key[:-1])):
                block = block.take(np.argsort(key, kind="stable"))  # sorted runs: fast
            found[tag] = block
        return dict(sorted(found.items(), key=lambda item: int(item[1].key[0])))


def _column(rows: UInt8Array, at: int, fmt: str) -> FloatArray:
    """The float of dtype `fmt` at byte `at` of every row, as float64."""
    width = np.dtype(fmt).itemsize
    raw = np.ascontiguousarray(rows[:, at : at + width])
    out: FloatArray = raw.view(fmt)[:, 0].astype(np.float64)
    return out


def _varint_column(rows: UInt8Array, at: int, size: int) -> IntArray:
    """The varint of `size` bytes at byte `at` of every row (two's complement int64)."""
    value = np.zeros(rows.shape[0], dtype=np.uint64)
    for index in range(size):
        byte = (rows[:, at + index] & 0x7F).astype(np.uint64)
        value |= byte << np.uint64(7 * index)
    out: IntArray = value.view(np.int64)
    return out


def _split_by_length(lengths: IntArray) -> list[tuple[int, IntArray]]:
    """(payload length, indices of the records of that length), each in file order."""
    if not lengths.shape[0]:
        return []
    if int(lengths.max()) < 1 << 16:  # the usual case: no sort
        distinct = np.flatnonzero(np.bincount(lengths)).tolist()
    else:
        distinct = np.unique(lengths).tolist()
    if len(distinct) <= 64:
        return [(size, np.flatnonzero(lengths == size)) for size in distinct]
    order = np.argsort(lengths, kind="stable")
    bounds = np.flatnonzero(np.diff(lengths[order])) + 1
    return [(int(lengths[rows[0]]), rows) for rows in np.split(order, bounds)]


def _decode_length(
    decoder: _Decoder, padded: UInt8Array, starts: IntArray, records: IntArray, size: int
) -> None:
    """Decode the records `records` (all with payloads of `size` bytes)."""
    width = max(1, -(-size // _WORD))
    rows: UInt8Array = sliding_window_view(padded, width * _WORD)[starts[records]]
    words = rows.view(np.int64)
    pending = np.arange(records.shape[0])
    rounds = 0
    while pending.shape[0]:
        first = int(pending[0])
        checked = decoder.check(int(starts[records[first]]), size, width)
        if checked is None:
            return  # past MAX_LAYOUTS: the rest goes to the protobuf parser
        rounds += 1
        mine = words if pending.shape[0] == records.shape[0] else words[pending]
        if rounds <= SEQUENTIAL_LAYOUTS:
            match = _equal_under_mask(mine, checked.mask)
            decoder.accept(checked, records[pending[match]], rows[pending[match]])
            pending = pending[~match]
            continue
        masked = mine & checked.mask
        pending = _decode_by_hash(decoder, checked, masked, pending, records, rows, starts, size)


def _equal_under_mask(words: IntArray, mask: IntArray) -> BoolArray:
    """Which rows equal the first one in the bits `mask` keeps: word column by word
    column, skipping the columns that are all changing bytes (about 2.5x faster than
    masking the whole array and comparing rows)."""
    first = words[0]
    match = np.ones(words.shape[0], dtype=bool)
    for column, bits in enumerate(mask.tolist()):
        if bits == 0:
            continue
        if bits == -1:
            match &= words[:, column] == first[column]
        else:
            match &= (words[:, column] & bits) == (first[column] & bits)
    return match


def _decode_by_hash(
    decoder: _Decoder,
    checked: _Checked,
    masked: IntArray,
    pending: IntArray,
    records: IntArray,
    rows: UInt8Array,
    starts: IntArray,
    size: int,
) -> IntArray:
    """Split `pending` by a hash of its words under `checked`'s mask; decode each group
    of two or more whose first record has that mask and that equal it; return the rest."""
    weights = np.random.default_rng(_HASH_SEED).integers(1, 2**62, masked.shape[1]) | 1
    with np.errstate(over="ignore"):
        hashes = (masked * weights).sum(axis=1)
    order = np.argsort(hashes, kind="stable")
    bounds = np.flatnonzero(np.diff(hashes[order])) + 1
    left: list[IntArray] = []
    width = masked.shape[1]
    for group in np.split(order, bounds):
        head = int(group[0])
        own = (
            checked
            if head == 0
            else (
                decoder.check(int(starts[records[pending[head]]]), size, width)
                if group.shape[0] > 1
                else None
            )
        )
        if own is None or not np.array_equal(own.mask, checked.mask):
            if own is None and group.shape[0] == 1:
                continue  # a lone record: the protobuf parser takes it
            left.append(group)
            continue
        match = (masked[group] == masked[head]).all(axis=1)
        chosen = pending[group[match]]
        decoder.accept(own, records[chosen], rows[chosen])
        left.append(group[~match])
    if not left:
        return pending[:0]
    return pending[np.sort(np.concatenate(left))]


def decode_events(
    buf: UInt8Array, starts: IntArray, lengths: IntArray, describe: Describe
) -> Decoded:
    """Decode the payloads at `starts` (see the module docstring); `describe` is
    TensorBoard's parser, used to check each layout."""
    ok = np.zeros(starts.shape[0], dtype=bool)
    decoder = _Decoder(buf, describe, ok)
    if starts.shape[0]:
        padded = np.concatenate([buf, np.zeros(_WORD, dtype=np.uint8)])
        for size, records in _split_by_length(lengths):
            _decode_length(decoder, padded, starts, records, size)
    return Decoded(ok, decoder.blocks())
