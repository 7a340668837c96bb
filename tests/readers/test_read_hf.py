"""The Hugging Face trainer_state.json reader, on small hand-made states and on the real
files the Trainer wrote under examples/ (skipped until they exist)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.errors import InputError
from trainspotter.readers import READERS, ReadOptions, detect_format, read_log

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

TRAIN = [
    {"epoch": 0.5, "grad_norm": 3.1, "learning_rate": 5e-5, "loss": 2.5, "step": 10},
    {"epoch": 1.0, "grad_norm": 2.0, "learning_rate": 4e-5, "loss": 2.1, "step": 20},
]
EVAL = {"epoch": 1.0, "eval_loss": 2.2, "eval_wer": 31.5, "eval_runtime": 1.5, "step": 20}
SUMMARY = {
    "epoch": 1.0,
    "step": 20,
    "total_flos": 1.0e12,
    "train_loss": 2.3,
    "train_runtime": 12.5,
    "train_samples_per_second": 80.0,
}


def state(log_history: Sequence[object], **extra: object) -> str:
    return json.dumps(
        {"global_step": 20, "logging_steps": 10, "max_steps": 20, "log_history": log_history}
        | extra,
        indent=2,
    )


def test_train_eval_and_summary_entries(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", state([*TRAIN, EVAL, SUMMARY]))
    run = read_log(path)
    assert_well_formed(run)
    assert run.source_format == "hf"
    loss = run.metrics["train/loss"]
    assert loss.steps.tolist() == [10, 20]
    assert loss.values.tolist() == [2.5, 2.1]  # the summary's average 2.3 is not a point
    assert run.metrics["eval/loss"].values.tolist() == [2.2]
    assert run.metrics["eval/wer"].steps.tolist() == [20]
    assert run.metrics["lr"].values.tolist() == [5e-5, 4e-5]
    assert run.metrics["grad_norm"].values.tolist() == [3.1, 2.0]
    assert run.metrics["epoch"].values.tolist() == [0.5, 1.0]
    assert run.meta["summary"]["train_loss"] == 2.3
    assert run.meta["summary"]["train_runtime"] == 12.5
    assert run.meta["trainer_state"]["global_step"] == 20
    # The eval entry's epoch at a step that has a train entry is not a duplicate.
    assert run.meta["duplicate_steps"] == {}


def test_nan_and_infinity_tokens_are_kept(make_file: MakeFile) -> None:
    text = state(TRAIN).replace('"grad_norm": 3.1', '"grad_norm": NaN')
    text = text.replace('"loss": 2.1', '"loss": Infinity')
    run = read_log(make_file("trainer_state.json", text))
    assert math.isnan(run.metrics["grad_norm"].values[0])
    assert run.metrics["train/loss"].values[1] == math.inf
    assert run.metrics["grad_norm"].nonfinite_count() == 1


def test_non_numeric_values_are_skipped_and_counted(make_file: MakeFile) -> None:
    entries = [dict(TRAIN[0], loss="oops"), dict(TRAIN[1], note=[1, 2], flag=True)]
    run = read_log(make_file("trainer_state.json", state(entries)))
    assert run.metrics["train/loss"].steps.tolist() == [20]
    assert run.meta["skipped_cells"] == {"train/loss": 1}
    assert "note" not in run.metrics and "flag" not in run.metrics
    assert any("not numbers" in note for note in run.notes())


def test_entries_without_a_step_are_skipped(make_file: MakeFile) -> None:
    entries = [*TRAIN, {"loss": 1.0}, {"loss": 1.0, "step": 2.5}, "junk"]
    run = read_log(make_file("trainer_state.json", state(entries)))
    assert run.meta["skipped_entries"] == 3
    assert run.metrics["train/loss"].steps.tolist() == [10, 20]


def test_empty_log_history_is_a_run_without_metrics(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", state([]))
    run = READERS["hf"].read(path, ReadOptions())
    assert run.metrics == {}
    assert any("no entries" in note for note in run.notes())
    with pytest.raises(InputError, match="no data points: log_history holds no entries"):
        read_log(path)


def test_summary_only_log_history(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", state([SUMMARY]))
    # The summary's mean loss is the one trace of the curve left: quoted, and called what it is.
    summary_loss = r"its summary's train_loss \(the mean over the whole run\) is 2\.3$"
    with pytest.raises(InputError, match=r"no data points: .*" + summary_loss):
        read_log(path)
    run = READERS["hf"].read(path, ReadOptions())
    assert run.metrics == {}
    assert run.meta["summary"]["train_loss"] == 2.3
    assert any("only the run summary" in note for note in run.notes())


def test_aliases_match_the_raw_key(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", state([*TRAIN, EVAL]))
    run = read_log(path, options=ReadOptions(aliases={"eval_wer": "eval/loss", "eval_loss": "x"}))
    assert run.metrics["eval/loss"].values.tolist() == [31.5]
    assert run.metrics["x"].values.tolist() == [2.2]


def test_checkpoint_folders_pick_the_latest(make_file: MakeFile, tmp_path: Path) -> None:
    make_file("out/checkpoint-5/trainer_state.json", state(TRAIN[:1]))
    make_file("out/checkpoint-20/trainer_state.json", state(TRAIN))
    make_file("out/checkpoint-9/trainer_state.json", state(TRAIN[:1]))
    run = read_log(tmp_path / "out")
    assert run.metrics["train/loss"].steps.tolist() == [10, 20]
    assert "read checkpoint-20/trainer_state.json, the latest of 3 checkpoints" in run.notes()
    assert run.meta["file"] == "checkpoint-20/trainer_state.json"
    single = read_log(tmp_path / "out" / "checkpoint-5")
    assert single.metrics["train/loss"].steps.tolist() == [10]


def test_top_level_state_wins_over_checkpoints(make_file: MakeFile, tmp_path: Path) -> None:
    make_file("out/checkpoint-20/trainer_state.json", state(TRAIN))
    make_file("out/trainer_state.json", state([*TRAIN, SUMMARY]))
    reader, found = detect_format(tmp_path / "out", "out")
    assert reader.name == "hf" and found == tmp_path / "out" / "trainer_state.json"
    assert "summary" in read_log(tmp_path / "out").meta


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"log_history": [\n  {"loss": 1,,}\n]}', "invalid JSON: Expecting property name"),
        ('{\n  "epoch": 3,\n  "global_step": 10\n}', "not a trainer_state.json: no log_history"),
        ("[1, 2]", "not a trainer_state.json: the top level is not an object"),
        ('{"log_history": {"a": 1}}', "not a trainer_state.json: log_history is not a list"),
    ],
)
def test_errors(make_file: MakeFile, content: str, problem: str) -> None:
    path = make_file("trainer_state.json", content)
    with pytest.raises(InputError) as caught:
        read_log(path, fmt="hf")
    assert caught.value.problem.startswith(problem)
    assert str(caught.value).startswith(str(path))


def test_invalid_json_names_line_and_column(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", '{\n  "log_history": [\n    {"loss": 1 "step": 2}\n')
    with pytest.raises(InputError) as caught:
        read_log(path)
    assert caught.value.problem == "invalid JSON: Expecting ',' delimiter at line 3 column 16"


def test_a_pretty_printed_json_document_is_claimed_by_hf(make_file: MakeFile) -> None:
    path = make_file("state.json", '{\n  "best_metric": 1.0,\n  "global_step": 5\n}')
    with pytest.raises(InputError, match="no log_history"):
        read_log(path)


# --- the real files written by transformers.Trainer (examples/, generated separately) ----

EXAMPLE_STATES = sorted(EXAMPLES.glob("*/trainer_state.json")) + sorted(
    EXAMPLES.glob("*/output/**/trainer_state.json")
)


@pytest.mark.skipif(not EXAMPLE_STATES, reason="examples/ trainer_state.json not generated yet")
@pytest.mark.parametrize("path", EXAMPLE_STATES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_states_read(path: Path) -> None:
    run = read_log(path)
    assert_well_formed(run)
    assert run.source_format == "hf"
    assert len(run.metrics["train/loss"]) > 1
    # Every example evaluates except memorise_healthy (a sanity run with no eval set): the
    # reader gives eval/loss exactly when the file logged an eval_loss.
    history = json.loads(path.read_text(encoding="utf-8"))["log_history"]
    assert ("eval/loss" in run.metrics) == any("eval_loss" in entry for entry in history)
    summary = run.meta.get("summary")
    if summary is not None:
        # The run-average loss never lands on the curve.
        loss = run.metrics["train/loss"]
        assert not np.any((loss.steps == summary["step"]) & (loss.values == summary["train_loss"]))


HF_OUTPUT = EXAMPLES / "hf_trainer" / "output"


@pytest.mark.skipif(not HF_OUTPUT.is_dir(), reason="examples/hf_trainer/output not generated yet")
def test_example_output_folder() -> None:
    run = read_log(HF_OUTPUT)
    assert run.source_format == "hf"
    if (HF_OUTPUT / "trainer_state.json").is_file():
        assert "train_runtime" in run.meta["summary"]
    checkpoints = sorted(HF_OUTPUT.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    if checkpoints:
        latest = read_log(checkpoints[-1])
        assert latest.metrics["train/loss"].steps[-1] <= run.metrics["train/loss"].steps[-1]
