"""The TensorBoard reader, on event files written in the test by the real writers:
tensorboardX (`simple_value` scalars, PyTorch style, and TF1-style merged summaries),
`tensorboard.summary.Writer` (rank-0 tensor scalars), TF2's `tf.summary.scalar` layout
(see `write_tf2_scalars`) and `torch.utils.tensorboard` when torch is installed."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from readers_support import assert_well_formed

from trainspotter.errors import InputError
from trainspotter.readers import detect_format, read_log

pytest.importorskip("tensorboard.compat.proto.event_pb2")
tensorboardX = pytest.importorskip("tensorboardX")
tb_summary = pytest.importorskip("tensorboard.summary")

HAS_TORCH = importlib.util.find_spec("torch") is not None


def write_simple_value(folder: Path, points: dict[str, list[tuple[int, float]]]) -> None:
    writer = tensorboardX.SummaryWriter(str(folder))
    for tag, series in points.items():
        for step, value in series:
            writer.add_scalar(tag, value, step)
    writer.close()


def write_tensor_scalars(
    folder: Path, points: dict[str, list[tuple[int, float]]], wall_time: float | None = None
) -> None:
    writer = tb_summary.Writer(str(folder))
    for tag, series in points.items():
        for step, value in series:
            writer.add_scalar(tag, value, step, wall_time=wall_time)
    writer.close()


def only_event_file(folder: Path) -> Path:
    (found,) = folder.glob("events.out.tfevents*")
    return found


def test_simple_value_scalars(tmp_path: Path) -> None:
    write_simple_value(
        tmp_path, {"loss": [(0, 2.0), (10, 1.5), (20, math.nan)], "lr": [(0, 0.1), (10, 0.05)]}
    )
    event_file = only_event_file(tmp_path)
    run = read_log(event_file)
    assert_well_formed(run)
    assert run.source_format == "tensorboard"
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [0, 10, 20]
    assert loss.values[:2].tolist() == [2.0, 1.5] and math.isnan(loss.values[2])
    assert run.metrics["lr"].values.tolist() == pytest.approx([0.1, 0.05])
    assert np.all(loss.wall_time > 1.0e9)  # wall time comes from the events


def test_tensor_scalars(tmp_path: Path) -> None:
    write_tensor_scalars(tmp_path, {"train/loss": [(1, 3.0), (2, 2.5)]}, wall_time=1.7e9)
    run = read_log(tmp_path)
    assert run.metrics["train/loss"].values.tolist() == [3.0, 2.5]
    assert run.metrics["train/loss"].wall_time.tolist() == [1.7e9, 1.7e9]


def test_histograms_are_not_scalars(tmp_path: Path) -> None:
    writer = tensorboardX.SummaryWriter(str(tmp_path))
    writer.add_histogram("weights", np.arange(10.0), 0)
    writer.add_text("note", "hello", 0)
    writer.add_scalar("loss", 1.0, 0)
    writer.close()
    run = read_log(tmp_path)
    assert sorted(run.metrics) == ["train/loss"]


def test_tf1_merged_summaries_with_histograms(tmp_path: Path) -> None:
    """TF1's `tf.summary.merge_all()` writes one event per step holding every summary:
    here tensorboardX's FileWriter writes such merged Summaries (three scalars and a
    histogram per event), and long tags (over 127 bytes: a two-byte length)."""
    from tensorboardX.proto.summary_pb2 import Summary
    from tensorboardX.summary import histogram

    long_tag = "deep/" + "x" * 140
    writer = tensorboardX.SummaryWriter(str(tmp_path))
    for step in range(1, 6):
        merged = Summary(
            value=[
                Summary.Value(tag="loss", simple_value=3.0 / step),
                Summary.Value(tag="lr", simple_value=0.1 * step),
                Summary.Value(tag=long_tag, simple_value=float(step)),
            ]
        )
        merged.value.extend(histogram("weights", np.arange(10.0) * step, bins="auto").value)
        writer.file_writer.add_summary(merged, step, walltime=1.7e9 + step)
    writer.close()
    run = read_log(tmp_path)
    assert_well_formed(run)
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [1, 2, 3, 4, 5]
    assert loss.values.tolist() == [float(np.float32(3.0 / s)) for s in range(1, 6)]
    assert loss.wall_time.tolist() == [1.7e9 + s for s in range(1, 6)]
    assert run.metrics["lr"].values.tolist() == [float(np.float32(0.1 * s)) for s in range(1, 6)]
    assert run.metrics[long_tag].values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert "weights" not in run.metrics


def write_tf2_scalars(folder: Path, points: dict[str, list[tuple[int, float]]]) -> None:
    """Events laid out exactly as TF2's `tf.summary.scalar` (and Keras' TensorBoard
    callback) writes them: TF's summary writer stores the value with
    `Tensor::AsProtoTensorContent` (dtype DT_FLOAT, an empty tensor_shape, four bytes of
    tensor_content) and the scalars plugin's metadata (`create_summary_metadata`, as
    tf.summary.scalar builds it) on every event. TensorFlow itself (~600 MB) is not a
    test dependency, so the events are built with TensorBoard's protobufs and written by
    TensorBoard's `EventFileWriter`."""
    from tensorboard.compat.proto import event_pb2, tensor_pb2
    from tensorboard.plugins.scalar import metadata as scalar_metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    plugin = scalar_metadata.create_summary_metadata(display_name=None, description="")
    writer = EventFileWriter(str(folder))
    for tag, series in points.items():
        for step, value in series:
            tensor = tensor_pb2.TensorProto(dtype=1, tensor_content=np.float32(value).tobytes())
            tensor.tensor_shape.SetInParent()
            event = event_pb2.Event(wall_time=1.7e9 + step, step=step)
            event.summary.value.add(tag=tag, tensor=tensor, metadata=plugin)
            writer.add_event(event)
    writer.close()


