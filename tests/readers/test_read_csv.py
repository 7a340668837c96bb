"""The generic CSV reader: cell rules, step column rule and the layouts found in the wild."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.analysis import analyze
from trainspotter.errors import InputError
from trainspotter.model import Severity
from trainspotter.readers import READERS, ReadOptions, detect_format, read_log, read_runs


def test_step_column_and_cell_rules(make_file: MakeFile) -> None:
    path = make_file(
        "log.csv",
        "step,loss,acc\n1,0.9,0.1\n2,,0.2\n3,nan,x\n4,inf,0.4\n5,-Infinity,NaN\n6,0.5,\n",
    )
    run = read_log(path)
    assert_well_formed(run)
    assert run.source_format == "csv"
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [1, 3, 4, 5, 6]  # the empty cell at step 2 is absent
    assert math.isnan(loss.values[1])
    assert loss.values[2] == math.inf and loss.values[3] == -math.inf
    acc = run.metrics["acc"]
    assert acc.steps.tolist() == [1, 2, 4, 5]  # "x" skipped, empty absent, NaN kept
    assert run.meta["skipped_cells"] == {"acc": 1}
    assert run.meta["step_column"] == "step"


@pytest.mark.parametrize(
    "content",
    [
        "step;loss\n1;0.5\n2;0.4\n",
        "step\tloss\n1\t0.5\n2\t0.4\n",
        "step,loss\r\n1,0.5\r\n2,0.4\r\n",
        "step,loss\r\r\n1,0.5\r\r\n2,0.4\r\r\n",
        "\ufeffstep,loss\n1,0.5\n2,0.4\n",
        "step, loss\n1, 0.5\n2, 0.4",
        '"step","loss"\n"1","0.5"\n"2","0.4"\n',
        "step,loss\n\n1,0.5\n\n2,0.4\n\n",
        "\n\nstep,loss\n1,0.5\n2,0.4\n",
        "step,loss\r1,0.5\r2,0.4\r",
    ],
    ids=["semicolon", "tab", "crlf", "cr-cr-lf", "bom", "spaces", "quoted", "blank", "lead", "cr"],
)
def test_layouts(make_file: MakeFile, content: str) -> None:
    run = read_log(make_file("log.csv", content))
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [1, 2]
    assert loss.values.tolist() == [0.5, 0.4]


def test_keras_junk_first_line_and_semicolons(make_file: MakeFile) -> None:
    content = "model_history_log\r\nepoch;accuracy;loss;val_loss\r\n0;0.4;1.5;0.6\r\n1;0.8;0.4;0.3"
    run = read_log(make_file("model_history_log.csv", content))
    assert run.metrics["train/loss"].values.tolist() == [1.5, 0.4]
    assert run.metrics["eval/loss"].steps.tolist() == [0, 1]
    assert run.meta["step_column"] == "epoch"
    assert "epoch" not in run.metrics
    assert "skipped a first line that is not the header: 'model_history_log'" in run.notes()


def test_keras_csvlogger_reads_through_the_csv_reader(make_file: MakeFile) -> None:
    path = make_file(
        "training.log", "epoch,accuracy,loss,val_accuracy,val_loss\n0,0.5,1.2,0.4,1.3\n"
    )
    reader, _ = detect_format(path, str(path))
    assert reader.name == "csv"
    run = read_log(path)
    assert sorted(run.metrics) == ["accuracy", "eval/loss", "train/loss", "val_accuracy"]


def test_no_step_column_uses_the_row_number(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "train_loss,val_loss\n3.0,2.0\n2.0,1.5\n"))
    assert run.metrics["train/loss"].steps.tolist() == [0, 1]
    assert run.meta["step_column"] is None
    assert any("using the row number as the step" in note for note in run.notes())


def test_fractional_epochs_are_not_a_step(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "epoch,loss\n0.5,3.0\n1.0,2.0\n1.5,1.0\n"))
    assert run.metrics["train/loss"].steps.tolist() == [0, 1, 2]
    assert run.metrics["epoch"].values.tolist() == [0.5, 1.0, 1.5]
    assert any("not whole numbers" in note for note in run.notes())


@pytest.mark.parametrize(
    "name", ["global_step", "Iteration", "iter", "_step", "trainer/global_step"]
)
def test_step_column_names(make_file: MakeFile, name: str) -> None:
    run = read_log(make_file("log.csv", f"epoch,{name},loss\n0,10,1.0\n0,20,0.5\n"))
    assert run.metrics["train/loss"].steps.tolist() == [10, 20]
    assert run.metrics["epoch"].values.tolist() == [0.0, 0.0]


def test_rows_without_a_step_are_skipped(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "step,loss\n1,0.5\n,0.4\n3,0.3\n"))
    assert run.metrics["train/loss"].steps.tolist() == [1, 3]
    assert run.meta["rows_without_step"] == 1


def test_duplicate_and_unsorted_steps(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "step,loss\n3,0.3\n1,0.9\n2,0.5\n1,0.8\n"))
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [1, 2, 3]
    assert loss.values.tolist() == [0.8, 0.5, 0.3]  # the value logged last wins
    assert run.meta["duplicate_steps"] == {"train/loss": 1}
    assert run.meta["backward_steps"] == {"train/loss": 2}


def test_rows_with_too_many_cells_are_skipped(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "step,loss\n1,0.5\n2,0.4,9\n3,0.3\n"))
    assert run.metrics["train/loss"].steps.tolist() == [1, 3]
    assert run.meta["skipped_rows"] == 1
    assert any("more cells than the header" in note for note in run.notes())


def test_text_columns_are_ignored_with_a_note(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "step,phase,loss\n1,train,0.5\n2,train,0.4\n"))
    assert sorted(run.metrics) == ["train/loss"]
    assert "ignored columns that are not numbers: phase text" in run.notes()


def test_two_spellings_of_one_metric(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "step,loss,train/loss,train_loss\n1,5,0.5,7\n"))
    assert run.metrics["train/loss"].values.tolist() == [0.5]  # the exact spelling wins
    assert run.metrics["loss"].values.tolist() == [5.0]
    assert run.metrics["train_loss"].values.tolist() == [7.0]
    assert sum("both mean 'train/loss'" in note for note in run.notes()) == 2


def test_aliases(make_file: MakeFile) -> None:
    path = make_file("log.csv", "step,objective\n1,0.5\n")
    run = read_log(path, options=ReadOptions(aliases={"objective": "train/loss"}))
    assert "train/loss" in run.metrics


def test_header_only_is_an_empty_run_and_no_data(make_file: MakeFile) -> None:
    path = make_file("log.csv", "step,loss\n")
    assert READERS["csv"].read(path, ReadOptions()).metrics == {}
    # read_log refuses it: nothing was logged, so nothing can be checked (never "healthy")
    with pytest.raises(InputError, match="no data points"):
        read_log(path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("name,phase\nabc,train\ndef,eval\n", "no numeric column"),
        ("softmax,100,128,0.01\nneg,100,128,0.02\n", "no header row"),
        ("\n\n\n", "no header line"),
        ('step,loss\n1,"0.5\n', "cannot parse as CSV"),
    ],
)
def test_errors(make_file: MakeFile, content: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        read_log(make_file("log.csv", content), fmt="csv")
    assert caught.value.problem.startswith(problem)


def test_wall_time_is_nan_without_a_time_column(make_file: MakeFile) -> None:
    run = read_log(make_file("log.csv", "step,loss\n1,0.5\n"))
    assert np.isnan(run.metrics["train/loss"].wall_time).all()


KERAS_APPENDED = Path(__file__).resolve().parents[1] / "data" / "keras" / "appended_runs.csv"


def test_keras_csvlogger_appended_twice_is_two_logs_the_latest_first() -> None:
    # Real Keras CSVLogger(append=True) output of two runs (tests/data/keras/make_fixture.py):
    # the second run's epoch 0 (val_loss 2.075) is a new start, not the first run diverging.
    # Each run is its own log: the latest by default (what `watch` follows), every run
    # through read_runs (what analyze and gate check).
    run = read_log(KERAS_APPENDED)
    val = run.metrics["eval/loss"]
    assert val.steps.tolist() == list(range(12))
    assert val.values[0] == pytest.approx(2.075486898422241)
    assert val.values[-1] == pytest.approx(0.5166698098182678)
    assert run.meta["appended_runs"] == 2
    assert (run.meta["run_name"], run.meta["other_runs"]) == ("2", ["1"])
    assert run.meta["backward_steps"] == {}
    assert (
        "this log holds 2 runs appended one after another (the step counter starts again): "
        "this is run 2 of 2 (the latest), steps 0-11; each run is checked as its own log "
        "(--run N reads one)"
    ) in run.notes()
    findings = analyze(run).findings
    assert not [f for f in findings if f.severity >= Severity.WARNING], findings
    latest, first = read_runs(KERAS_APPENDED)
    assert latest.meta["run_name"] == "2" and first.meta["run_name"] == "1"
    assert "other_runs" not in first.meta
    first_val = first.metrics["eval/loss"]
    assert first_val.steps.tolist() == list(range(12))
    assert first_val.values[0] == pytest.approx(1.548682689666748)  # row 2 of the file
    assert "this is run 1 of 2, steps 0-11" in " ".join(first.notes())
    with pytest.raises(InputError, match="no run '3' in this log: it holds 2 runs"):
        read_log(KERAS_APPENDED, options=ReadOptions(run_name="3"))


def test_one_metric_going_back_is_not_a_new_run(make_file: MakeFile) -> None:
    content = "step,loss,acc\n1,0.9,\n2,0.8,0.1\n3,0.7,0.2\n1,0.95,\n4,0.6,0.3\n"
    run = read_log(make_file("log.csv", content))
    assert "appended_runs" not in run.meta
    assert run.metrics["acc"].steps.tolist() == [2, 3, 4]


SB3_PROGRESS = Path(__file__).resolve().parents[2] / "examples/sb3_ppo_cartpole/progress.csv"


def test_stable_baselines3_progress_csv_steps_are_environment_timesteps() -> None:
    """SB3's CSV logger (examples/sb3_ppo.py) writes no `step` column: `time/total_timesteps`
    (environment steps, SB3's own x-axis) is the step, not the row number, and the first
    row, logged before any update, holds no `train/` value."""
    with SB3_PROGRESS.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    run = read_log(SB3_PROGRESS)
    assert run.meta["step_column"] == "time/total_timesteps"
    assert "time/total_timesteps" not in run.metrics
    timesteps = [int(row["time/total_timesteps"]) for row in rows]
    assert run.metrics["rollout/ep_rew_mean"].steps.tolist() == timesteps
    trained = [(int(r["time/total_timesteps"]), float(r["train/entropy_loss"])) for r in rows[1:]]
    entropy = run.metrics["train/entropy_loss"]
    assert list(zip(entropy.steps.tolist(), entropy.values.tolist(), strict=True)) == trained
    assert run.metrics["time/iterations"].values.tolist() == list(range(1, len(rows) + 1))
    assert not any("row number" in note for note in run.notes())


def test_stable_baselines3_progress_json_uses_the_same_step(make_file: MakeFile) -> None:
    """SB3's JSON logger writes the same keys, one object per line."""
    path = make_file(
        "progress.json",
        '{"time/iterations": 1, "time/total_timesteps": 256, "rollout/ep_rew_mean": 22.3}\n'
        '{"time/iterations": 2, "time/total_timesteps": 512, "rollout/ep_rew_mean": 27.0, '
        '"train/entropy_loss": -0.691}\n',
    )
    run = read_log(path)
    assert run.meta["step_column"] == "time/total_timesteps"
    assert run.metrics["train/entropy_loss"].steps.tolist() == [512]
    assert run.metrics["rollout/ep_rew_mean"].steps.tolist() == [256, 512]
