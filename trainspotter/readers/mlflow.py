"""MLflow's file store (`mlruns/`), read without importing mlflow.

The layout MLflow's `FileStore` writes::

    mlruns/<experiment_id>/meta.yaml                      experiment name
    mlruns/<experiment_id>/<run_id>/meta.yaml             run name, status, lifecycle
    mlruns/<experiment_id>/<run_id>/metrics/<name>        one line per logged value
    mlruns/<experiment_id>/<run_id>/metrics/train/loss    a name with `/` is a folder

Each metric line is `<timestamp ms> <value> <step>` (very old stores wrote no step: 0 is
used, as MLflow itself does). `nan`, `inf` and `-inf` are values and kept. The timestamp
becomes the point's wall time. Lines are in the order MLflow appended them, so a step
logged twice keeps the value written last (the shared last-write-wins rule of
`Series.build`, counted in `meta["duplicate_steps"]`), whatever the timestamps say; lines
whose timestamp is older than the line before are counted in
`meta["timestamps_backwards"]`. A line that is not three numbers is skipped and counted in
`meta["skipped_lines"]`.

What a path may name: a run folder (`<run_id>/`, holding `metrics/` and `meta.yaml`); an
experiment folder; the whole store (`mlruns/`, or a folder holding one); or a single
metric file (its name is its path under `metrics/`). In an experiment or a store, a single
active run is read (with a note); with several, `--run` picks one by run name or run id
(or a unique id prefix), and without it the error lists the runs. Runs in the trash
(`lifecycle_stage: deleted`, `.trash/`) are not offered. `meta.yaml` is read with PyYAML
(already a dependency); params and tags are not read, except the run name tag
`mlflow.runName` when `meta.yaml` has no `run_name`. `watch` follows a run as it is
logged to (`MlflowTail`): each metric file's new lines, and new metric files.
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers._files import read_text_lines
from trainspotter.readers._records import parse_number_text
from trainspotter.readers._tabular import (
    Column,
    RunBuilder,
    canonical_name,
    list_names,
)
from trainspotter.readers.base import FollowedLog, Growth, Reader, ReadOptions, Tail
from trainspotter.readers.incremental import TextFollower

META_FILE = "meta.yaml"
METRICS_FOLDER = "metrics"
STORE_FOLDER = "mlruns"
RUN_NAME_TAG = Path("tags") / "mlflow.runName"
SCORE_METRIC_FILE = 85
SNIFF_LINES = 50
_METRIC_LINE = re.compile(r"^\d{9,16} \S+( -?\d+)?$")
_STEP_LIMIT = 2**62
_MAX_META_BYTES = 1 << 20


@dataclass(frozen=True)
class RunFolder:
    """One run found in a store."""

    path: Path
    run_id: str
    run_name: str
    experiment: str

    def label(self) -> str:
        return f"{self.run_name} ({self.run_id[:8]})" if self.run_name else self.run_id


def _meta(folder: Path) -> dict[str, Any]:
    """`meta.yaml` as a dict; {} when it is missing, too big or not a YAML mapping."""
    path = folder / META_FILE
    try:
        if not path.is_file() or path.stat().st_size > _MAX_META_BYTES:
            return {}
        loaded = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError, RecursionError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def is_run_folder(folder: Path) -> bool:
    return (folder / METRICS_FOLDER).is_dir() and (folder / META_FILE).is_file()


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(
            child for child in folder.iterdir() if child.is_dir() and not child.name.startswith(".")
        )
    except OSError:
        return []


def is_experiment_folder(folder: Path) -> bool:
    return (folder / META_FILE).is_file() and any(is_run_folder(c) for c in _children(folder))


def _store_root(folder: Path) -> Path | None:
    """The store `folder` is, or holds as `mlruns/`; None if neither."""
    for candidate in (folder, folder / STORE_FOLDER):
        if candidate.is_dir() and any(is_experiment_folder(c) for c in _children(candidate)):
            return candidate
    return None


def _run_entry(path: Path, experiment: str) -> RunFolder | None:
    """The run at `path`, or None when it is in the trash."""
    meta = _meta(path)
    if str(meta.get("lifecycle_stage", "active")) == "deleted":
        return None
    name = meta.get("run_name")
    if not isinstance(name, str) or not name:
        try:
            name = (path / RUN_NAME_TAG).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            name = ""
    run_id = meta.get("run_id") or meta.get("run_uuid") or path.name
    return RunFolder(path, str(run_id), name, experiment)


def _experiment_runs(folder: Path) -> list[RunFolder]:
    experiment = _meta(folder).get("name")
    label = str(experiment) if experiment else folder.name
    found = (_run_entry(c, label) for c in _children(folder) if is_run_folder(c))
    return [run for run in found if run is not None]


def _runs_under(folder: Path) -> list[RunFolder] | None:
    """Every active run in an experiment folder or store; None if `folder` is neither."""
    if is_experiment_folder(folder):
        return _experiment_runs(folder)
    root = _store_root(folder)
    if root is None:
        return None
    return [run for c in _children(root) if is_experiment_folder(c) for run in _experiment_runs(c)]


def choose_run(runs: list[RunFolder], wanted: str | None, display: str) -> RunFolder:
    """The run `--run` names (name, id or unique id prefix), or the only one."""
    labels = list_names([run.label() for run in runs])
    if not runs:
        raise InputError(display, "MLflow store holds no active run")
    if wanted is None:
        if len(runs) == 1:
            return runs[0]
        raise InputError(
            display, f"{len(runs)} MLflow runs here: {labels}; choose one with --run NAME"
        )
    for matches in (
        [run for run in runs if wanted in (run.run_name, run.run_id)],
        [run for run in runs if run.run_id.startswith(wanted)],
    ):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InputError(
                display,
                f"--run {wanted!r} matches {len(matches)} runs: "
                f"{list_names([r.label() for r in matches])}; give the run id",
            )
    raise InputError(display, f"no MLflow run {wanted!r} here (runs: {labels})")


class MetricFile:
    """One metric file's points in file order, parsed line by line."""

    def __init__(self) -> None:
        self.steps: array[int] = array("q")
        self.values: array[float] = array("d")
        self.wall: array[float] = array("d")
        self.skipped = 0
        self.first_skipped: int | None = None
        self.backwards = 0
        self._line = 0
        self._last_time = -math.inf

    def add(self, lines: list[str]) -> None:
        for line in lines:
            self._line += 1
            if not line.strip():
                continue
            parsed = _parse_line(line)
            if parsed is None:
                self.skipped += 1
                if self.first_skipped is None:
                    self.first_skipped = self._line
                continue
            timestamp, value, step = parsed
            if timestamp < self._last_time:
                self.backwards += 1
            self._last_time = timestamp
            self.steps.append(step)
            self.values.append(value)
            self.wall.append(timestamp / 1000.0)


