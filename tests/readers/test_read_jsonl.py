"""The JSON Lines reader: rows, nesting, non-finite values and damaged lines."""

from __future__ import annotations

import math

import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.errors import InputError
from trainspotter.readers import read_log


def test_rows_and_the_step_key(make_file: MakeFile) -> None:
    content = (
        '{"iter": 0, "train/loss": 11.0, "val/loss": 11.1, "lr": 0.0}\n'
        '{"iter": 100, "train/loss": 7.1, "lr": 3e-05}\n'
        '{"iter": 200, "train/loss": NaN, "val/loss": null, "lr": "inf"}\n'
    )
    run = read_log(make_file("log.jsonl", content))
    assert_well_formed(run)
    assert run.source_format == "jsonl"
    assert run.meta["step_column"] == "iter"
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [0, 100, 200]
    assert math.isnan(loss.values[2])
    assert run.metrics["eval/loss"].steps.tolist() == [0]  # null is "not logged"
    assert run.metrics["lr"].values[2] == math.inf  # the string "inf" is a value


def test_nested_objects_are_flattened_and_lists_ignored(make_file: MakeFile) -> None:
    content = (
        '{"step": 0, "eval": {"10": {"loss": 2.7, "hole_acc": [[0.1]]}}}\n'
        '{"step": 1, "train_loss": 2.5, "loop_losses": [2.5, 2.4]}\n'
    )
    run = read_log(make_file("metrics.jsonl", content))
    assert run.metrics["eval/10/loss"].values.tolist() == [2.7]
    assert run.metrics["train/loss"].steps.tolist() == [1]
    assert "eval/10/hole_acc" not in run.metrics and "loop_losses" not in run.metrics
    assert any("eval/10/hole_acc lists" in note for note in run.notes())


def test_strings_that_are_not_numbers_are_counted(make_file: MakeFile) -> None:
    content = '{"step": 1, "loss": 1.0, "tag": "a"}\n{"step": 2, "loss": "oops", "tag": "b"}\n'
    run = read_log(make_file("log.jsonl", content))
    assert run.metrics["train/loss"].steps.tolist() == [1]
    assert run.meta["skipped_cells"] == {"train/loss": 1}
    assert "tag" not in run.metrics


def test_half_written_last_line(make_file: MakeFile) -> None:
    content = '{"step": 1, "loss": 1.0}\n{"step": 2, "loss": 0.9}\n{"step": 3, "lo'
    run = read_log(make_file("log.jsonl", content))
    assert run.metrics["train/loss"].steps.tolist() == [1, 2]
    assert "skipped a half-written last line (line 3)" in run.notes()
    assert run.meta["partial_last_line"] is True


def test_lines_that_are_not_objects_are_counted(make_file: MakeFile) -> None:
    content = '{"step": 1, "loss": 1.0}\n[1, 2]\nnot json\n{"step": 2, "loss": 0.9}\n'
    run = read_log(make_file("log.jsonl", content))
    assert run.meta["skipped_lines"] == 2
    assert run.metrics["train/loss"].steps.tolist() == [1, 2]
    assert any(note.startswith("skipped 2 line(s)") for note in run.notes())


def test_resumed_run_keeps_the_last_value(make_file: MakeFile) -> None:
    # Resumed from the checkpoint at step 40: history before it stays, the rest is rewritten.
    rows = [(20, 8.0), (40, 7.0), (60, 6.5), (40, 6.9), (60, 6.0)]
    content = "".join(f'{{"step": {s}, "loss": {v}}}\n' for s, v in rows)
    run = read_log(make_file("metrics.jsonl", content))
    assert run.metrics["train/loss"].values.tolist() == [8.0, 6.9, 6.0]
    assert run.meta["duplicate_steps"] == {"train/loss": 2}
    assert run.meta["backward_steps"] == {"train/loss": 1}
    assert "appended_runs" not in run.meta


def test_run_started_again_from_its_first_step_is_a_second_run(make_file: MakeFile) -> None:
    rows = [(20, 8.0), (40, 7.0), (20, 7.9), (40, 6.9), (60, 6.0)]
    content = "".join(f'{{"step": {s}, "loss": {v}}}\n' for s, v in rows)
    run = read_log(make_file("metrics.jsonl", content))
    assert run.metrics["train/loss"].values.tolist() == [7.9, 6.9, 6.0]
    assert run.meta["appended_runs"] == 2
    assert run.meta["duplicate_steps"] == {}
    assert any("holds 2 runs appended" in note for note in run.notes())


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[1, 2]\n[3]\n", "no line is a JSON object (line 1: a JSON list, not an object)"),
        ('{"step": 1, "loss"', "no line is a JSON object (line 1: Expecting ':' delimiter"),
        ('{"step": 1}\n{"step": 2}\n', "no numeric column"),
    ],
)
def test_errors(make_file: MakeFile, content: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        read_log(make_file("log.jsonl", content), fmt="jsonl")
    assert caught.value.problem.startswith(problem)


def test_deep_nesting_is_bad_input_not_a_crash(make_file: MakeFile) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(InputError):
        read_log(make_file("log.jsonl", deep + "\n"), fmt="jsonl")
    nested = '{"a":' * 5000 + "1" + "}" * 5000
    run_or_error: object
    try:
        run_or_error = read_log(make_file("nested.jsonl", nested + "\n"), fmt="jsonl")
    except InputError as exc:
        run_or_error = exc
    assert run_or_error is not None
