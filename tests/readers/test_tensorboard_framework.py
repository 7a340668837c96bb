"""A TensorBoard log's fixes name the framework that wrote it (issue 10 class 7).

The logs under tests/data/tb_writers/ were written by each library's own TensorBoard logger
in a real (tiny, seeded, CPU) run that diverges or starts without warmup, by the
`make_fixture.py` beside them: transformers' `TensorBoardCallback`, Lightning's
`TensorBoardLogger`, Keras's `TensorBoard` callback (TensorFlow's writer) and a plain
`torch.utils.tensorboard.SummaryWriter`. The counter-cases (marks a plain script could
leave) are written in the test by tensorboardX, a real writer too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainspotter.analysis import analyze
from trainspotter.detectors import idioms
from trainspotter.readers import read_log
from trainspotter.readers._event_writer import read_head

pytest.importorskip("tensorboard.compat.proto.event_pb2")
tensorboardX = pytest.importorskip("tensorboardX")

WRITERS = Path(__file__).resolve().parents[1] / "data" / "tb_writers"
HF_LOG = WRITERS / "hf" / "runs" / "tiny"
LIGHTNING_LOG = WRITERS / "lightning" / "lightning_logs" / "version_0"
KERAS_LOG = WRITERS / "keras" / "logs"
PYTORCH_LOG = WRITERS / "pytorch" / "run"

CLIPPING_WORDS = {
    "transformers": "TrainingArguments(max_grad_norm=1.0)",
    "lightning": "Trainer(gradient_clip_val=1.0)",
    "keras": "the optimizer's clipnorm=1.0",
    # A writer that leaves no mark of the loop (torch's SummaryWriter, tensorboardX, tf.summary)
    None: "(PyTorch: torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0) before "
    "optimizer.step(); Keras or TensorFlow: the optimizer's clipnorm=1.0)",
}
WARMUP_WORDS = {
    "transformers": "(TrainingArguments: warmup_ratio=0.03",
    "keras": "keras.optimizers.schedules.CosineDecay(warmup_target",
    None: "(PyTorch: torch.optim.lr_scheduler.LinearLR(start_factor=0.01",
}


def fixes(log: Path, words: str) -> list[str]:
    findings = analyze(read_log(log)).findings
    return [fix for finding in findings for fix in finding.fixes if words in fix]


@pytest.mark.parametrize(
    ("log", "framework"),
    [
        (HF_LOG, "transformers"),
        (LIGHTNING_LOG, "lightning"),
        (KERAS_LOG, "keras"),
        (PYTORCH_LOG, None),
    ],
)
def test_clipping_fix_in_the_words_of_the_writer(log: Path, framework: str | None) -> None:
    run = read_log(log)
    assert idioms.framework(run) == framework
    clipping = fixes(log, "clipping")
    assert clipping, "each fixture triggers a clipping fix"
    assert all(CLIPPING_WORDS[framework] in fix for fix in clipping)
    # The no-framework phrase names the PyTorch call and the Keras argument both.
    own = CLIPPING_WORDS[framework]
    others = [words for name, words in CLIPPING_WORDS.items() if name != framework]
    others = [words for words in others if words not in own]
    assert not any(words in fix for fix in clipping for words in others)


@pytest.mark.parametrize(
    ("log", "framework"), [(HF_LOG, "transformers"), (KERAS_LOG, "keras"), (PYTORCH_LOG, None)]
)
def test_warmup_fix_in_the_words_of_the_writer(log: Path, framework: str | None) -> None:
    warmup = fixes(log, "Add a linear warmup")
    assert warmup, "each of these fixtures starts at its full LR and is unstable at once"
    assert all(WARMUP_WORDS[framework] in fix for fix in warmup)


def test_the_evidence_is_recorded_and_plain_pytorch_records_none() -> None:
    assert "TrainingArguments" in read_log(HF_LOG).meta["framework_evidence"]
    assert "hparams.yaml" in read_log(LIGHTNING_LOG).meta["framework_evidence"]
    assert "graph_keras_model" in read_log(KERAS_LOG).meta["framework_evidence"]
    plain = read_log(PYTORCH_LOG).meta
    assert "framework" not in plain and "framework_evidence" not in plain


def test_keras_validation_folder_alone_is_known_by_its_layout() -> None:
    """The `validation/` file carries no model summary: TensorFlow's writer, the callback's
    folder and its `epoch_*` tags are the evidence."""
    (validation,) = (KERAS_LOG / "validation").glob("events.out.tfevents*")
    run = read_log(validation)
    assert run.meta["framework"] == "keras"
    assert "epoch_*" in run.meta["framework_evidence"]


def test_what_each_library_writes_first() -> None:
    """The marks the reader relies on, as the libraries wrote them."""
    (hf_file,) = HF_LOG.glob("events*")
    (torch_file,) = PYTORCH_LOG.glob("events*")
    (keras_train,) = (KERAS_LOG / "train").glob("events*")
    from tensorboard.compat.proto import event_pb2

    hf, torch, keras = (read_head(f, event_pb2.Event) for f in (hf_file, torch_file, keras_train))
    assert hf.training_arguments and not hf.keras_model
    assert torch.writer == hf.writer == "tensorboard.summary.writer.event_file_writer"
    assert not torch.training_arguments and not torch.keras_model
    assert keras.writer == "tensorflow.core.util.events_writer" and keras.keras_model


def write_tensorboardx(folder: Path, text: dict[str, str], scalars: dict[str, float]) -> None:
    writer = tensorboardX.SummaryWriter(str(folder))
    for tag, body in text.items():
        writer.add_text(tag, body)
    for step in range(3):
        for tag, value in scalars.items():
            writer.add_scalar(tag, value / (step + 1), step)
    writer.close()


def test_keras_layout_written_by_a_pytorch_writer_is_not_keras(tmp_path: Path) -> None:
    """`train/` and `validation/` with `epoch_loss` is only a name a PyTorch script can
    choose too; the writer must be TensorFlow's."""
    write_tensorboardx(tmp_path / "train", {}, {"epoch_loss": 1.0})
    write_tensorboardx(tmp_path / "validation", {}, {"epoch_loss": 1.2})
    assert idioms.framework(read_log(tmp_path)) is None


