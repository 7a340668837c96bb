"""The stdout reader on printed logs of the logging / TRL classes (tests/data/stdout,
written by generate.py there), evaluation lines without a step, and the fast paths
(`_stdout_shapes.py`): reading by shape and by columns gives what reading every line in
full gives."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readers_support import (
    PRINTED_NAMES,
    STDOUT_DATA,
    MakeFile,
    assert_well_formed,
    read_stdout_fixture,
    stdout_fixture,
)

from trainspotter.model import Run
from trainspotter.readers import _stdout_shapes, detect_format, read_log, stdout
from trainspotter.readers.stdout import parse_progress


def test_python_logging_epoch_lines() -> None:
    """`%(asctime)s - %(levelname)s - %(message)s`: the time's comma made it look like a
    CSV (and a W&B chart export); `Train Loss:` is a two-word key."""
    path = stdout_fixture("logging_epochs.log")
    assert detect_format(path, str(path))[0].name == "stdout"
    run = read_log(path)
    assert_well_formed(run)
    text = path.read_text(encoding="utf-8")
    epochs = re.findall(
        r" - INFO - Epoch (\d+)/\d+, Train Loss: ([\d.]+), Val Loss: ([\d.]+), "
        r"Val Acc: ([\d.]+)%$",
        text,
        re.M,
    )
    assert len(epochs) == 6
    assert run.metrics["train/loss"].steps.tolist() == [int(e[0]) for e in epochs]
    assert run.metrics["train/loss"].values.tolist() == [float(e[1]) for e in epochs]
    assert run.metrics["eval/loss"].values.tolist() == [float(e[2]) for e in epochs]
    assert run.metrics["Val_Acc"].values.tolist() == [float(e[3]) for e in epochs]
    assert run.meta["units"] == {"Val_Acc": "%"}
    # The dumped config's `learning_rate: 0.05` is not a one-point lr curve.
    assert "lr" not in run.metrics and "learning_rate: 0.05" in text
    assert run.meta["step_source"] == {"epoch": 6}


def test_python_logging_step_lines_restart_each_epoch() -> None:
    """`Epoch [e/E], Step [n/N]`: the step restarts every epoch, so it is the batch; the
    per-epoch `Epoch [e] Validation Loss` lands at the end of that epoch."""
    _, run, text = read_stdout_fixture("logging_steps.log")
    steps = re.findall(r"Epoch \[(\d+)/\d+\], Step \[(\d+)/(\d+)\], Loss: ([\d.]+)$", text, re.M)
    evals = re.findall(r"Epoch \[(\d+)\] Validation Loss: ([\d.]+)$", text, re.M)
    per_epoch = int(steps[0][2])
    expected = [(int(e) - 1) * per_epoch + int(n) for e, n, _, _ in steps]
    assert expected == sorted(set(expected))  # what the log says: strictly increasing
    assert run.metrics["train/loss"].steps.tolist() == expected
    assert run.metrics["train/loss"].values.tolist() == [float(s[3]) for s in steps]
    assert run.metrics["eval/loss"].steps.tolist() == [int(e) * per_epoch for e, _ in evals]
    assert run.metrics["eval/loss"].values.tolist() == [float(v) for _, v in evals]
    assert run.meta["step_source"] == {"epoch and batch": len(steps), "epoch end": len(evals)}


def test_trl_dicts_between_progress_bars() -> None:
    path = stdout_fixture("trl_sft.log")
    raw = path.read_bytes()
    assert b"\r" in raw and b"\x1b[A{'eval_loss'" in raw
    run = read_log(path)
    assert_well_formed(run)
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw.decode("utf-8"))
    dicts = [
        ast.literal_eval(piece[piece.index("{") :])
        for piece in re.split(r"[\r\n]", text)
        if piece.startswith("{'")
    ]
    train = [d for d in dicts if "loss" in d]
    evals = [d for d in dicts if "eval_loss" in d]
    assert len(train) == 12 and len(evals) == 3
    assert run.metrics["train/loss"].values.tolist() == [float(d["loss"]) for d in train]
    assert run.metrics["eval/loss"].values.tolist() == [float(d["eval_loss"]) for d in evals]
    assert run.metrics["eval/loss"].steps.tolist() == [3, 7, 11]
    assert run.meta["summary"]["train_loss"] == float(dicts[-1]["train_loss"])


def test_a_long_preamble_is_sniffed_further(make_file: MakeFile) -> None:
    """A script that prints its prompts or config first (more than the 64 KiB head) and
    then trains: the progress lines past the head are found."""
    trl = stdout_fixture("trl_sft.log").read_text(encoding="utf-8")
    preamble = "".join(f"Sample {i}: " + "lorem ipsum dolor " * 80 + "\n" for i in range(60))
    assert len(preamble) > 64 * 1024
    path = make_file("train_log.txt", preamble + trl)
    assert detect_format(path, str(path))[0].name == "stdout"
    assert len(read_log(path).metrics["train/loss"]) == 12
    # Only the progress lines count: a megabyte of prose is not a training log.
    prose = make_file("notes.txt", "a line of prose about a model and nothing more\n" * 30_000)
    with pytest.raises(Exception, match="unrecognised log format"):
        detect_format(prose, str(prose))


@pytest.mark.parametrize("preamble_lines", [500, 3000])
def test_a_dataset_loading_preamble_of_many_short_lines_is_read_past(
    make_file: MakeFile, preamble_lines: int
) -> None:
    """Scripts print thousands of short lines while they load data (`Scan 100/4541...`)
    before the first training line: a file under the 64 KiB head (500 lines) and one past
    it (3,000) are both printed training output."""
    trl = stdout_fixture("trl_sft.log").read_text(encoding="utf-8")
    preamble = "".join(f"  Scan {i}/4541...\n" for i in range(preamble_lines))
    path = make_file("training.log", "Loading configuration...\n" + preamble + trl)
    assert detect_format(path, str(path))[0].name == "stdout"
    assert len(read_log(path).metrics["train/loss"]) == 12


def test_a_real_scan_of_thousands_of_items_before_training_is_read_past() -> None:
    """scan_preamble.log: a real loop printed `Scan i/4541...` for each of its 4,541 items,
    past the sniffed head's 400 lines and 64 KiB, before its first training line."""
    path = stdout_fixture("scan_preamble.log")
    text = path.read_text(encoding="utf-8")
    preamble = text[: text.index("Epoch 1/")]
    assert preamble.count("\n") > 4000 and len(preamble.encode("utf-8")) > 64 * 1024
    assert detect_format(path, str(path))[0].name == "stdout"
    run = read_log(path)
    assert_well_formed(run)
    steps = re.findall(r"^Epoch (\d+)/\d+ \| Batch (\d+)/(\d+) \| Loss: ([\d.]+)$", text, re.M)
    evals = re.findall(r"^Epoch (\d+)/\d+ \| val_loss: ([\d.]+) \| val_acc: ([\d.]+)%$", text, re.M)
    assert (len(steps), len(evals)) == (20, 5)  # 5 epochs, a line every 10 of 40 batches
    per_epoch = int(steps[0][2])
    assert run.metrics["train/loss"].steps.tolist() == [
        (int(e) - 1) * per_epoch + int(b) for e, b, _, _ in steps
    ]
    assert run.metrics["train/loss"].values.tolist() == [float(s[3]) for s in steps]
    assert run.metrics["eval/loss"].steps.tolist() == [int(e) * per_epoch for e, _, _ in evals]
    assert run.metrics["eval/loss"].values.tolist() == [float(v) for _, v, _ in evals]


