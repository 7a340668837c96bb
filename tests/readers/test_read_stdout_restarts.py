"""A printed step counter that restarts every epoch (`readers/_stdout_restarts.py`): read
on output printed by real torch loops (tests/data/stdout/restart_*.log, written by
generate_restarts.py there), the restarts that must not be glued, and properties over
truncated, garbled, interleaved and chunked input."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from readers_support import STDOUT_DATA, MakeFile, assert_well_formed, read_stdout_fixture
from test_read_properties import PROPERTY_SETTINGS, read_or_reject
from test_read_stdout_formats import assert_same_run, read_in_full

import trainspotter
from trainspotter.readers import read_log, read_runs
from trainspotter.readers._files import read_text_lines
from trainspotter.readers.base import ReadOptions
from trainspotter.readers.stdout import StdoutLines, parse_progress

RESTART_LOGS = sorted(p.name for p in STDOUT_DATA.glob("restart_*.log"))


def batches_per_epoch(text: str) -> int:
    """What each captured loop printed first (its len(loader))."""
    found = re.search(r"^batches per epoch: (\d+)$", text, re.M)
    assert found is not None
    return int(found.group(1))


def assert_glued(run: trainspotter.Run, restarts: int, period: int, evidence: str) -> None:
    assert run.meta["step_restarts"] == {
        "restarts": restarts,
        "glued": restarts,
        "period": period,
        "evidence": evidence,
    }
    note = next(n for n in run.notes() if "step counter starts again every epoch" in n)
    assert f"{restarts} restart(s) in this file" in note and f"each epoch {period} steps" in note


def test_epoch_tag_and_summary_lines() -> None:
    """`[E1] step 0 loss X` ... `Epoch 1 avg-loss Y`: the shape of a published LoRA
    fine-tune whose five epochs overwrote each other (last write wins)."""
    _, run, text = read_stdout_fixture("restart_epoch_tag.log")
    per_epoch = batches_per_epoch(text)
    lines = re.findall(r"^\[E(\d+)\] step (\d+) loss ([\d.]+)$", text, re.M)
    expected = [(int(e) - 1) * per_epoch + int(s) for e, s, _ in lines]
    assert run.metrics["train/loss"].steps.tolist() == expected
    assert run.metrics["train/loss"].values.tolist() == [float(x) for _, _, x in lines]
    # Each epoch's summary at the end of that epoch's steps, where it was printed.
    summaries = re.findall(r"^Epoch (\d+) avg-loss ([\d.]+)$", text, re.M)
    last = {int(e): (int(e) - 1) * per_epoch + int(s) for e, s, _ in lines}
    assert run.metrics["avg-loss"].steps.tolist() == [last[int(e)] for e, _ in summaries]
    assert run.metrics["avg-loss"].values.tolist() == [float(v) for _, v in summaries]
    assert run.meta["duplicate_steps"] == {} and "appended_runs" not in run.meta
    assert_glued(run, len(summaries) - 1, per_epoch, "epoch markers")


def test_epoch_and_iter_on_the_line_with_an_epoch_eval_line() -> None:
    _, run, text = read_stdout_fixture("restart_epoch_iter.log")
    per_epoch = batches_per_epoch(text)
    lines = re.findall(r"^epoch (\d+) iter (\d+) loss ([\d.]+)$", text, re.M)
    evals = re.findall(r"^epoch (\d+) val loss ([\d.]+)$", text, re.M)
    expected = [int(e) * per_epoch + int(i) for e, i, _ in lines]
    assert run.metrics["train/loss"].steps.tolist() == expected
    assert run.metrics["train/loss"].values.tolist() == [float(x) for _, _, x in lines]
    last = {int(e): int(e) * per_epoch + int(i) for e, i, _ in lines}
    assert run.metrics["eval/loss"].steps.tolist() == [last[int(e)] for e, _ in evals]
    assert run.metrics["eval/loss"].values.tolist() == [float(v) for _, v in evals]
    assert_glued(run, len(evals) - 1, per_epoch, "epoch markers")


def test_keras_like_epoch_header_then_restarting_iterations() -> None:
    _, run, text = read_stdout_fixture("restart_epoch_header.log")
    per_epoch = batches_per_epoch(text)
    expected, values, epoch = [], [], 0
    for line in text.splitlines():
        if header := re.fullmatch(r"Epoch (\d+)/\d+", line):
            epoch = int(header.group(1))
        elif point := re.fullmatch(r"  iter (\d+): loss ([\d.]+)", line):
            expected.append((epoch - 1) * per_epoch + int(point.group(1)))
            values.append(float(point.group(2)))
    assert run.metrics["train/loss"].steps.tolist() == expected
    assert run.metrics["train/loss"].values.tolist() == values
    assert_glued(run, epoch - 1, per_epoch, "epoch markers")


def test_the_pytorch_dcgan_example_print() -> None:
    """`[%d/%d][%d/%d] Loss_D: ...` with the epoch from 0: the first counter is the epoch,
    the second the batch (it was read as a bar at the epoch's position)."""
    _, run, text = read_stdout_fixture("restart_dcgan.log")
    lines = re.findall(
        r"^\[(\d+)/\d+\]\[(\d+)/(\d+)\] Loss_D: ([\d.]+) Loss_G: ([\d.]+)", text, re.M
    )
    assert len(lines) == 48 and lines[0][:2] == ("0", "0")
    expected = [int(e) * int(n) + int(i) for e, i, n, _, _ in lines]
    assert run.metrics["Loss_D"].steps.tolist() == expected == list(range(48))
    assert run.metrics["Loss_D"].values.tolist() == [float(d) for *_, d, _ in lines]
    assert run.metrics["Loss_G"].values.tolist() == [float(g) for *_, g in lines]
    assert run.meta["step_source"] == {"epoch and batch": 48}


def test_a_tqdm_bar_per_epoch_without_an_epoch() -> None:
    """Only the counter's restart and its equal length say a new epoch began."""
    _, run, text = read_stdout_fixture("restart_tqdm_bars.log")
    per_epoch = batches_per_epoch(text)
    expected: dict[int, float] = {}
    bar, previous = -1, per_epoch
    for piece in re.split(r"[\r\n]", text):
        found = re.search(r"\| *(\d+)/(\d+) \[[^]]*loss=([\d.]+)\]", piece)
        if found is None or found.group(1) == "0":
            continue  # a bar at 0/N shows what it showed before
        position = int(found.group(1))
        bar += position < previous
        previous = position
        expected[bar * per_epoch + position] = float(found.group(3))  # the last refresh wins
    assert bar == 2
    assert run.metrics["train/loss"].steps.tolist() == sorted(expected)
    assert run.metrics["train/loss"].values.tolist() == [expected[s] for s in sorted(expected)]
    assert_glued(run, 2, per_epoch, "same maximum")


@pytest.mark.parametrize("name", RESTART_LOGS)
def test_the_same_loop_printed_twice_is_two_runs_each_glued(make_file: MakeFile, name: str) -> None:
    """`python train.py >> train.log` twice: the restart between the runs is not an epoch
    (the epoch goes back, or the loss goes back to where the log started), so the file is
    cut into its two runs, and each is read as the log printed once."""
    text = (STDOUT_DATA / name).read_text(encoding="utf-8")
    once = read_log(STDOUT_DATA / name)
    runs = read_runs(make_file(name, text + text))
    assert [run.meta["appended_runs"] for run in runs] == [2, 2]
    for run in runs:
        assert run.metrics.keys() == once.metrics.keys()
        for metric, series in once.metrics.items():
            assert run.metrics[metric].steps.tolist() == series.steps.tolist(), metric
            assert np.array_equal(run.metrics[metric].values, series.values, equal_nan=True)
    if "step_restarts" in once.meta:
        restarts = once.meta["step_restarts"]["restarts"]
        assert runs[0].meta["step_restarts"]["restarts"] == 2 * restarts + 1
        assert runs[0].meta["step_restarts"]["glued"] == 2 * restarts


def test_the_analysis_sees_every_epoch() -> None:
    """Findings and the curve span the whole run, not the last epoch."""
    analysis = trainspotter.analyze(STDOUT_DATA / "restart_epoch_tag.log")
    steps = analysis.run.metrics["train/loss"].steps
    assert int(steps[0]) == 0 and int(steps[-1]) == 175
    for finding in analysis.findings:
        assert 0 <= finding.step_start <= finding.step_end <= 175


# --- restarts that are not epochs: today's reading kept ----------------------------------


def test_one_restart_without_an_epoch_is_not_glued(make_file: MakeFile) -> None:
    """Two stretches and no epoch: a second run as likely as a second epoch."""
    lines = [f"step {s}: loss {2 - s / 100:.3f}" for s in range(0, 100, 10)] * 2
    run = read_log(make_file("train.log", "\n".join(lines) + "\n"))
    assert "step_restarts" not in run.meta
    assert run.meta["appended_runs"] == 2


def test_a_counter_going_back_less_far_is_a_resume_not_a_restart(make_file: MakeFile) -> None:
    steps = [*range(0, 500, 50), *range(300, 800, 50), *range(600, 1000, 50)]
    text = "".join(f"step {s}: loss {1 / (s + 1):.5f}\n" for s in steps)
    run = read_log(make_file("train.log", text))
    assert "step_restarts" not in run.meta and "appended_runs" not in run.meta
    assert run.metrics["train/loss"].steps.tolist() == list(range(0, 1000, 50))


def test_epochs_that_go_back_cut_runs_where_they_go_back(make_file: MakeFile) -> None:
    """Epochs 1 2 3 then 2 3 (a run resumed at the start of epoch 2): the restart into the
    repeated epoch is not glued; the others are."""
    epochs = [1, 2, 3, 2, 3]
    text = "".join(
        f"[E{e}] step {s} loss {3 - i / 10 - s / 1000:.4f}\n"
        for i, e in enumerate(epochs)
        for s in range(0, 100, 10)
    )
    runs = read_runs(make_file("train.log", text))
    assert runs[0].meta["step_restarts"] == {
        "restarts": 4,
        "glued": 3,
        "period": 100,
        "evidence": "epoch markers",
    }
    assert [run.meta["run_name"] for run in runs] == ["2", "1"]
    assert runs[1].metrics["train/loss"].steps.tolist() == list(range(0, 300, 10))
    assert runs[0].metrics["train/loss"].steps.tolist() == list(range(0, 200, 10))


def test_stretches_of_different_lengths_without_an_epoch_are_not_glued(
    make_file: MakeFile,
) -> None:
    lengths = [100, 300, 200]
    text = "".join(
        f"iter {s}: loss {1 + i:.1f}\n" for i, n in enumerate(lengths) for s in range(0, n, 10)
    )
    run = read_log(make_file("train.log", text))
    assert "step_restarts" not in run.meta


# --- the shapes parsed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "epoch", "batch", "step"),
    [
        ("[E2] step 10 loss 1.5", 2.0, None, 10),
        ("[E 3/5] iter 7 loss 1.5", 3.0, None, 7),
        (
            "[1/5][200/938] Loss_D: 0.5 Loss_G: 2.0 D(x): 0.7 D(G(z)): 0.2 / 0.3",
            1.0,
            (200, 938),
            None,
        ),
        ("[0/25] [12/1563] Loss_D: 1.2 Loss_G: 3.4", 0.0, (12, 1563), None),
        # Not an epoch tag: a word that starts with E, a bracketed count without a batch.
        ("[Eval] step 10 loss 1.5", None, None, 10),
        ("[3/5] step 10 loss 1.5", None, (3, 5), 10),
    ],
)
def test_epoch_tags_parsed(
    line: str, epoch: float | None, batch: tuple[int, int] | None, step: int | None
) -> None:
    progress = parse_progress(line)
    assert progress is not None
    assert (progress.epoch, progress.batch, progress.step) == (epoch, batch, step)


