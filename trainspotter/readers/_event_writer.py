"""Who wrote a TensorBoard log: the framework its own files show, for fixes in its words.

An event file says nothing about the training framework in a field of its own, but each
framework's TensorBoard logger leaves marks in the files and folder it writes. Only those
marks are used (checked against what each library's logger writes, see
tests/data/tb_writers/), never metric names an ordinary PyTorch loop could also log
(`train/loss`, `epoch`, `hp_metric`):

- **transformers** (`TensorBoardCallback`, `report_to="tensorboard"`): at train start the
  callback writes the TrainingArguments as a JSON text summary tagged `args`
  (`args/text_summary` once written). Evidence: such a text summary among the file's first
  records whose JSON object has TrainingArguments' keys `output_dir`,
  `per_device_train_batch_size` and `max_grad_norm`.
- **keras** (`keras.callbacks.TensorBoard`): TensorFlow's summary writer (first event's
  `source_metadata.writer` is `tensorflow.core.util.events_writer`, or, from TF versions
  that predate that field, a file name ending `.v2`) writing either the callback's model
  summary (a `graph_keras_model` plugin summary, written with `write_graph=True`, the
  default) or `epoch_*` tags in a `train/` or `validation/` folder, the callback's layout.
- **lightning** (`TensorBoardLogger`): the `hparams.yaml` the logger saves next to its
  event file in `version_N/` (written at the first metrics flush, even with no
  hyperparameters), in a file TensorFlow did not write.

The verdict goes to `meta["framework"]` (which `detectors/idioms.py` reads) with the
evidence in `meta["framework_evidence"]`, only when every file that shows evidence points
to the same framework; files showing none (Keras's `validation/` folder without epoch tags,
a plain `SummaryWriter`) do not veto. With no evidence nothing is recorded and fixes name the
PyTorch call and the Keras/TensorFlow argument side by side.

False-positive modes: a plain PyTorch script that saves its own `hparams.yaml` next to its
event file is taken for Lightning (as is a framework built on Lightning, e.g. NeMo, whose
Trainer arguments are Lightning's); a script that writes a text summary `args` holding
a TrainingArguments-like JSON (a custom loop reusing `TrainingArguments`) is taken for
transformers; a plain TensorFlow loop that logs `epoch_*` tags into `train/` is taken for
Keras (whose optimizer's `clipnorm` is also what a TensorFlow user sets). False negatives:
a Lightning run killed before its first metrics flush (no `hparams.yaml` yet), a
transformers run whose `args` summary is beyond the first `HEAD_RECORDS` records (a
writer passed in that was used before), Keras files written by a TensorFlow too old to
record its writer and named without `.v2`.

The head of each file (its first `HEAD_RECORDS` records) is read again at each analysis,
record by record: well under a millisecond a file, cheap beside the scan of the whole file,
and it keeps `watch` free of extra state.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainspotter.readers._tfrecord import FRAMING_HEADER_BYTES, has_record_framing

KERAS_FOLDERS = ("train", "validation")
"""The run folders `keras.callbacks.TensorBoard` writes under its `log_dir`."""
KERAS_TAG_PREFIX = "epoch_"
"""The prefix of the callback's per-epoch tags (`epoch_loss`, `epoch_learning_rate`)."""
TF_WRITER = "tensorflow.core.util.events_writer"
"""`source_metadata.writer` of TensorFlow's event writer (torch's SummaryWriter writes
`tensorboard.summary.writer.event_file_writer`)."""
TF2_FILE_SUFFIX = ".v2"
KERAS_MODEL_PLUGIN = "graph_keras_model"
TEXT_PLUGIN = "text"
HF_ARGS_TAGS = frozenset({"args", "args/text_summary"})
TRAINING_ARGUMENTS_KEYS = frozenset({"output_dir", "per_device_train_batch_size", "max_grad_norm"})
LIGHTNING_HPARAMS_FILE = "hparams.yaml"
HEAD_RECORD_BYTES = 1 << 20
"""The largest head record read (an `args` JSON is a few KB, a Keras model summary can be
hundreds); a larger one ends the head."""
PAYLOAD_CRC_BYTES = 4
HEAD_RECORDS = 32
"""Records of the head looked at: the callbacks write their marks before any metric."""
MAX_TEXT_BYTES = 1 << 18


@dataclass(frozen=True)
class FileHead:
    """What the first records of one event file show about its writer."""

    writer: str = ""
    """The first event's `source_metadata.writer` ("" when it has none)."""
    training_arguments: bool = False
    """A text summary `args` holding transformers' TrainingArguments as JSON."""
    keras_model: bool = False
    """A `graph_keras_model` summary (the Keras callback's model config)."""


