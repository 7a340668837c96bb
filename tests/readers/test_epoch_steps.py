"""A step column that starts again at every epoch is counted across epochs (`_epoch_steps`).

The files are written as hand-written loops write them: `csv.writer`, one row per logging
point, `epoch` then the batch index within the epoch as `step`.
"""

from __future__ import annotations

import csv
import io

import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.readers import read_log


def table(header: list[str], rows: list[tuple[float, ...]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def per_epoch_rows(epochs: int, first_epoch: int = 1) -> list[tuple[float, ...]]:
    """Two logging points per epoch at batches 299 and 599, the loss falling."""
    rows = []
    for epoch in range(first_epoch, first_epoch + epochs):
        for batch in (299, 599):
            rows.append((epoch, batch, round(2.0 / (1 + epoch + batch / 600), 4)))
    return rows


@pytest.mark.parametrize("suffix", ["log.csv", "training_log.csv"])
@pytest.mark.parametrize("first_epoch", [0, 1])
def test_a_per_epoch_step_is_counted_across_epochs(
    make_file: MakeFile, suffix: str, first_epoch: int
) -> None:
    rows = per_epoch_rows(50, first_epoch)
    run = read_log(make_file(suffix, table(["epoch", "step", "train_loss"], rows)))
    assert_well_formed(run)
    loss = run.metrics["train/loss"]
    assert len(loss) == 100  # every point kept: none overwritten by a later epoch's
    assert loss.steps.tolist()[:4] == [299, 599, 899, 1199]
    assert loss.values.tolist() == [row[2] for row in rows]
    assert run.meta["steps_per_epoch"] == 600
    assert not run.meta["duplicate_steps"] and not run.meta["backward_steps"]
    assert any("starts again at every new 'epoch'" in note for note in run.notes())


def test_a_resumed_run_is_not_a_per_epoch_counter(make_file: MakeFile) -> None:
    """The step goes back once, with the epoch: a resume, left to the last-wins rule."""
    rows = [(1, 100, 1.0), (1, 200, 0.9), (2, 300, 0.8), (2, 400, 0.7), (2, 300, 0.75)]
    rows += [(2, 400, 0.66), (3, 500, 0.6)]
    run = read_log(make_file("log.csv", table(["epoch", "step", "loss"], rows)))
    assert "steps_per_epoch" not in run.meta
    assert run.metrics["train/loss"].steps.tolist() == [100, 200, 300, 400, 500]


def test_a_global_step_beside_an_epoch_is_left_alone(make_file: MakeFile) -> None:
    """Lightning's layout: the epoch goes up while the step keeps rising."""
    rows = [(e, e * 10 + b, 1.0 / (1 + e * 10 + b)) for e in range(5) for b in (4, 9)]
    run = read_log(make_file("log.csv", table(["epoch", "step", "loss"], rows)))
    assert "steps_per_epoch" not in run.meta
    assert run.metrics["train/loss"].steps.tolist() == [row[1] for row in rows]


def test_a_step_that_drops_inside_an_epoch_is_not_a_per_epoch_counter(
    make_file: MakeFile,
) -> None:
    rows = per_epoch_rows(5)
    rows[3] = (rows[3][0], 100, rows[3][2])  # epoch 2 goes 299 -> 100: not at a new epoch
    rows.insert(4, (2, 50, 0.5))
    run = read_log(make_file("log.csv", table(["epoch", "step", "loss"], rows)))
    assert "steps_per_epoch" not in run.meta


def test_a_fractional_epoch_is_not_a_counter(make_file: MakeFile) -> None:
    rows = [(e + b / 600, b, 1.0 / (2 + e + b)) for e in range(4) for b in (299, 599)]
    run = read_log(make_file("log.csv", table(["epoch", "step", "loss"], rows)))
    assert "steps_per_epoch" not in run.meta
