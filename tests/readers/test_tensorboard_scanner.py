"""The direct TFRecord/Event reader (`EventFileScanner`): its vectorised fast path agrees
with TensorBoard's protobuf parser on every record shape (one or several values per event,
simple values and tensor scalars with or without metadata, histograms beside them),
whatever the buffer cuts; tensor scalars of every numeric dtype; damaged files stop with a
note."""

from __future__ import annotations

import dataclasses
import random
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
tensor_pb2 = pytest.importorskip("tensorboard.compat.proto.tensor_pb2")

from trainspotter.readers import (  # noqa: E402
    _event_scan,
    _event_wire,
    _tfrecord,
    read_log,
)
from trainspotter.readers._event_scan import EventFileScanner  # noqa: E402
from trainspotter.readers._event_wire import Decoded  # noqa: E402
from trainspotter.readers._tfrecord import masked_crc32c  # noqa: E402


def record(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return (
        length
        + struct.pack("<I", masked_crc32c(length))
        + payload
        + struct.pack("<I", masked_crc32c(payload))
    )


def scalar_event(tag: str, step: int, value: float, wall: float) -> bytes:
    event = event_pb2.Event(wall_time=wall, step=step)
    event.summary.value.add(tag=tag, simple_value=value)
    return bytes(event.SerializeToString())


def tensor_event(
    tag: str, step: int, tensor: object, wall: float, plugin: str | None = "scalars"
) -> bytes:
    event = event_pb2.Event(wall_time=wall, step=step)
    value = event.summary.value.add(tag=tag)
    value.tensor.CopyFrom(tensor)
    if plugin is not None:
        value.metadata.plugin_data.plugin_name = plugin
    return bytes(event.SerializeToString())


def version_event() -> bytes:
    return bytes(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())


def reference(payloads: list[bytes]) -> dict[str, list[tuple[int, float, float]]]:
    """Per tag (step, value, wall) by TensorBoard's protobuf parser alone."""
    out: dict[str, list[tuple[int, float, float]]] = {}
    for payload in payloads:
        event = event_pb2.Event.FromString(payload)
        for value in event.summary.value:
            if value.WhichOneof("value") == "simple_value":
                out.setdefault(value.tag, []).append(
                    (event.step, value.simple_value, event.wall_time)
                )
    return out


def scanned(scanner: EventFileScanner) -> dict[str, list[tuple[int, float, float]]]:
    out = {}
    for tag, points in scanner.tags.items():
        steps, values, wall = points.arrays()
        out[tag] = list(zip(steps.tolist(), values.tolist(), wall.tolist(), strict=True))
    return out


def feed_in_pieces(data: bytes, seed: int) -> EventFileScanner:
    scanner = EventFileScanner(event_pb2.Event)
    rng = random.Random(seed)
    pending = b""
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 200)
        pending += data[pos : pos + step]
        pos += step
        used = scanner.feed(pending)
        pending = pending[used:]
    assert pending == b"" or scanner.damaged_at is not None
    return scanner


tags = st.sampled_from(["loss", "lr", "train/grad_norm", "", "ü/ñ", "x" * 130])


@settings(max_examples=60, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            tags,
            st.integers(-(2**40), 2**40),
            st.floats(width=32, allow_nan=False),
            st.sampled_from([0.0, 1.7e9, 1.7e9 + 0.25]),
        ),
        max_size=40,
    ),
    seed=st.integers(0, 100),
)
def test_fast_path_agrees_with_protobuf(
    events: list[tuple[str, int, float, float]], seed: int
) -> None:
    payloads = [version_event()] + [scalar_event(*e) for e in events]
    data = b"".join(record(p) for p in payloads)
    scanner = feed_in_pieces(data, seed)
    assert scanned(scanner) == reference(payloads)
    assert list(scanner.tags) == list(reference(payloads))  # first-appearance order
    assert scanner.records == len(payloads) and scanner.damaged_at is None


def protobuf_only(decoded: Decoded) -> Decoded:
    """`decode_events` output with every record left to the protobuf parser."""
    return dataclasses.replace(decoded, ok=np.zeros_like(decoded.ok), blocks={})


def scan_both_ways(data: bytes, seed: int) -> tuple[EventFileScanner, EventFileScanner]:
    fast = feed_in_pieces(data, seed)
    decode = _event_scan.decode_events
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_event_scan, "decode_events", lambda *a: protobuf_only(decode(*a)))
        slow = feed_in_pieces(data, seed)
    return fast, slow