def test_an_epoch_of_zero_written_n_of_m_counts_from_zero(make_file: MakeFile) -> None:
    """`Epoch [0/2], Step [5/10]` then `Epoch [1/2]`: counted from 1, both would be epoch
    0 and the second would overwrite the first."""
    text = "".join(
        f"Epoch [{e}/2], Step [{s}/10], Loss: {2 - e - s / 10:.2f}\n"
        for e in range(2)
        for s in (5, 10)
    )
    run = read_log(make_file("train.log", text))
    assert run.metrics["train/loss"].steps.tolist() == [5, 10, 15, 20]


# --- properties ----------------------------------------------------------------------------


def restart_lines() -> dict[str, list[str]]:
    return {
        name: (STDOUT_DATA / name).read_text(encoding="utf-8").split("\n") for name in RESTART_LOGS
    }


@PROPERTY_SETTINGS
@given(
    name=st.sampled_from(RESTART_LOGS),
    head=st.integers(0, 60),
    keep=st.integers(1, 80),
    dropped=st.lists(st.integers(0, 200), max_size=8),
    foreign=st.lists(st.tuples(st.integers(0, 200), st.sampled_from(RESTART_LOGS)), max_size=6),
    garble=st.lists(st.tuples(st.integers(0, 10**6), st.characters()), max_size=6),
    repeat=st.integers(1, 3),
)
def test_truncated_garbled_interleaved_restarting_logs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    head: int,
    keep: int,
    dropped: list[int],
    foreign: list[tuple[int, str]],
    garble: list[tuple[int, str]],
    repeat: int,
) -> None:
    """A piece of a real restarting log (head and tail cut, lines dropped, lines of other
    logs mixed in, characters replaced, the piece repeated): a well-formed Run or the
    one-line error, and reading by shape and columns gives what the full parse gives."""
    logs = restart_lines()
    lines = logs[name][head : head + keep]
    lines = [line for i, line in enumerate(lines) if i not in set(dropped)]
    for position, other in foreign:
        pool = logs[other]
        lines.insert(position % (len(lines) + 1), pool[position % len(pool)])
    text = "\n".join(lines * repeat)
    chars = list(text)
    for position, char in garble:
        if chars:
            chars[position % len(chars)] = char
    path = tmp_path / "restarts.log"
    path.write_text("".join(chars), encoding="utf-8", errors="replace")
    read_or_reject(path, "stdout")
    try:
        fast = read_log(path, fmt="stdout")
    except trainspotter.InputError:
        return
    assert_same_run(fast, read_in_full(path, monkeypatch))


