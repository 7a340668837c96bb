"""D13, D14, D19 and the line limits (ADVERSARIAL.md): FIFOs and device files are listed
and never opened; symlink loops cannot make a `**` glob explode (each real folder is
visited once); a log deleted while watched says so; printed-output and MLflow logs and
watch's tails are held to the one-line limit. Every CLI run here is a subprocess with a
timeout: a hang is the defect, and it must fail the test, not stall it."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from hardening_support import HEALTHY_CSV, REPO, one_line_error, reported_paths, run_cli

from trainspotter.config import load_config
from trainspotter.errors import InputError
from trainspotter.globbing import expand_glob
from trainspotter.readers import _csv_tail, _files, jsonl, read_log
from trainspotter.readers.incremental import LOG_DELETED
from trainspotter.watch import Watcher, WatchOptions

# --- D13: FIFOs and devices


@pytest.fixture
def fifo_folder(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "ok.csv").write_text(HEALTHY_CSV)
    os.mkfifo(tmp_path / "logs" / "f.csv")
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "logs/f.csv"],
        ["analyze", "logs/f.csv", "--format", "csv"],
        ["gate", "logs/f.csv", "--report-dir", "out"],
        ["watch", "logs/f.csv", "--idle-exit", "0.2", "--interval", "0.1"],
    ],
)
def test_a_named_fifo_is_never_opened(fifo_folder: Path, args: list[str]) -> None:
    result = run_cli(args, fifo_folder)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not a regular file (a FIFO, socket or device)" in result.stdout + result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_is_never_read(tmp_path: Path, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    for args in (["analyze", device], ["analyze", device, "--format", "jsonl"]):
        line = one_line_error(run_cli(args, tmp_path))
        assert "not a regular file" in line  # was "file is empty" or a hang


def test_a_fifo_matched_by_a_glob_is_listed_as_skipped(fifo_folder: Path) -> None:
    result = run_cli(["gate", "logs/*.csv", "--report-dir", "out"], fifo_folder)
    assert result.returncode == 0, result.stderr
    assert "skipped logs/f.csv: not a regular file" in result.stdout
    assert "logs/f.csv" in (fifo_folder / "out" / "summary.md").read_text()
    assert reported_paths(fifo_folder / "out" / "trainspotter.json") == ["logs/ok.csv"]


# --- D14: symlink loops


@pytest.fixture
def loop_folder(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "x.csv").write_text(HEALTHY_CSV)
    (logs / "sub" / "y.csv").write_text(HEALTHY_CSV)
    (logs / "a").symlink_to(".", target_is_directory=True)
    (logs / "b").symlink_to(".", target_is_directory=True)
    (logs / "sub" / "up").symlink_to("..", target_is_directory=True)
    return tmp_path


def test_glob_visits_each_real_folder_once(loop_folder: Path) -> None:
    assert expand_glob("logs/**/*.csv", loop_folder).matches == ["logs/sub/y.csv", "logs/x.csv"]
    assert expand_glob("**", loop_folder).matches == [
        "logs",
        "logs/sub",
        "logs/sub/y.csv",
        "logs/x.csv",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "logs/**/*.csv"],
        ["gate", "logs/**", "--report-dir", "out"],
        ["watch", "logs/**/*.csv", "--idle-exit", "0.3", "--interval", "0.1"],
    ],
)
def test_symlink_loops_do_not_stall_any_front_end(loop_folder: Path, args: list[str]) -> None:
    result = run_cli(args, loop_folder, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_glob_matches_the_standard_one_without_loops(tmp_path: Path) -> None:
    """Same results as `glob.glob(..., recursive=True)` on a tree without loops (hidden
    names, trailing `**`, folders only, absolute patterns)."""
    import glob

    for name in ("logs/a.csv", "logs/sub/b.csv", "logs/.h/c.csv", "logs/.d.csv", "x.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    patterns = ["*", "**", "logs/**", "logs/**/*.csv", "**/*.csv", "logs/.*", "logs/*/", "?.*"]
    patterns.append(str(tmp_path / "logs" / "*.csv"))
    for pattern in patterns:
        expected = sorted(glob.glob(pattern, root_dir=tmp_path, recursive=True))
        assert expand_glob(pattern, tmp_path).matches == expected, pattern


# --- D19: a log deleted while watched


def _watcher(base: Path, pattern: str) -> tuple[Watcher, io.StringIO]:
    """A watcher and its stderr (where its messages go)."""
    err = io.StringIO()
    options = WatchOptions(patterns=(pattern,), config=load_config(None), base=base)
    return Watcher(options, io.StringIO(), err), err


@pytest.mark.parametrize("name", ["run.csv", "run.jsonl", "trainer_state.json"])
def test_a_log_deleted_while_watched_says_so(tmp_path: Path, name: str) -> None:
    log = tmp_path / name
    if name.endswith(".csv"):
        log.write_text(HEALTHY_CSV)
    elif name.endswith(".jsonl"):
        log.write_text("".join(f'{{"step": {i}, "loss": {2.0 / i}}}\n' for i in range(1, 40)))
    else:
        shutil.copy(REPO / "examples" / "healthy" / "trainer_state.json", log)
    watcher, out = _watcher(tmp_path, name)
    watcher.poll()
    assert watcher.analyses()
    log.unlink()
    watcher.poll()
    watcher.finish()
    assert LOG_DELETED in out.getvalue()
    assert LOG_DELETED in watcher.summary("stopped")


# --- line limits beyond JSONL and CSV files


def test_printed_output_line_over_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_LINE_BYTES", 4096)
    head = (REPO / "tests" / "data" / "stdout" / "keras_verbose2.log").read_text()
    log = tmp_path / "train.log"
    log.write_text(head + "x" * 5000 + "\n")
    with pytest.raises(InputError, match=r"is longer than 4096 bytes"):
        read_log(log, fmt="stdout")


def test_mlflow_metric_file_line_over_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_LINE_BYTES", 4096)
    store = tmp_path / "mlruns"
    shutil.copytree(REPO / "tests" / "data" / "mlflow" / "mlruns", store)
    metric = next(p for p in sorted(store.rglob("metrics/*")) if p.is_file())
    metric.write_text(metric.read_text() + "1 " + "9" * 5000 + " 3\n")
    run = read_log(metric.parents[1], fmt="mlflow")  # the run folder holding the file
    # that metric is not read (said in a note); the run's other metrics are
    assert any("is longer than 4096 bytes" in note for note in run.notes())
    assert metric.name not in run.metrics


@pytest.mark.parametrize("name", ["run.csv", "run.jsonl"])
def test_watch_tail_holds_an_unfinished_line_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(_csv_tail, "MAX_LINE_BYTES", 4096)
    log = tmp_path / name
    first = HEALTHY_CSV if name.endswith(".csv") else '{"step": 1, "loss": 2.0}\n'
    log.write_text(first)
    watcher, out = _watcher(tmp_path, name)
    watcher.poll()
    with log.open("a") as handle:  # a line that never ends: watch must not buffer it all
        handle.write("9" * 5000)
    watcher.poll()
    assert "longer than 4096 bytes" in out.getvalue()