def tensor_value(kind: str, number: float) -> object:
    """A tensor as the writers lay it out (`kind`), or one that is not a float scalar."""
    if kind == "content32":  # TF2 summary ops: AsProtoTensorContent, shape set
        tensor = make_tensor(1, tensor_content=np.float32(number).tobytes())
        tensor.tensor_shape.SetInParent()  # type: ignore[attr-defined]
    elif kind == "content64":
        tensor = make_tensor(2, tensor_content=np.float64(number).tobytes())
    elif kind == "float_val":  # tensorboard.summary.Writer: packed float_val, shape set
        tensor = make_tensor(1, float_val=[number])
        tensor.tensor_shape.SetInParent()  # type: ignore[attr-defined]
    elif kind == "double_val":
        tensor = make_tensor(2, double_val=[number])
    elif kind == "int":
        tensor = make_tensor(3, int_val=[7])
    elif kind == "vector":
        tensor = make_tensor(1, float_val=[number, number])
        tensor.tensor_shape.dim.add(size=2)  # type: ignore[attr-defined]
    else:
        tensor = make_tensor(7, string_val=[b"text"])
    return tensor


value_specs = st.tuples(
    st.sampled_from(["simple", "tensor", "histo", "bare"]),
    tags,
    st.floats(width=32, allow_nan=True),
    st.sampled_from(["content32", "content64", "float_val", "double_val", "int", "vector", "str"]),
    st.sampled_from(["scalars", "", "histograms", None]),
)


def mixed_event(
    step: int, wall: float, specs: list[tuple[str, str, float, str, str | None]]
) -> bytes:
    """One event holding several values of every kind (a TF1 merged summary, TF2 tensors)."""
    event = event_pb2.Event(wall_time=wall, step=step)
    event.summary.SetInParent()
    for kind, tag, number, form, plugin in specs:
        value = event.summary.value.add(tag=tag)
        if kind == "simple":
            value.simple_value = number
            if plugin == "histograms":  # tensorboardX's display_name metadata
                value.metadata.display_name = "shown"
        elif kind == "tensor":
            value.tensor.CopyFrom(tensor_value(form, number))
            if plugin is not None:
                value.metadata.plugin_data.plugin_name = plugin
                value.metadata.data_class = 1
        elif kind == "histo":
            value.histo.num = 3.0
            value.histo.bucket.extend([1.0, 2.0])
    return bytes(event.SerializeToString())


@settings(max_examples=80, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from([0, 1, 7, 300, -5, 2**40]),
            st.sampled_from([0.0, 1.7e9, 1.7e9 + 0.25]),
            st.lists(value_specs, max_size=5),
        ),
        max_size=25,
    ),
    seed=st.integers(0, 100),
)
def test_every_layout_agrees_with_the_protobuf_path(
    events: list[tuple[int, float, list[tuple[str, str, float, str, str | None]]]],
    seed: int,
) -> None:
    """Property: values, order, tags and the remembered plugins are identical whether a
    record is decoded by numpy or by TensorBoard's protobuf class."""
    payloads = [version_event()] + [mixed_event(*e) for e in events]
    data = b"".join(record(p) for p in payloads)
    fast, slow = scan_both_ways(data, seed)
    assert repr(scanned(fast)) == repr(scanned(slow))  # repr: NaN == NaN
    assert list(fast.tags) == list(slow.tags)
    assert fast.plugins == slow.plugins
    assert fast.records == slow.records == len(payloads) and fast.damaged_at is None


@settings(max_examples=80, deadline=None)
@given(
    specs=st.lists(st.lists(value_specs, min_size=1, max_size=4), min_size=1, max_size=6),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3),
    seed=st.integers(0, 100),
)
def test_damaged_payloads_are_judged_alike(
    specs: list[list[tuple[str, str, float, str, str | None]]],
    flips: list[tuple[int, int]],
    seed: int,
) -> None:
    """Property: a payload with changed bytes (the payload CRC is not checked) gives the
    same points, or the same damaged record, on both paths."""
    payloads = [bytearray(mixed_event(i, 1.7e9 + i, v)) for i, v in enumerate(specs)]
    for where, byte in flips:
        payload = payloads[where % len(payloads)]
        payload[where % len(payload)] = byte
    data = b"".join(record(bytes(p)) for p in payloads)
    fast, slow = scan_both_ways(data, seed)
    assert repr(scanned(fast)) == repr(scanned(slow))
    assert fast.plugins == slow.plugins
    assert (fast.records, fast.damaged_at) == (slow.records, slow.damaged_at)


