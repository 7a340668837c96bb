"""TensorBoard event files (`events.out.tfevents.*`): scalar summaries only.

Reads one event file, or a run folder searched recursively; several event files (a resumed
run, or TensorBoard run sub-folders) are merged by tag and step. Both scalar encodings are
read: PyTorch / tensorboardX write `simple_value` scalars, TF2 and `tensorboard.summary`
write rank-0 tensors tagged for the scalars plugin (tbparse returns them as "tensors"; only
numeric rank-0 ones are kept, so histograms, images and text are skipped). Wall time comes
from each event. Points are ordered by wall time before `Series.build`, so when a step was
logged twice the one written last wins; steps going backwards in time are counted in
`meta["backward_steps"]`.

Tag names: event files all in one folder keep their tags. With files in several folders,
a tag is prefixed with its folder relative to the folder read (`Loss_train/Loss` for
PyTorch's `add_scalars`, `run2/loss`), except files directly in that folder. Keras'
TensorBoard callback writes `train/` and `validation/` folders with `epoch_*` tags: those
become `train/<name>` and `validation/<name>` (so `epoch_loss` in `validation/` is
`validation/loss`, normalised to `eval/loss`).

tbparse (`SummaryReader(..., pivot=False)`) parses the events, as the project's issue asked:
it wraps TensorBoard's own event loader, so every protobuf variant the writers emit is
decoded by the reference code. It is an optional extra, imported inside `read`; without it
reading a TensorBoard log is an InputError that names the extra to install. Before handing a
file to it, the first record's TFRecord framing (length + masked CRC32C) is checked, so a
file that is not an event file is rejected clearly instead of being read as empty.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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
EVENT_TYPES = {"scalars", "tensors"}


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


def _as_scalar(value: Any) -> float | None:
    """A float from a tbparse value cell, or None for non-numeric / non-scalar tensors."""
    if isinstance(value, bool | str | bytes):
        return None
    if np.ndim(value) != 0:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def _scalar_frames(summary_reader: Any, file: Path) -> list[tuple[pd.DataFrame, bool]]:
    """tbparse's scalar and tensor frames for one event file, with a flag "are tensors".

    TensorBoard's loader only reads a file as events when its name says so; a renamed
    event file (accepted by the framing sniff) is read through a correctly named link.
    """
    with warnings.catch_warnings():
        # tbparse uses pandas APIs that pandas deprecates; that is not the user's concern.
        warnings.simplefilter("ignore")
        if file.name.startswith(EVENT_FILE_PREFIX):
            reader = summary_reader(
                str(file), pivot=False, extra_columns={"wall_time"}, event_types=EVENT_TYPES
            )
            return [(reader.scalars, False), (reader.tensors, True)]
        with tempfile.TemporaryDirectory() as folder:
            link = Path(folder) / f"{EVENT_FILE_PREFIX}.renamed"
            try:
                link.symlink_to(file.resolve())
            except OSError:
                shutil.copyfile(file, link)
            return _scalar_frames(summary_reader, link)


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

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = display_name(path, options.display_path)
        builder = RunBuilder(self.name, display)
        if path.is_dir():
            root, files = path, event_files(path)
            if not files:
                raise InputError(
                    display, f"no TensorBoard event files ({EVENT_FILE_PREFIX}.*) here"
                )
        else:
            root, files = path.parent, [path]
        readable = self._check_framing(files, root, display, builder)
        try:
            from tbparse import SummaryReader
        except ImportError:
            raise InputError(display, MISSING_EXTRA) from None

        prefix_folders = len({file.parent for file in readable}) > 1
        blocks: dict[str, list[tuple[IntArray, FloatArray, FloatArray]]] = {}
        for file in readable:
            try:
                frames = _scalar_frames(SummaryReader, file)
            except Exception as exc:  # tbparse/TensorBoard raise many types on damaged files
                relative = file.relative_to(root).as_posix()
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise InputError(
                    display, f"cannot read TensorBoard events in {relative}: {reason}"
                ) from None
            for frame, are_tensors in frames:
                if frame.empty or "tag" not in frame.columns:
                    continue
                for tag, group in frame.groupby("tag", sort=False):
                    steps = group["step"].to_numpy(dtype=np.int64)
                    wall = group["wall_time"].to_numpy(dtype=np.float64)
                    if are_tensors:
                        scalars = [_as_scalar(value) for value in group["value"]]
                        keep = np.array([v is not None for v in scalars], dtype=bool)
                        if not keep.any():
                            continue
                        values = np.array([v for v in scalars if v is not None], dtype=np.float64)
                        steps, wall = steps[keep], wall[keep]
                    else:
                        values = group["value"].to_numpy(dtype=np.float64)
                    raw = metric_name(str(tag), file, root, prefix_folders)
                    blocks.setdefault(raw, []).append((steps, values, wall))

        builder.meta["event_files"] = [file.relative_to(root).as_posix() for file in readable]
        if len(readable) > 1:
            builder.note(f"merged {len(readable)} event files")
        if not blocks:
            builder.note("no scalar summaries in the event files (histograms/images only?)")
        for raw, parts in blocks.items():
            steps = np.concatenate([part[0] for part in parts])
            values = np.concatenate([part[1] for part in parts])
            wall = np.concatenate([part[2] for part in parts])
            order = np.argsort(wall, kind="stable")  # by wall time: the last written wins
            builder.add(
                Column(
                    raw_name=raw,
                    name=canonical_name(raw, options.aliases),
                    steps=steps[order],
                    values=values[order],
                    wall_time=wall[order],
                )
            )
        return builder.build()

    def _check_framing(
        self, files: list[Path], root: Path, display: str, builder: RunBuilder
    ) -> list[Path]:
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
            raise InputError(
                display, "not a TensorBoard event file (no TFRecord framing at the start)"
            )
        if broken:
            builder.note(f"skipped files that are not event files: {list_names(broken)}")
        if not readable:
            raise InputError(display, "the event files are empty")
        return readable


READER = TensorBoardReader()