def _parse_line(line: str) -> tuple[float, float, int] | None:
    parts = line.split()
    if len(parts) not in (2, 3):
        return None
    try:
        timestamp = int(parts[0])
        step = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        return None
    value = parse_number_text(parts[1])
    if value is None or abs(step) > _STEP_LIMIT or not 0 <= timestamp < 2**53:
        return None
    return float(timestamp), value, step


def read_metric_file(path: Path, display: str) -> MetricFile:
    metric = MetricFile()
    for lines in read_text_lines(path, display):
        metric.add(lines)
    return metric


def _metric_files(metrics: Path) -> list[tuple[str, Path]]:
    """(name, file) for every metric under `metrics/`, nested folders joined with `/`."""
    found = [
        (path.relative_to(metrics).as_posix(), path)
        for path in metrics.rglob("*")
        if path.is_file() and not path.name.startswith(".")
    ]
    return sorted(found)


def _metric_name(file: Path) -> str:
    """A lone metric file's name: its path under the nearest `metrics/` folder."""
    for parent in file.parents:
        if parent.name == METRICS_FOLDER:
            return file.relative_to(parent).as_posix()
    return file.name


def build_run(
    metrics: list[tuple[str, MetricFile | InputError]],
    builder: RunBuilder,
    options: ReadOptions,
) -> Run:
    """The Run from a run's metric files, read (or the error that stopped one)."""
    skipped: dict[str, int] = {}
    backwards = 0
    for name, metric in metrics:
        if isinstance(metric, InputError):
            skipped[name] = 1
            builder.note(f"metric {name!r} not read: {metric.problem}")
            continue
        backwards += metric.backwards
        if metric.skipped:
            skipped[name] = metric.skipped
        builder.add(
            Column(
                raw_name=name,
                name=canonical_name(name, options.aliases),
                steps=np.frombuffer(metric.steps, dtype=np.int64).copy(),
                values=np.frombuffer(metric.values, dtype=np.float64).copy(),
                wall_time=np.frombuffer(metric.wall, dtype=np.float64).copy(),
            )
        )
    builder.meta["skipped_lines"] = sum(skipped.values())
    builder.meta["timestamps_backwards"] = backwards
    if skipped:
        builder.note(
            f"skipped metric lines that are not '<timestamp> <value> <step>': {list_names(skipped)}"
        )
    if backwards:
        builder.note(
            f"{backwards} metric line(s) carry an older timestamp than the line before "
            "(values appended out of order): file order decides, the last write wins"
        )
    if not metrics:
        builder.note("the run's metrics/ folder is empty: nothing was logged")
    return builder.build()


def _read_metric(path: Path, display: str) -> MetricFile | InputError:
    try:
        return read_metric_file(path, display)
    except InputError as exc:
        return exc


