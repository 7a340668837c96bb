"""Where the changing bytes of one TensorBoard event record are: its record layout.

The events a writer emits for one tag (or one merged summary) are byte for byte the same
except for the wall time (a double), the step (a varint) and each scalar's float (four or
eight bytes): tag, metadata, tensor dtype and shape, every length and field key repeat.
`record_layout` walks one payload's protobuf wire format and says where those changing
bytes are; `checked_layout` then proves it with TensorBoard's own parser (`Describe`): the
payload, and a copy with every changing byte rewritten to other values, must parse to
exactly the values read from (and written to) those places. Any other record that equals
the checked one outside those bytes therefore parses to the values at those places: this
is what lets `_event_wire.py` decode a whole buffer of such records with a few numpy
operations and no per-record parse.

Only the changing bytes that cannot alter the parse are marked: a double and floats are
data whatever their bits, and of a step varint only the low 7 bits of each byte are (the
continuation bits stay fixed, so the varint keeps its length; a 10th byte stays fixed).
Anything the walker does not fully understand (a field twice, an unknown wire type, two
value kinds at once, a tensor with its float in two places) is left unmarked: unmarked
bytes must simply be equal, which is always correct, only shared by fewer records.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

PointInfo = tuple[int, str, bool, float | None, str | None]
"""A scalar of an event: (position in the Summary, tag, is a tensor, number or None when
unreadable, plugin named by the value's metadata or None when it carries none)."""
Describe = Callable[[bytes], tuple[int, float, list[PointInfo]]]
"""Parse an Event payload (raising on a damaged one): step, wall time, its scalars."""

_EVENT_WALL, _EVENT_STEP, _EVENT_SUMMARY = 1, 2, 5
_SUMMARY_VALUE = 1
_VALUE_SIMPLE, _VALUE_TENSOR = 2, 8
_VALUE_KINDS = frozenset({2, 3, 4, 5, 6, 8})  # the `value` oneof
_TENSOR_DTYPE, _TENSOR_CONTENT, _TENSOR_FLOAT, _TENSOR_DOUBLE = 1, 4, 5, 6
_DT_FLOAT, _DT_DOUBLE = 1, 2
_MAX_VARINT = 10
# Probe values written into the changing bytes to prove the layout (any distinct values).
_PROBE_WALL = 12345.678
_PROBE_LOW_BITS = 0x55
_STRUCT = {"<f4": "<f", "<f8": "<d"}


@dataclass(frozen=True)
class Layout:
    """The changing bytes of one record shape (offsets into the payload; -1: absent)."""

    wall_at: int
    step_at: int
    step_size: int
    floats: tuple[tuple[int, int, str], ...]
    """(value position in the Summary, offset, numpy dtype "<f4" or "<f8")."""


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """The varint at `pos` and the position after it; None if it runs past `end`."""
    value = shift = 0
    for index in range(_MAX_VARINT):
        if pos + index >= end:
            return None
        byte = data[pos + index]
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos + index + 1
    return None


def _fields(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]] | None:
    """The fields of the message `data[start:end]`: (number, wire type, value start, value
    end); None if it does not frame cleanly or uses a wire type other than 0, 1, 2, 5."""
    found = []
    pos = start
    while pos < end:
        key = _varint(data, pos, end)
        if key is None:
            return None
        number, pos = key[0] >> 3, key[1]
        wire = key[0] & 7
        if wire == 0:
            value = _varint(data, pos, end)
            if value is None:
                return None
            stop = value[1]
        elif wire == 1:
            stop = pos + 8
        elif wire == 5:
            stop = pos + 4
        elif wire == 2:
            size = _varint(data, pos, end)
            if size is None:
                return None
            pos, stop = size[1], size[1] + size[0]
        else:
            return None
        if stop > end:
            return None
        found.append((number, wire, pos, stop))
        pos = stop
    return found


def _once(fields: list[tuple[int, int, int, int]], number: int) -> list[tuple[int, int, int]]:
    return [(wire, start, stop) for n, wire, start, stop in fields if n == number]


def _tensor_float(data: bytes, start: int, end: int) -> tuple[int, str] | None:
    """Where a float/double tensor keeps its one number (tensor_content of one item, or a
    single packed or unpacked float_val / double_val), if that is unambiguous."""
    fields = _fields(data, start, end)
    if fields is None:
        return None
    dtypes = _once(fields, _TENSOR_DTYPE)
    if len(dtypes) != 1 or dtypes[0][0] != 0:
        return None
    dtype = _varint(data, dtypes[0][1], dtypes[0][2])
    if dtype is None or dtype[0] not in (_DT_FLOAT, _DT_DOUBLE):
        return None
    fmt, width, repeated, fixed_wire = (
        ("<f4", 4, _TENSOR_FLOAT, 5) if dtype[0] == _DT_FLOAT else ("<f8", 8, _TENSOR_DOUBLE, 1)
    )
    places = _once(fields, _TENSOR_CONTENT) + _once(fields, repeated)
    if len(places) != 1:
        return None
    wire, at, stop = places[0]
    if wire not in (2, fixed_wire) or stop - at != width:
        return None
    return at, fmt