@PROPERTY_SETTINGS
@given(name=st.sampled_from(RESTART_LOGS), cuts=st.lists(st.integers(1, 40), max_size=12))
def test_lines_added_in_any_pieces_read_alike(name: str, cuts: list[int]) -> None:
    """`watch` adds a growing log's lines a poll at a time: the stretches and the glue do
    not depend on where the pieces break (columns within a piece, lines across)."""
    path = STDOUT_DATA / name
    whole = read_log(path, fmt="stdout")
    lines = [line for block in read_text_lines(path, name) for line in block]
    grown, start = StdoutLines(), 0
    for size in cuts:
        grown.add(lines[start : start + size])
        start += size
    grown.add(lines[start:])
    run = grown.run("stdout", str(path), ReadOptions())
    assert_well_formed(run)
    assert_same_run(run, whole)


@PROPERTY_SETTINGS
@given(
    epochs=st.one_of(
        st.tuples(st.integers(0, 3), st.integers(2, 6)).map(lambda t: list(range(t[0], sum(t)))),
        st.lists(st.integers(0, 6), min_size=1, max_size=6),
    ),
    per_epoch=st.integers(2, 12),
    every=st.integers(1, 4),
    marked=st.booleans(),
)
def test_glued_steps_never_collide(
    make_file: MakeFile, epochs: list[int], per_epoch: int, every: int, marked: bool
) -> None:
    """Any sequence of per-epoch stretches, with or without epoch tags: every metric's
    steps strictly increase (a glue never lays two stretches on one another), and a run
    whose epochs count up one by one is glued into one curve of every printed line."""
    text = "".join(
        (f"[E{e}] " if marked else "") + f"step {s} loss {1 + e + s / 100:.4f}\n"
        for e in epochs
        for s in range(0, per_epoch * every, every)
    )
    runs = read_runs(make_file("train.log", text))
    for run in runs:
        assert_well_formed(run)
    ascending = all(b == a + 1 for a, b in itertools.pairwise(epochs))
    if marked and ascending and len(epochs) > 1:
        assert len(runs) == 1 and len(runs[0].metrics["train/loss"]) == len(epochs) * per_epoch
