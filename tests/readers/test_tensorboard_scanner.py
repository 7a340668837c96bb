"""The direct TFRecord/Event reader (`EventFileScanner`): its vectorised fast path agrees
with TensorBoard's protobuf parser on every record shape, whatever the buffer cuts; tensor
scalars of every numeric dtype; damaged files stop with a note."""

from __future__ import annotations

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

from trainspotter.readers import read_log  # noqa: E402
from trainspotter.readers._event_scan import EventFileScanner  # noqa: E402
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
    assert pending == b""
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