def record_layout(data: bytes) -> Layout | None:
    """The changing bytes of an Event payload (module docstring); None when the Event
    itself does not frame cleanly or holds a field we read twice."""
    fields = _fields(data, 0, len(data))
    if fields is None:
        return None
    walls, steps, summaries = (_once(fields, n) for n in (_EVENT_WALL, _EVENT_STEP, _EVENT_SUMMARY))
    if len(walls) > 1 or len(steps) > 1 or len(summaries) > 1:
        return None
    wall_at = walls[0][1] if walls and walls[0][0] == 1 else -1
    step_at, step_size = -1, 0
    if steps and steps[0][0] == 0:
        step_at, step_size = steps[0][1], steps[0][2] - steps[0][1]
    floats: list[tuple[int, int, str]] = []
    if summaries and summaries[0][0] == 2:
        values = _fields(data, summaries[0][1], summaries[0][2])
        if values is None:
            return None
        position = 0
        for number, wire, start, stop in values:
            if number != _SUMMARY_VALUE or wire != 2:
                continue
            found = _value_float(data, start, stop)
            if found is not None:
                floats.append((position, *found))
            position += 1
    return Layout(wall_at, step_at, step_size, tuple(floats))


def _value_float(data: bytes, start: int, end: int) -> tuple[int, str] | None:
    """Where a Summary.Value keeps its float: a simple_value, or a float tensor's number."""
    fields = _fields(data, start, end)
    if fields is None:
        return None
    kinds = [(n, wire, at, stop) for n, wire, at, stop in fields if n in _VALUE_KINDS]
    if len(kinds) != 1:
        return None
    number, wire, at, stop = kinds[0]
    if number == _VALUE_SIMPLE and wire == 5:
        return at, "<f4"
    if number == _VALUE_TENSOR and wire == 2:
        return _tensor_float(data, at, stop)
    return None


def _probe(data: bytes, layout: Layout) -> tuple[bytes, int, float, dict[int, float]]:
    """`data` with every changing byte rewritten: the bytes, and the step, wall time and
    numbers they now hold."""
    probe = bytearray(data)
    wall = 0.0
    if layout.wall_at >= 0:
        wall = _PROBE_WALL
        struct.pack_into("<d", probe, layout.wall_at, wall)
    step = 0
    for index in range(_changing_step_bytes(layout)):
        at = layout.step_at + index
        probe[at] = (probe[at] & 0x80) | _PROBE_LOW_BITS
    if layout.step_at >= 0:
        decoded = _varint(bytes(probe), layout.step_at, layout.step_at + layout.step_size)
        step = _signed(decoded[0]) if decoded else 0
    numbers = {}
    for index, (position, at, fmt) in enumerate(layout.floats):
        number = float(index + 1) * 1.5
        struct.pack_into(_STRUCT[fmt], probe, at, number)
        numbers[position] = number
    return bytes(probe), step, wall, numbers


def _changing_step_bytes(layout: Layout) -> int:
    """Bytes of the step whose low 7 bits change (a 10th byte carries one bit: fixed)."""
    return min(layout.step_size, _MAX_VARINT - 1) if layout.step_at >= 0 else 0


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def _read(data: bytes, at: int, fmt: str) -> float:
    return float(struct.unpack_from(_STRUCT[fmt], data, at)[0])


def checked_layout(data: bytes, describe: Describe) -> tuple[Layout, list[PointInfo]] | None:
    """The layout of `data` proved by `describe` (TensorBoard's parser) and the payload's
    scalars; None when `data` does not parse. A layout the parser contradicts loses its
    changing bytes (every record must then equal this one to share its decoding)."""
    try:
        step, wall, points = describe(data)
    except Exception:  # google.protobuf.message.DecodeError: a damaged payload
        return None
    constant = Layout(-1, -1, 0, ())
    layout = record_layout(data)
    if layout is None:
        return constant, points
    numbers = {position: number for position, _, _, number, _ in points}
    for position, at, fmt in layout.floats:
        if position not in numbers or not _same(numbers[position], _read(data, at, fmt)):
            return constant, points
    probe, probe_step, probe_wall, probe_numbers = _probe(data, layout)
    try:
        got_step, got_wall, got_points = describe(probe)
    except Exception:
        return constant, points
    expected_step = probe_step if layout.step_at >= 0 else step
    expected_wall = probe_wall if layout.wall_at >= 0 else wall
    if (got_step, got_wall) != (expected_step, expected_wall) or len(got_points) != len(points):
        return constant, points
    for before, after in zip(points, got_points, strict=True):
        if before[:3] != after[:3] or before[4] != after[4]:
            return constant, points
        want = probe_numbers.get(before[0], before[3])
        if not _same(after[3], want):
            return constant, points
    return layout, points


def changing_mask(layout: Layout, size: int) -> bytes:
    """Per byte of a payload of `size` bytes: the bits that must equal the checked
    record's (0xFF) and those that may change (0 for floats, 0x80 for a step byte)."""
    mask = bytearray(b"\xff" * size)
    if layout.wall_at >= 0:
        mask[layout.wall_at : layout.wall_at + 8] = bytes(8)
    for index in range(_changing_step_bytes(layout)):
        mask[layout.step_at + index] = 0x80
    for _, at, fmt in layout.floats:
        width = 4 if fmt == "<f4" else 8
        mask[at : at + width] = bytes(width)
    return bytes(mask)
