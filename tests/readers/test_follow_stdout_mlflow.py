"""`watch` follows printed training output and MLflow runs as they grow: the real captured
logs (tests/data/stdout, written by real training loops; tests/data/mlflow, written by
the mlflow client) are rewritten piece by piece while a tail (or a `Watcher`) polls, and
after the final poll the Run is exactly the one `read_log` gives for the whole log."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_incremental import assert_same_run, grow, random_cuts, tail_for

from trainspotter.config import load_config
from trainspotter.readers import ReadOptions, read_log
from trainspotter.watch import Watcher, WatchOptions

DATA = Path(__file__).resolve().parents[1] / "data"
STDOUT_LOGS = sorted((DATA / "stdout").glob("*.log"))
MLRUNS = DATA / "mlflow" / "mlruns"
RUN = MLRUNS / "558886241824126099" / "7066e4eced984884a03fd58f00cb936e"


@pytest.mark.parametrize("log", STDOUT_LOGS, ids=[p.stem for p in STDOUT_LOGS])
def test_printed_log_in_pieces(tmp_path: Path, log: Path) -> None:
    source = log.read_bytes()
    target = tmp_path / log.name
    for seed in range(3):
        tail = grow(source, target, random_cuts(len(source), 12, seed), as_format=log)
        assert_same_run(tail.run(), read_log(target, options=ReadOptions(display_path=str(target))))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), pieces=st.integers(1, 40))
def test_printed_log_cut_anywhere(
    tmp_path_factory: pytest.TempPathFactory, seed: int, pieces: int
) -> None:
    """Property: cut at any bytes (mid-line, mid-UTF-8, between "\\r" refreshes)."""
    log = STDOUT_LOGS[seed % len(STDOUT_LOGS)]
    source = log.read_bytes()
    target = tmp_path_factory.mktemp("cut") / log.name
    tail = grow(source, target, random_cuts(len(source), pieces, seed), as_format=log)
    assert_same_run(tail.run(), read_log(target, options=ReadOptions(display_path=str(target))))


def test_poll_reports_the_new_points_and_step(tmp_path: Path) -> None:
    lines = (DATA / "stdout" / "nanogpt.log").read_bytes().splitlines(keepends=True)
    target = tmp_path / "train.log"
    target.write_bytes(b"".join(lines[:10]))
    tail = tail_for(DATA / "stdout" / "nanogpt.log", str(target))
    tail = tail_for(target)
    first = tail.poll()
    target.write_bytes(b"".join(lines[:20]))
    growth = tail.poll()
    assert first.points > 0 and growth.points > 0
    assert growth.last_step is not None and growth.last_step > 0
    assert "train/loss" in growth.fresh


def regrow_run(run: Path, target: Path, fraction: float) -> None:
    """`target` holds the first `fraction` of each of `run`'s metric files' lines (a
    metric whose share is empty is not there yet: logged for the first time later)."""
    if not target.exists():
        shutil.copytree(run, target, ignore=shutil.ignore_patterns("metrics"))
    for source in sorted((run / "metrics").rglob("*")):
        if not source.is_file():
            continue
        lines = source.read_bytes().splitlines(keepends=True)
        keep = lines[: int(len(lines) * fraction)]
        written = target / "metrics" / source.relative_to(run / "metrics")
        if keep:
            written.parent.mkdir(parents=True, exist_ok=True)
            written.write_bytes(b"".join(keep))


@pytest.mark.parametrize("where", ["run", "store"])
def test_mlflow_run_grows_and_gains_metrics(tmp_path: Path, where: str) -> None:
    store = tmp_path / "mlruns"
    experiment = store / RUN.parent.name
    experiment.mkdir(parents=True)
    shutil.copyfile(RUN.parent / "meta.yaml", experiment / "meta.yaml")
    target_run = experiment / RUN.name
    regrow_run(RUN, target_run, 0.02)  # only train/loss has a line yet
    target = target_run if where == "run" else store
    tail = tail_for(target)
    seen = []
    for fraction in (0.02, 0.3, 0.31, 0.7, 1.0):
        regrow_run(RUN, target_run, fraction)
        seen.append(tail.poll().points)
    tail.poll(final=True)
    lines = [f.read_bytes().count(b"\n") for f in (RUN / "metrics").rglob("*") if f.is_file()]
    assert sum(seen) == sum(lines)  # every line once (a step logged twice is two lines)
    assert_same_run(tail.run(), read_log(target, options=ReadOptions(display_path=str(target))))


def test_watch_follows_a_growing_printed_log(tmp_path: Path) -> None:
    """`trainspotter watch` on a log still being printed: each poll reads the new lines,
    and the last analysis is the one of the whole log."""
    lines = (DATA / "stdout" / "hf_trainer_no_tqdm.log").read_bytes().splitlines(keepends=True)
    target = tmp_path / "train.log"
    target.write_bytes(b"".join(lines[:4]))
    options = WatchOptions(patterns=("train.log",), config=load_config(None), base=tmp_path)
    watcher = Watcher(options, io.StringIO(), io.StringIO())
    watcher.poll()
    points = []
    for end in range(5, len(lines) + 1, 3):
        target.write_bytes(b"".join(lines[:end]))
        watcher.poll()
        points.append(next(iter(watcher.logs.values())).points)
    watcher.poll(final=True)
    [log] = watcher.logs.values()
    assert points == sorted(points) and points[-1] > points[0]
    whole = read_log(target)
    assert log.tail is not None
    assert_same_run(log.tail.run(), read_log(target, options=ReadOptions(display_path="train.log")))
    assert log.analysis is not None and log.analysis.run.metrics.keys() == whole.metrics.keys()