def test_an_args_text_that_is_not_training_arguments_is_not_transformers(tmp_path: Path) -> None:
    write_tensorboardx(tmp_path, {"args": json.dumps({"lr": 0.1, "batch_size": 8})}, {"loss": 1})
    write_tensorboardx(tmp_path / "other", {"args": "Namespace(lr=0.1)"}, {"loss": 1.0})
    assert "framework" not in read_log(tmp_path).meta


def test_hparams_yaml_beside_a_tensorflow_file_is_not_lightning(tmp_path: Path) -> None:
    (validation,) = (KERAS_LOG / "validation").glob("events.out.tfevents*")
    shutil.copy(validation, tmp_path / validation.name)
    (tmp_path / "hparams.yaml").write_text("lr: 0.1\n")
    assert "framework" not in read_log(tmp_path).meta


def test_logs_of_two_frameworks_read_together_name_neither(tmp_path: Path) -> None:
    shutil.copytree(HF_LOG, tmp_path / "hf")
    shutil.copytree(LIGHTNING_LOG, tmp_path / "lightning")
    run = read_log(tmp_path)
    assert "framework" not in run.meta
    assert idioms.framework(run) is None


def test_a_parent_folder_of_one_framework_keeps_it(tmp_path: Path) -> None:
    """A Lightning `lightning_logs/` with two versions, read from above: both say Lightning."""
    shutil.copytree(LIGHTNING_LOG, tmp_path / "version_0")
    shutil.copytree(LIGHTNING_LOG, tmp_path / "version_1")
    assert read_log(tmp_path).meta["framework"] == "lightning"


def test_a_head_cut_inside_the_args_summary_shows_nothing(tmp_path: Path) -> None:
    """A file cut short (a run killed while writing) is read as far as it goes, and an
    `args` summary that is not whole is no evidence."""
    (hf_file,) = HF_LOG.glob("events*")
    data = hf_file.read_bytes()
    (tmp_path / hf_file.name).write_bytes(data[: data.index(b"per_device_train_batch_size")])
    from tensorboard.compat.proto import event_pb2

    head = read_head(tmp_path / hf_file.name, event_pb2.Event)
    assert head.writer == "tensorboard.summary.writer.event_file_writer"
    assert not head.training_arguments


def test_watch_records_the_framework_too() -> None:
    """`watch` builds its Run through the same path: a followed Keras log speaks Keras."""
    from trainspotter.readers.base import ReadOptions
    from trainspotter.readers.tensorboard_events import READER

    tail = READER.open_tail(KERAS_LOG, "logs", ReadOptions())
    tail.poll(final=True)
    run = tail.run()
    assert run is not None and run.meta["framework"] == "keras"