class MlflowReader(Reader):
    """MLflow file store (see the module docstring)."""

    name = "mlflow"
    description = "MLflow file store: mlruns/, an experiment or run folder, or a metric file"
    follows_folder = True  # a run gains metric files as new metrics are logged

    def sniff(self, path: Path, head: str) -> int:
        lines = [line.strip() for line in head.split("\n")[:SNIFF_LINES] if line.strip()]
        if len(head.split("\n")) > SNIFF_LINES:
            lines = lines[:-1]  # the head's last line may be cut
        if lines and all(_METRIC_LINE.match(line) for line in lines):
            return SCORE_METRIC_FILE
        return 0

    def find_in_folder(self, folder: Path) -> Path | None:
        if is_run_folder(folder) or is_experiment_folder(folder):
            return folder
        return folder if _store_root(folder) is not None else None

    def read(self, path: Path, options: ReadOptions) -> Run:
        display = options.display_for(path)
        builder, files = self.resolve(path, display, options)
        metrics = [(name, _read_metric(file, display)) for name, file in files]
        return build_run(metrics, builder, options)

    def resolve(
        self, path: Path, display: str, options: ReadOptions
    ) -> tuple[RunBuilder, list[tuple[str, Path]]]:
        """The run `path` names (notes and meta in a builder) and its metric files."""
        builder = RunBuilder(self.name, display)
        if path.is_file():
            name = _metric_name(path)
            builder.meta["metric_file"] = name
            return builder, [(name, path)]
        if is_run_folder(path):
            chosen = _run_entry(path, _meta(path.parent).get("name") or path.parent.name)
            if chosen is None:
                builder.note("this run is in the trash (lifecycle_stage: deleted)")
                chosen = RunFolder(path, path.name, str(_meta(path).get("run_name", "")), "")
        else:
            runs = _runs_under(path)
            if runs is None:
                raise InputError(display, "not an MLflow store, experiment or run folder")
            chosen = choose_run(runs, options.run_name, display)
            relative = chosen.path.relative_to(path).as_posix()
            builder.note(
                f"read MLflow run {chosen.label()} at {relative}"
                + (f", one of {len(runs)} runs" if len(runs) > 1 else "")
            )
        builder.meta.update(
            run_id=chosen.run_id, run_name=chosen.run_name, experiment=str(chosen.experiment)
        )
        return builder, _metric_files(chosen.path / METRICS_FOLDER)

    def open_tail(self, target: Path, display: str, options: ReadOptions) -> Tail:
        return MlflowTail(self, target, display, options)


class _FollowedMetric:
    def __init__(self, path: Path, display: str) -> None:
        self.text = TextFollower(path, display)
        self.metric = MetricFile()
        self.error: InputError | None = None


@dataclass(eq=False)
class MlflowTail(FollowedLog[MlflowReader]):
    """An MLflow run being logged to: its metric files grow and new ones appear (see
    `readers/incremental.py`)."""

    _builder: RunBuilder | None = field(default=None, init=False)
    _metrics: dict[Path, tuple[str, _FollowedMetric]] = field(default_factory=dict, init=False)

    def poll(self, final: bool = False) -> Growth:
        growth = Growth()
        try:
            builder, files = self.reader.resolve(self.target, self.display, self.options)
        except InputError:
            if final and self._builder is None:
                raise
            return growth  # no run yet (or not yet chosen): wait
        if self._builder is not None and builder.meta != self._builder.meta:
            self._metrics = {}  # another run is read now
            growth.restarted = True
        self._builder = builder
        for name, path in files:
            known = self._metrics.get(path)
            if known is None:
                known = self._metrics[path] = (name, _FollowedMetric(path, self.display))
            followed = known[1]
            try:
                lines, replaced = followed.text.read_lines(final)
            except InputError as exc:
                followed.error = exc
                continue
            if replaced:
                followed.metric = MetricFile()
                growth.restarted = True
            before = len(followed.metric.values)
            followed.metric.add(lines)
            added = len(followed.metric.values) - before
            if added:
                growth.points += added
                fresh = np.frombuffer(followed.metric.values, dtype=np.float64)[before:].copy()
                growth.fresh[canonical_name(name, self.options.aliases)] = fresh
                growth.last_step = int(followed.metric.steps[-1])
        self.points = sum(len(f.metric.values) for _, f in self._metrics.values())
        return growth

    def run(self) -> Run | None:
        if self._builder is None:
            return None
        builder, files = self.reader.resolve(self.target, self.display, self.options)
        metrics: list[tuple[str, MetricFile | InputError]] = []
        for name, path in files:
            known = self._metrics.get(path)
            if known is None:
                continue  # appeared since the last poll: read at the next one
            followed = known[1]
            follower = followed.text.follower
            if followed.error is None and not follower.consumed and not follower.buffer:
                metrics.append((name, InputError(self.display, "file is empty")))  # as read
            else:
                metrics.append((name, followed.error or followed.metric))
        return build_run(metrics, builder, self.options)


READER = MlflowReader()