def test_the_writers_layouts_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Merged summaries, TF2 tensor scalars with metadata on every event (or only the
    first) and `simple_value`s never reach the protobuf parser."""
    tf2 = [("tensor", "loss", 0.5, "content32", "scalars")]
    writer = [("tensor", "lr", 0.25, "float_val", "scalars")]
    merged = [("simple", "a", 1.0, "", None), ("simple", "b", 2.0, "", None)]
    payloads = [
        mixed_event(step, 1.7e9 + step, specs)
        for specs in (tf2, writer, merged)
        for step in (0, 1, 2)
    ]
    payloads.append(mixed_event(3, 1.7e9, [("tensor", "loss", 0.1, "content32", None)]))
    parsed: list[int] = []
    original = EventFileScanner._parse_slow

    def spy(
        self: EventFileScanner, buffer: bytes, starts: object, lengths: object, which: object
    ) -> object:
        parsed.extend(which.tolist())  # type: ignore[attr-defined]
        return original(self, buffer, starts, lengths, which)  # type: ignore[arg-type]

    monkeypatch.setattr(EventFileScanner, "_parse_slow", spy)
    scanner = feed_in_pieces(b"".join(record(p) for p in payloads), 0)
    assert parsed == []
    assert scanned(scanner)["loss"] == [
        (0, 0.5, 1.7e9),
        (1, 0.5, 1.7e9 + 1),
        (2, 0.5, 1.7e9 + 2),
        (3, float(np.float32(0.1)), 1.7e9),
    ]
    assert [len(v) for v in scanned(scanner).values()] == [4, 3, 3, 3]


def make_tensor(dtype: int, **fields: object) -> object:
    tensor = tensor_pb2.TensorProto(dtype=dtype)
    for name, value in fields.items():
        if name == "tensor_content":
            tensor.tensor_content = value  # type: ignore[attr-defined]
        else:
            getattr(tensor, name).extend(value)
    return tensor


def test_tensor_scalars_of_every_numeric_dtype(tmp_path: Path) -> None:
    half_bits = int(np.array([1.5], dtype=np.float16).view(np.uint16)[0])
    bf16_bits = int(np.array([2.5], dtype=np.float32).view(np.uint32)[0]) >> 16
    cases = [
        ("f", make_tensor(1, float_val=[0.5]), 0.5),
        ("d", make_tensor(2, double_val=[0.25]), 0.25),
        ("i", make_tensor(3, int_val=[7]), 7.0),
        ("l", make_tensor(9, int64_val=[2**40]), float(2**40)),
        ("h", make_tensor(19, half_val=[half_bits]), 1.5),
        ("b", make_tensor(14, half_val=[bf16_bits]), 2.5),
        ("c", make_tensor(1, tensor_content=np.float32(3.25).tobytes()), 3.25),
        ("cd", make_tensor(2, tensor_content=np.float64(4.5).tobytes()), 4.5),
    ]
    payloads = [version_event()]
    for tag, tensor, _ in cases:
        payloads.append(tensor_event(tag, 1, tensor, 10.0))
        payloads.append(tensor_event(tag, 2, tensor, 11.0, plugin=None))  # metadata once
    # Not scalars: a string tensor, a rank-1 tensor, another plugin's rank-0 tensor.
    payloads.append(tensor_event("text", 1, make_tensor(7, string_val=[b"hi"]), 10.0, "text"))
    vector = make_tensor(1, float_val=[1.0, 2.0])
    vector.tensor_shape.dim.add(size=2)  # type: ignore[attr-defined]
    payloads.append(tensor_event("vec", 1, vector, 10.0))
    payloads.append(tensor_event("other", 1, make_tensor(1, float_val=[1.0]), 10.0, "pr_curves"))
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(record(p) for p in payloads))
    run = read_log(path)
    for tag, _, expected in cases:
        assert run.metrics[tag].values.tolist() == [expected, expected], tag
    assert not {"text", "vec", "other"} & set(run.metrics)


def test_damaged_length_crc_stops_with_a_note(tmp_path: Path) -> None:
    payloads = [version_event()] + [
        scalar_event("loss", s, 1.0 / s, 1.7e9 + s) for s in range(1, 9)
    ]
    records = [record(p) for p in payloads]
    bad = bytearray(records[5])
    bad[8] ^= 0xFF  # the length's CRC
    path = tmp_path / "events.out.tfevents.2.host"
    path.write_bytes(b"".join(records[:5]) + bytes(bad) + b"".join(records[6:]))
    run = read_log(path)
    assert run.metrics["train/loss"].steps.tolist() == [1, 2, 3, 4]
    assert any("damaged record" in note for note in run.notes())


def test_damaged_payload_stops_with_a_note(tmp_path: Path) -> None:
    payloads = [version_event()] + [scalar_event("loss", s, 1.0, 1.7e9 + s) for s in range(1, 6)]
    garbage = record(b"\xff\xff\xff\xff\xff")  # framed correctly, not an Event
    path = tmp_path / "events.out.tfevents.3.host"
    path.write_bytes(b"".join(record(p) for p in payloads[:3]) + garbage + record(payloads[4]))
    run = read_log(path)
    assert run.metrics["train/loss"].steps.tolist() == [1, 2]
    assert any("damaged record" in note for note in run.notes())


def test_incomplete_last_record_is_skipped_with_a_note(tmp_path: Path) -> None:
    data = b"".join(record(scalar_event("loss", s, 1.0, 1.7e9 + s)) for s in range(1, 6))
    path = tmp_path / "events.out.tfevents.4.host"
    path.write_bytes(data[:-3])
    run = read_log(path)
    assert run.metrics["train/loss"].steps.tolist() == [1, 2, 3, 4]
    assert any("incomplete last record" in note for note in run.notes())


def test_half_val_out_of_16_bits_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """D3 (ADVERSARIAL.md): a crafted DT_BFLOAT16 / DT_HALF tensor whose half_val does not
    fit 16 bits is skipped like any unreadable value (it was an OverflowError, exit 3)."""
    payloads = [version_event()]
    for step in (1, 2, 3):
        payloads.append(scalar_event("loss", step, 1.0 / step, 1.7e9 + step))
    payloads.append(tensor_event("b", 1, make_tensor(14, half_val=[2**20]), 10.0))
    payloads.append(tensor_event("h", 1, make_tensor(19, half_val=[-1]), 10.0))
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(record(p) for p in payloads))
    run = read_log(path)
    [metric] = run.metrics.values()  # the loss (under its canonical name) and nothing else
    assert metric.values.tolist() == [1.0, 0.5, float(np.float32(1.0 / 3))]


@settings(max_examples=100, deadline=None)
@given(
    lengths=st.lists(st.sampled_from([0, 1, 4, 8, 20, 40, 300]), max_size=60),
    tail=st.binary(max_size=40),
    cut=st.integers(0, 64),
    flips=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255)), max_size=2),
)
def test_vectorised_framing_walk_matches_the_loop(
    lengths: list[int], tail: bytes, cut: int, flips: list[tuple[int, int]]
) -> None:
    """Property: the pointer-doubling walk finds exactly the records the plain loop finds,
    also when payloads are zeros (every offset a candidate), records are cut short or
    lengths damaged."""
    data = bytearray(b"".join(record(bytes([9]) * n if n % 8 else bytes(n)) for n in lengths))
    data += tail
    for where, byte in flips:
        if data:
            data[where % len(data)] = byte
    data = data[: max(0, len(data) - cut)]
    loop = _tfrecord._walk_in_python(bytes(data))
    vectorised = _tfrecord._walk_vectorised(bytes(data))
    assert vectorised[0].tolist() == loop[0].tolist() and vectorised[1] == loop[1]


@settings(max_examples=60, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.integers(0, 11),
            st.integers(0, 300),
            st.floats(width=32, allow_nan=True),
            st.sampled_from(["simple", "content32", "float_val", "int"]),
        ),
        max_size=80,
    ),
    sequential=st.integers(0, 4),
    layouts=st.sampled_from([1, 3, 8, 512]),
    seed=st.integers(0, 100),
)
def test_many_shapes_of_one_length_agree(
    events: list[tuple[int, int, float, str]], sequential: int, layouts: int, seed: int
) -> None:
    """Property: records of many shapes with payloads of one length (tags `t00`..`t11`,
    simple and tensor values) are split by hash after `SEQUENTIAL_LAYOUTS` layouts, and
    past `MAX_LAYOUTS` go to the protobuf parser: the points are the protobuf path's."""
    payloads = [version_event()]
    for tag, step, number, form in events:
        if form == "simple":
            payloads.append(scalar_event(f"t{tag:02d}", step, number, 1.7e9 + step))
        else:
            tensor = tensor_value(form, number)
            payloads.append(tensor_event(f"t{tag:02d}", step, tensor, 1.7e9 + step))
    data = b"".join(record(p) for p in payloads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_event_wire, "SEQUENTIAL_LAYOUTS", sequential)
        patch.setattr(_event_wire, "MAX_LAYOUTS", layouts)
        fast, slow = scan_both_ways(data, seed)
    assert repr(scanned(fast)) == repr(scanned(slow))
    assert list(fast.tags) == list(slow.tags)
    assert fast.plugins == slow.plugins
    assert fast.records == slow.records == len(payloads)