def test_evaluation_lines_in_a_row_keep_their_own_steps(make_file: MakeFile) -> None:
    """HF prints an eval dict per epoch even when no train dict came between two of them
    (logging_steps longer than an epoch): each is a point, none overwrites another."""
    lines = stdout_fixture("hf_trainer_no_tqdm.log").read_text(encoding="utf-8").splitlines()
    train = [line for line in lines if line.startswith("{'loss'")]
    evals = [line for line in lines if line.startswith("{'eval_loss'")]
    body = [train[0], evals[0], evals[1], train[-1], evals[2]]  # the epochs keep rising
    run = read_log(make_file("train.log", "\n".join(body) + "\n"))
    eval_loss = run.metrics["eval/loss"]
    # The first eval shares the train line's step; the second cannot (it would overwrite).
    assert eval_loss.steps.tolist() == [0, 1, 2]
    assert eval_loss.values.tolist() == [float(ast.literal_eval(e)["eval_loss"]) for e in evals]
    assert run.metrics["train/loss"].steps.tolist() == [0, 2]
    assert not [name for name in run.meta["duplicate_steps"] if name.startswith("eval/")]


@pytest.mark.parametrize(
    ("line", "step", "epoch", "batch", "values"),
    [
        (
            "INFO:root:Epoch [6/6], Step [10/1549], Loss: 0.0490",
            None,
            6.0,
            (10, 1549),
            {"Loss": 0.049},
        ),
        (
            "INFO:__main__:Epoch 0 | Step   10/6501 | Loss: 8.2445 | PPL: 4455.51 | LR: 5.97e-05",
            None,
            0.0,
            (10, 6501),
            {"Loss": 8.2445, "LR": 5.97e-05, "PPL": 4455.51},
        ),
        (
            "2024-05-08 22:49:56 | INFO | Epoch [001/30] TrainLoss=1.8695 ValLoss=1.3028",
            None,
            1.0,
            None,
            {"TrainLoss": 1.8695, "ValLoss": 1.3028},
        ),
        (
            "2025-06-04 17:39:02,341 - INFO - Epoch 1/35, Train Loss: 1.6279, Test Acc: 59.86%",
            None,
            1.0,
            None,
            {"Train_Loss": 1.6279, "Test_Acc": 59.86},
        ),
        ("test accuracy: 20.78%, (512570/2466133)", None, None, None, {"test_accuracy": 20.78}),
        ("iteration  100/ 5000 | lm loss: 2.3E+00 |", 100, None, None, {"lm_loss": 2.3}),
        ("Epoch [3] Average Validation Loss: 0.25", None, 3.0, None, {}),
    ],
)
def test_progress_line_shapes(
    line: str,
    step: int | None,
    epoch: float | None,
    batch: tuple[int, int] | None,
    values: dict[str, float],
) -> None:
    progress = parse_progress(line)
    assert progress is not None
    assert (progress.step, progress.epoch, progress.batch) == (step, epoch, batch)
    for key, value in values.items():
        assert progress.values[key] == pytest.approx(value)


