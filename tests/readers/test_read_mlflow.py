"""The MLflow file-store reader on a store written by MLflow's own client
(tests/data/mlflow/mlruns, from make_fixture.py there), and on a fresh one written by the
client during the test when the `mlflow-test` extra is installed."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.errors import InputError
from trainspotter.readers import ReadOptions, detect_format, read_log

DATA = Path(__file__).resolve().parents[1] / "data" / "mlflow"
STORE = DATA / "mlruns"


def run_folder(name: str, store: Path = STORE) -> Path:
    """The run folder with this run name, found from the files (not through the reader)."""
    for tag in store.glob("*/*/tags/mlflow.runName"):
        if tag.read_text().strip() == name:
            return tag.parent.parent
    raise AssertionError(f"no run {name} in {store}")


def metric_lines(run: Path, name: str) -> list[tuple[int, float, int]]:
    rows = []
    for line in (run / "metrics" / name).read_text().splitlines():
        stamp, value, step = line.split()
        rows.append((int(stamp), float(value), int(step)))
    return rows


def last_write_wins(rows: list[tuple[int, float, int]]) -> tuple[list[int], list[float]]:
    latest: dict[int, float] = {}
    for _, value, step in rows:
        latest[step] = value
    return sorted(latest), [latest[s] for s in sorted(latest)]


def test_store_with_two_runs_needs_run(tmp_path: Path) -> None:
    for path in (
        STORE,
        next(
            p
            for p in STORE.iterdir()
            if (p / "meta.yaml").is_file()
            and any(c.is_dir() and (c / "metrics").is_dir() for c in p.iterdir())
        ),
    ):
        with pytest.raises(InputError) as caught:
            read_log(path)
        problem = caught.value.problem
        assert "2 MLflow runs here" in problem and "lr-0.5" in problem and "lr-2.0" in problem
        assert "--run" in problem and "\n" not in problem


@pytest.mark.parametrize("wanted", ["lr-2.0", "run_id", "id_prefix"])
def test_run_chosen_by_name_or_id(wanted: str) -> None:
    folder = run_folder("lr-2.0")
    key = {"lr-2.0": "lr-2.0", "run_id": folder.name, "id_prefix": folder.name[:6]}[wanted]
    run = read_log(STORE, options=ReadOptions(run_name=key))
    assert run.source_format == "mlflow"
    assert run.meta["run_name"] == "lr-2.0" and run.meta["run_id"] == folder.name
    assert run.meta["experiment"] == "tiny-logreg"
    assert run.name == "lr-2.0"


def test_repeated_and_out_of_order_records_last_write_wins() -> None:
    folder = run_folder("lr-2.0")
    run = read_log(folder)  # a run folder: no --run needed
    assert_well_formed(run)
    rows = metric_lines(folder, "train/loss")  # a name with "/" is a nested folder
    steps, values = last_write_wins(rows)
    assert len(rows) == len(steps) + 10  # steps 30-39 logged twice
    assert run.metrics["train/loss"].steps.tolist() == steps
    assert run.metrics["train/loss"].values.tolist() == values
    assert run.meta["duplicate_steps"] == {"train/loss": 10, "eval/loss": 1}
    val_rows = metric_lines(folder, "val_loss")
    older = sum(1 for a, b in itertools.pairwise(val_rows) if b[0] < a[0])
    assert older == 1 and run.meta["timestamps_backwards"] == 1
    assert run.metrics["eval/loss"].values[5] == val_rows[-1][1]  # the later write
    assert run.metrics["train/loss"].wall_time[0] == rows[0][0] / 1000
    assert run.metrics["lr"].values.tolist() == [2.0] * 40


def test_nan_is_kept_and_single_metric_file() -> None:
    folder = run_folder("lr-0.5")
    run = read_log(folder)
    assert math.isnan(run.metrics["grad_norm"].values[20])
    assert run.meta["duplicate_steps"] == {} and run.meta["timestamps_backwards"] == 0
    file = folder / "metrics" / "train" / "loss"
    assert detect_format(file, str(file))[0].name == "mlflow"
    alone = read_log(file)
    assert list(alone.metrics) == ["train/loss"]
    assert np.array_equal(alone.metrics["train/loss"].values, run.metrics["train/loss"].values)


def test_folder_holding_mlruns_and_unknown_run() -> None:
    run = read_log(DATA, options=ReadOptions(run_name="lr-0.5"))
    assert run.meta["run_name"] == "lr-0.5"
    assert any("one of 2 runs" in note for note in run.notes())
    with pytest.raises(InputError, match="no MLflow run 'nope' here"):
        read_log(STORE, options=ReadOptions(run_name="nope"))


def test_damaged_metric_lines_are_counted(make_file: MakeFile) -> None:
    make_file("mlruns/1/meta.yaml", "name: e\nexperiment_id: '1'\n")
    make_file("mlruns/1/abc/meta.yaml", "run_id: abc\nrun_name: r\nlifecycle_stage: active\n")
    make_file(
        "mlruns/1/abc/metrics/loss",
        "1700000000000 2.0 0\ngarbage\n1700000001000 1.5 1\n1700000002000 nan 2\n17000000030",
    )
    deleted = "run_id: old\nrun_name: gone\nlifecycle_stage: deleted\n"
    make_file("mlruns/1/old/meta.yaml", deleted)
    path = make_file("mlruns/1/old/metrics/loss", "1700000000000 9.0 0\n")
    store = path.parents[3]
    run = read_log(store)  # the deleted run is not offered: one run left
    assert run.meta["run_name"] == "r"
    assert run.metrics["train/loss"].steps.tolist() == [0, 1, 2]
    assert run.meta["skipped_lines"] == 2


def test_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError):
        read_log(tmp_path / "empty", fmt="mlflow")


@pytest.mark.skipif(
    importlib.util.find_spec("mlflow") is None, reason="needs the mlflow-test extra"
)
def test_fresh_store_written_by_the_mlflow_client(tmp_path: Path) -> None:
    sys.path.insert(0, str(DATA))
    try:
        from make_fixture import STEPS, write_store
    finally:
        sys.path.remove(str(DATA))
    store = write_store(tmp_path)
    for name in ("lr-0.5", "lr-2.0"):
        run = read_log(store, options=ReadOptions(run_name=name))
        assert_well_formed(run)
        folder = run_folder(name, store)
        steps, values = last_write_wins(metric_lines(folder, "train/loss"))
        assert steps == list(range(STEPS))
        assert run.metrics["train/loss"].values.tolist() == values
        assert set(run.metrics) == {"train/loss", "eval/loss", "lr", "grad_norm"}
    # The committed fixture came from the same script: same values (the data is seeded).
    committed = read_log(run_folder("lr-0.5"))
    fresh = read_log(run_folder("lr-0.5", store))
    assert np.allclose(committed.metrics["train/loss"].values, fresh.metrics["train/loss"].values)