def test_tf2_tensor_scalars(tmp_path: Path) -> None:
    write_tf2_scalars(
        tmp_path / "train",
        {"epoch_loss": [(0, 1.5), (1, 0.75), (2, math.nan)], "epoch_learning_rate": [(0, 0.01)]},
    )
    run = read_log(tmp_path)
    assert_well_formed(run)
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [0, 1, 2]
    assert loss.values[:2].tolist() == [1.5, 0.75] and math.isnan(loss.values[2])
    assert run.metrics["lr"].values.tolist() == [float(np.float32(0.01))]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_torch_summary_writer_both_styles(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step in range(3):
        writer.add_scalar("Loss/train", 3.0 - step, step)
        writer.add_scalar("Loss/val", 4.0 - step, step, new_style=True)
    writer.close()
    run = read_log(tmp_path)
    assert run.metrics["train/loss"].values.tolist() == [3.0, 2.0, 1.0]
    assert run.metrics["eval/loss"].values.tolist() == [4.0, 3.0, 2.0]


def test_run_folders_are_prefixed(tmp_path: Path) -> None:
    write_simple_value(tmp_path / "Loss_train", {"Loss": [(0, 1.0)]})
    write_simple_value(tmp_path / "Loss_val", {"Loss": [(0, 2.0)]})
    write_simple_value(tmp_path, {"lr": [(0, 0.1)]})
    run = read_log(tmp_path)
    assert sorted(run.metrics) == ["Loss_train/Loss", "Loss_val/Loss", "lr"]
    assert len(run.meta["event_files"]) == 3


def test_keras_train_and_validation_folders(tmp_path: Path) -> None:
    write_tensor_scalars(tmp_path / "train", {"epoch_loss": [(0, 1.0), (1, 0.8)]})
    write_tensor_scalars(tmp_path / "train", {"epoch_learning_rate": [(0, 0.01), (1, 0.01)]})
    write_tensor_scalars(tmp_path / "validation", {"epoch_loss": [(0, 1.1), (1, 0.9)]})
    run = read_log(tmp_path)
    assert sorted(run.metrics) == ["eval/loss", "lr", "train/loss"]
    assert run.metrics["eval/loss"].values.tolist() == pytest.approx([1.1, 0.9])


def test_resumed_run_merges_event_files(tmp_path: Path) -> None:
    write_tensor_scalars(tmp_path, {"loss": [(0, 3.0), (1, 2.0), (2, 1.5)]}, wall_time=100.0)
    write_tensor_scalars(tmp_path, {"loss": [(2, 1.4), (3, 1.0)]}, wall_time=200.0)
    run = read_log(tmp_path)
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [0, 1, 2, 3]
    assert loss.values.tolist() == pytest.approx([3.0, 2.0, 1.4, 1.0])  # written last wins
    assert run.meta["duplicate_steps"] == {"train/loss": 1}
    assert "merged 2 event files" in run.notes()


def test_sniffed_by_record_framing_when_renamed(tmp_path: Path) -> None:
    write_simple_value(tmp_path, {"loss": [(0, 1.0)]})
    renamed = tmp_path / "renamed.bin"
    only_event_file(tmp_path).rename(renamed)
    reader, _ = detect_format(renamed, str(renamed))
    assert reader.name == "tensorboard"
    assert read_log(renamed).metrics["train/loss"].values.tolist() == [1.0]


def test_not_an_event_file(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.123.host"
    path.write_bytes(b"step,loss\n1,0.5\n")
    with pytest.raises(InputError) as caught:
        read_log(path)
    assert caught.value.problem == (
        "not a TensorBoard event file (no TFRecord framing at the start)"
    )


def test_truncated_event_file_keeps_what_was_written(tmp_path: Path) -> None:
    write_simple_value(tmp_path, {"loss": [(step, 1.0 / (step + 1)) for step in range(50)]})
    event_file = only_event_file(tmp_path)
    data = event_file.read_bytes()
    event_file.write_bytes(data[: len(data) - 7])
    run = read_log(event_file)
    assert 0 < len(run.metrics["train/loss"]) < 50


def test_without_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_simple_value(tmp_path, {"loss": [(0, 1.0)]})
    # The reader needs TensorBoard's protobuf classes (the extra), not tbparse.
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto", None)
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto.event_pb2", None)
    with pytest.raises(InputError) as caught:
        read_log(tmp_path)
    assert caught.value.problem == (
        "reading TensorBoard logs needs the extra: pip install 'trainspotter[tensorboard]'"
    )
