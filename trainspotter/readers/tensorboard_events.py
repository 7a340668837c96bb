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

Who wrote the log (`_event_writer.py`, whose docstring details each rule and its
false-positive modes): only marks the framework's own logger leaves in the files and folder
read, never metric names: transformers' `TensorBoardCallback` by the `args` text summary
holding TrainingArguments JSON, Keras's callback by TensorFlow's writer (the first event's
`source_metadata.writer`, or a `.v2` file name) with its model summary or its `train/` /
`validation/` `epoch_*` layout, Lightning's `TensorBoardLogger` by the `hparams.yaml`
beside a non-TensorFlow event file. One framework shown by the files (and none contradicting
it) goes to `meta["framework"]` with `meta["framework_evidence"]`; fixes then use its words.
A plain script that saves its own `hparams.yaml` or an `args` summary of TrainingArguments
is taken for Lightning or transformers; a plain TensorFlow loop logging `epoch_*` into
`train/` for Keras.

How: the TFRecord framing is read directly (uint64 length, masked CRC32C of the length,
payload, masked CRC32C of the payload) and the scalar events of every layout the writers
use (one `simple_value` per event as PyTorch and tensorboardX write it, several values per
event as TF1 merged summaries do, TF2 `tf.summary.scalar` tensors with their metadata) are
decoded for a whole buffer at once by record layout (`_event_wire.py`): the records of
one shape differ only in their wall time, step and float bytes, so one record per shape is
parsed with TensorBoard's own protobuf class (`tensorboard.compat.proto.event_pb2.Event`,
upb-backed) and its layout proved (`_event_layout.py`), and the rest are read as numpy
columns; every other record is parsed with the protobuf class, and property tests check
the two paths agree. Measured on a million steps x 3 tags (benchmarks/README.md): see the
table there per layout, against 65 s and 995 MB for tbparse (which the first version used:
it builds pandas frames through TensorBoard's `EventAccumulator`) and ~10 s for `event_pb2`
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

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._event_scan import EventFileScanner, TagPoints
from trainspotter.readers._event_writer import KERAS_FOLDERS, KERAS_TAG_PREFIX, record_writer
from trainspotter.readers._tabular import Column, RunBuilder, canonical_name, list_names
from trainspotter.readers._tfrecord import has_record_framing, read_header
from trainspotter.readers.base import FollowedLog, Growth, Reader, ReadOptions, Tail
from trainspotter.readers.incremental import Follower

EVENT_FILE_PREFIX = "events.out.tfevents"
MISSING_EXTRA = "reading TensorBoard logs needs the extra: pip install 'trainspotter[tensorboard]'"
SCORE_FILE_NAME = 100
SCORE_FRAMING = 90


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
    record_writer(builder.meta, [(item.path, item.scanner.tags) for item in scanned])
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


class TensorBoardReader(Reader):
    """TensorBoard event files (see the module docstring)."""

    name = "tensorboard"
    description = "TensorBoard event files (events.out.tfevents.*) or a run folder"
    follows_folder = True  # a run folder gains event files (a resumed run): watch reads them

    def sniff(self, path: Path, head: str) -> int:
        if path.name.startswith(EVENT_FILE_PREFIX):
            return SCORE_FILE_NAME
        return SCORE_FRAMING if has_record_framing(read_header(path)) else 0

    def find_in_folder(self, folder: Path) -> Path | None:
        return folder if event_files(folder) else None

    def log_root(self, file: Path) -> Path | None:
        """An event file stands for its run folder (Keras `train/` and `validation/`
        sub-folders for the folder above), so a run is read once, whole."""
        if not file.name.startswith(EVENT_FILE_PREFIX):
            return None
        folder = file.parent
        return folder.parent if folder.name in KERAS_FOLDERS else folder

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        return TensorBoardTail(self, target, display, options)

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
        display = options.display_for(path)
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
        header = read_header(file)
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


@dataclass
class _EventFile:
    scanner: EventFileScanner
    follower: Follower


@dataclass(eq=False)
class TensorBoardTail(FollowedLog[TensorBoardReader]):
    """A growing TensorBoard event file, or a run folder whose files grow and multiply
    (see `readers/incremental.py`)."""

    _event_class: Any = field(init=False)
    _files: dict[Path, _EventFile] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._event_class = load_event_class(self.display)  # the missing extra: at open

    def _scanner(self) -> EventFileScanner:
        scanner = EventFileScanner(self._event_class)
        scanner.keep_fresh = True
        return scanner

    def poll(self, final: bool = False) -> Growth:
        growth = Growth()
        try:
            root, files = self.reader.files(self.target, self.display)
        except InputError:
            if final and not self._files:
                raise
            return growth
        for file in files:
            state = self._files.get(file)
            if state is None:
                state = self._files[file] = _EventFile(self._scanner(), Follower(file))
            data, replaced = state.follower.read()
            if replaced:
                state.scanner = self._scanner()
                growth.restarted = True
            if state.scanner.damaged_at is not None:
                continue
            before = state.scanner.records
            used = state.scanner.feed_bounded(data)
            state.follower.keep(data, used)
            growth.points += state.scanner.records - before
        prefix = len({file.parent for file in self._files}) > 1
        for file, state in self._files.items():
            for tag, steps, values in state.scanner.fresh:
                raw = metric_name(tag, file, root, prefix)
                name = canonical_name(raw, self.options.aliases)
                previous = growth.fresh.get(name)
                growth.fresh[name] = (
                    values if previous is None else np.concatenate([previous, values])
                )
                if steps.shape[0]:
                    growth.last_step = int(steps[-1])
            state.scanner.fresh.clear()
        self.points = sum(state.scanner.records for state in self._files.values())
        return growth

    def run(self) -> Run | None:
        if not self._files:
            return None
        root, files = self.reader.files(self.target, self.display)
        builder = RunBuilder(self.reader.name, self.display)
        readable = check_framing(files, root, self.display, builder)
        scanned = [
            ScannedFile(file, self._files[file].scanner, len(self._files[file].follower.buffer))
            for file in readable
            if file in self._files
        ]
        return build_run(scanned, root, builder, self.options)


READER = TensorBoardReader()