def test_batch_numbers_continue_across_epochs(make_file: MakeFile) -> None:
    lines = [
        f"ep: {e}, batch: {b}, time: 8.5, loss: {1 / (e * 3 + b)!r}"
        for e in (0, 1)
        for b in (20, 40, 60)
    ]
    run = read_log(make_file("train.log", "\n".join(lines) + "\n"))
    assert run.metrics["train/loss"].steps.tolist() == [20, 40, 60, 80, 100, 120]
    assert run.meta["step_source"] == {"batch number": 6}


# --- the fast paths read what the full parse reads ----------------------------------------


def read_in_full(path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """`path` read with every line parsed by `parse_progress` (no plans, no columns)."""
    with monkeypatch.context() as patch:
        patch.setattr(_stdout_shapes, "_plan", lambda line, progress: None)
        patch.setattr(stdout, "MIN_RUN", 10**9)
        return read_log(path, fmt="stdout")


def assert_same_run(fast: Run, full: Run) -> None:
    assert fast.metrics.keys() == full.metrics.keys()
    for name, series in full.metrics.items():
        assert fast.metrics[name].steps.tolist() == series.steps.tolist(), name
        assert np.array_equal(fast.metrics[name].values, series.values, equal_nan=True), name
        wall = fast.metrics[name].wall_time
        assert np.array_equal(wall, series.wall_time, equal_nan=True), name
    assert fast.meta == full.meta
    assert fast.notes() == full.notes()


@pytest.mark.parametrize("name", PRINTED_NAMES)
def test_fast_paths_read_what_the_full_parse_reads(
    name: str, make_file: MakeFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each log three times over, so that runs of one layout are long enough for columns.
    text = (STDOUT_DATA / name).read_text(encoding="utf-8")
    path = make_file(name, text * 3)
    assert_same_run(read_log(path, fmt="stdout"), read_in_full(path, monkeypatch))


NUMBER_TEXT = st.one_of(
    st.integers(0, 10**20).map(str),
    st.from_regex(r"\A0[0-9]{1,3}\Z"),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"\A[0-9]{1,3}\.[0-9]{0,4}(e[-+]?[0-9]{1,3})?\Z"),
    st.sampled_from(["1e999", "-0", "nan", "1_000", "+7", "٣"]),
    # Fixed widths, so that lines share a layout and are read by columns.
    st.from_regex(r"\A[1-9]\.[0-9]{4}\Z"),
    st.from_regex(r"\A[1-9][0-9]\Z"),
)
WHOLE = st.integers(0, 99).map(str)
LINE_FORMATS = [
    "iter {0}: loss {1}, time {2}ms, mfu {3}%",
    "step {0}: train loss {1}, val loss {2}",
    "{{'loss': {1}, 'grad_norm': {2}, 'learning_rate': {3}, 'epoch': {0}}}",
    "{{'eval_loss': {1}, 'eval_rouge-{0}': {2}, 'epoch': {3}}}",
    "{{'loss': '{1}', 'step': {0}}}",
    "2024-01-01 12:00:{0},123 - INFO - Epoch {0}/{2}, Train Loss: {1}, Val Acc: {3}%",
    # Leading timestamps (`_stdout_stamps.py`): impossible dates, times going backwards.
    "2024-02-{0} 23:59:{3}.{2} | INFO | step {0} loss {1}",
    "[2024-12-31T{3}:{0}:00+0{0}:30] iter {3}: loss {1}",
    "INFO:root:Epoch [{0}/{2}], Step [{3}/{2}], Loss: {1}",
    "Epoch {0}: 50%|#####| {3}/{2} [00:01<00:01, 5.0it/s, v_num=0, train_loss={1}]",
    "ep: {0}, batch: {3}, loss: {1}",
]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    blocks=st.lists(
        st.tuples(
            st.sampled_from(LINE_FORMATS),
            st.lists(
                st.tuples(
                    # Whole numbers everywhere half the time: counters and steps parse.
                    st.tuples(*[NUMBER_TEXT] * 4) | st.tuples(*[WHOLE] * 4),
                    st.integers(1, 6),
                ),
                min_size=1,
                max_size=8,
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_fast_paths_agree_on_any_numbers(
    blocks: list[tuple[str, list[tuple[tuple[str, str, str, str], int]]]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines of one shape with any numbers (leading zeros, overflow, fractions where a
    step goes, digits in keys): the plan and the columns read what the full parse reads,
    or both refuse the log."""
    lines = [
        fmt.format(*numbers)
        for fmt, rows in blocks
        for numbers, times in rows
        for _ in range(times)
    ]
    path = tmp_path_factory.mktemp("shapes") / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        full = read_in_full(path, monkeypatch)
    except Exception as exc:  # the same refusal both ways
        with pytest.raises(type(exc)):
            read_log(path, fmt="stdout")
        return
    assert_same_run(read_log(path, fmt="stdout"), full)


def test_another_scripts_digit_is_not_read_as_the_shapes_number(
    make_file: MakeFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`٣` is a digit to `\\d` but not in a Python literal: a dict line holding one must not
    share the shape (and the plan) of its ASCII neighbours (found by the property above)."""
    ascii_line = "{'loss': 1, 'grad_norm': 2, 'learning_rate': 3, 'epoch': 4}"
    other = "{'loss': 3, 'grad_norm': 3, 'learning_rate': 3, 'epoch': ٣}"
    path = make_file("train.log", "\n".join([ascii_line, other] * 6) + "\n")
    assert_same_run(read_log(path, fmt="stdout"), read_in_full(path, monkeypatch))