def is_training_arguments(text: bytes) -> bool:
    """True for the JSON of transformers' TrainingArguments (`args.to_json_string()`)."""
    if len(text) > MAX_TEXT_BYTES:
        return False
    try:
        parsed = json.loads(text)
    except ValueError:  # not JSON, or not UTF-8
        return False
    return isinstance(parsed, dict) and parsed.keys() >= TRAINING_ARGUMENTS_KEYS


def head_payloads(path: Path) -> list[bytes]:
    """The payloads of the first `HEAD_RECORDS` records of `path`, read record by record
    (a few small reads, however large the file), up to the first one that is badly
    framed, larger than `HEAD_RECORD_BYTES` or incomplete."""
    payloads: list[bytes] = []
    try:
        with path.open("rb") as handle:
            while len(payloads) < HEAD_RECORDS:
                header = handle.read(FRAMING_HEADER_BYTES)
                if not has_record_framing(header):
                    break
                length = int.from_bytes(header[:8], "little")
                if length > HEAD_RECORD_BYTES:
                    break
                payload = handle.read(length)
                # The payload CRC is not checked, as in the scan: a damaged one fails to parse.
                if len(payload) < length or len(handle.read(PAYLOAD_CRC_BYTES)) < PAYLOAD_CRC_BYTES:
                    break
                payloads.append(payload)
    except OSError:
        pass
    return payloads


def read_head(path: Path, event_class: Any) -> FileHead:
    """The writer marks in the first `HEAD_RECORDS` records of `path` (an unreadable or
    damaged head shows none; the scan of the file reports the damage)."""
    event = event_class()
    writer = ""
    training_arguments = keras_model = False
    for index, payload in enumerate(head_payloads(path)):
        try:
            event.ParseFromString(payload)
        except Exception:  # google.protobuf.message.DecodeError
            break
        if index == 0 and event.HasField("source_metadata"):
            writer = str(event.source_metadata.writer)
        for value in event.summary.value:
            plugin = value.metadata.plugin_data.plugin_name if value.HasField("metadata") else ""
            if plugin == KERAS_MODEL_PLUGIN:
                keras_model = True
            elif (
                plugin == TEXT_PLUGIN
                and value.tag in HF_ARGS_TAGS
                and len(value.tensor.string_val) == 1
                and is_training_arguments(value.tensor.string_val[0])
            ):
                training_arguments = True
    return FileHead(writer, training_arguments, keras_model)


def written_by_tensorflow(path: Path, head: FileHead) -> bool:
    return head.writer == TF_WRITER or path.name.endswith(TF2_FILE_SUFFIX)


def file_framework(path: Path, tags: Iterable[str], head: FileHead) -> tuple[str, str] | None:
    """The framework one event file shows and why (see the module docstring), or None."""
    if head.training_arguments:
        return (
            "transformers",
            "a text summary 'args' holding TrainingArguments (TensorBoardCallback)",
        )
    if written_by_tensorflow(path, head):
        if head.keras_model:
            return "keras", "the Keras TensorBoard callback's model summary (graph_keras_model)"
        if path.parent.name in KERAS_FOLDERS and any(
            tag.startswith(KERAS_TAG_PREFIX) for tag in tags
        ):
            return "keras", (
                "epoch_* tags written by TensorFlow in train/ or validation/ "
                "(the Keras TensorBoard callback's layout)"
            )
        return None
    if (path.parent / LIGHTNING_HPARAMS_FILE).is_file():
        return "lightning", "hparams.yaml beside the event file (Lightning's TensorBoardLogger)"
    return None


def record_writer(meta: dict[str, Any], files: Sequence[tuple[Path, Iterable[str]]]) -> None:
    """Set `meta["framework"]` and `meta["framework_evidence"]` when the event files (each
    with its raw tags) show one framework and no file shows another."""
    # Only called once the files were scanned, so TensorBoard (the optional extra) is there.
    from tensorboard.compat.proto import event_pb2

    event_class = event_pb2.Event
    found: dict[str, str] = {}
    for path, tags in files:
        verdict = file_framework(path, tags, read_head(path, event_class))
        if verdict is not None:
            found.setdefault(verdict[0], verdict[1])
    if len(found) == 1:
        ((framework, evidence),) = found.items()
        meta["framework"] = framework
        meta["framework_evidence"] = evidence


__all__ = ["KERAS_FOLDERS", "KERAS_TAG_PREFIX", "FileHead", "read_head", "record_writer"]
