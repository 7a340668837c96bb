"""The W&B CSV export reader: run-history and chart-panel exports, and the runs table it
must reject."""

from __future__ import annotations

from pathlib import Path

import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.errors import InputError
from trainspotter.readers import ReadOptions, detect_format, read_log

HISTORY = (
    "_step,_runtime,_timestamp,train/loss,eval/loss,_wandb,phase\n"
    "0,1.5,1700000000.5,2.0,,x,a\n"
    "1,2.5,1700000001.5,1.8,1.9,x,a\n"
    "2,3.5,1700000002.5,1.6,,x,a\n"
)

CHART = (
    '"Step","run-a - train_loss","run-a - train_loss__MIN","run-a - train_loss__MAX",'
    '"run b - x - train_loss","run b - x - train_loss__MIN","run b - x - train_loss__MAX"\n'
    '"1","0.9","0.9","0.9","0.95","0.95","0.95"\n'
    '"2","0.8","0.8","0.8","0.85","0.85","0.85"\n'
    '"3","","","","0.75","0.7","0.8"'
)


def test_run_history_export(make_file: MakeFile) -> None:
    path = make_file("wandb_export.csv", HISTORY)
    assert detect_format(path, str(path))[0].name == "wandb"
    run = read_log(path)
    assert_well_formed(run)
    assert sorted(run.metrics) == ["eval/loss", "train/loss"]
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [0, 1, 2]
    assert loss.wall_time.tolist() == [1700000000.5, 1700000001.5, 1700000002.5]
    assert run.metrics["eval/loss"].steps.tolist() == [1]


def test_chart_export_reads_the_first_run(make_file: MakeFile) -> None:
    path = make_file("wandb_export_chart.csv", CHART)
    assert detect_format(path, str(path))[0].name == "wandb"
    run = read_log(path)
    assert_well_formed(run)
    assert run.meta["run_name"] == "run-a"
    assert run.meta["other_runs"] == ["run b - x"]
    assert run.metrics["train/loss"].values.tolist() == [0.9, 0.8]
    assert any("holds 2 runs" in note for note in run.notes())


def test_chart_export_run_choice_and_buckets(make_file: MakeFile) -> None:
    path = make_file("wandb_export.csv", CHART)
    run = read_log(path, options=ReadOptions(run_name="run b - x"))
    assert run.metrics["train/loss"].steps.tolist() == [1, 2, 3]
    assert run.meta["other_runs"] == ["run-a"]
    assert any("buckets" in note for note in run.notes())
    with pytest.raises(InputError) as caught:
        read_log(path, options=ReadOptions(run_name="nope"))
    assert caught.value.problem == (
        "no run named 'nope' in this W&B export (runs: run-a, run b - x)"
    )


def test_chart_export_with_another_x_axis(make_file: MakeFile) -> None:
    path = make_file("export.csv", "epoch_id,r - gap_mean\n0,1.0\n1,0.5\n")
    run = read_log(path)
    assert run.source_format == "wandb"
    assert run.metrics["gap_mean"].steps.tolist() == [0, 1]
    assert "the chart's x-axis column 'epoch_id' is used as the step" in run.notes()


def test_runs_table_is_rejected(make_file: MakeFile) -> None:
    path = make_file(
        "wandb_export.csv",
        '"Name","State","Notes","Runtime","lr","accuracy"\n'
        '"run-1","finished","-","45","0.1","0.9"\n"run-2","crashed","-","12","0.2","0.5"',
    )
    with pytest.raises(InputError) as caught:
        read_log(path)
    assert caught.value.problem.startswith("a W&B runs-table export")


def test_generic_csv_forced_as_wandb(make_file: MakeFile) -> None:
    with pytest.raises(InputError, match="not a W&B export"):
        read_log(make_file("log.csv", "step,loss\n1,0.5\n"), fmt="wandb")


def test_folder_with_one_export(make_file: MakeFile, tmp_path: Path) -> None:
    make_file("exports/wandb_export_2024.csv", HISTORY)
    make_file("exports/readme.txt", "notes")
    assert read_log(tmp_path / "exports").source_format == "wandb"
