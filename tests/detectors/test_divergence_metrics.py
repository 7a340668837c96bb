"""divergence on metrics other than a loss or gradient: a Dice, F1 or accuracy that turns
NaN/Inf after being finite is a warning; its false-positive modes stay silent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synth import decaying_loss, every, make_run

from trainspotter.detectors.divergence import DETECTOR, DivergenceParams
from trainspotter.detectors.divergence.metric_nonfinite import watched
from trainspotter.model import Finding, Run, Severity
from trainspotter.readers import read_log

PARAMS = DivergenceParams()


def _detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def _about(findings: list[Finding], metric: str) -> list[Finding]:
    return [f for f in findings if f.metric == metric]


def _rising_score(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(0.9 - 0.5 * np.exp(-np.arange(n) / 10) + rng.normal(0, 0.01, n), 0, 1)


def test_a_train_metric_that_turns_nan_beside_a_finite_loss_is_a_warning() -> None:
    steps = every(40 * 20, 20, start=19)
    loss = decaying_loss(steps, seed=2)
    dice = _rising_score(steps.size)
    k = 23
    dice[k:] = np.nan
    dice[k + 5] = 0.81  # one finite value among the NaNs: counted as such
    run = make_run({"train/loss": (steps, loss), "train_dice": (steps, dice)})
    (f,) = _about(_detect(run), "train_dice")
    assert f.severity is Severity.WARNING
    assert (f.step_start, f.step_end) == (int(steps[k]), int(steps[-1]))
    points = steps.size - k
    assert f.evidence["first_nonfinite_step"] == int(steps[k])
    assert f.evidence["nonfinite_points"] == points - 1
    assert f.evidence["points_from_first_nonfinite"] == points
    assert f.evidence["loss_stayed_finite"] == "yes"
    assert f.evidence["last_finite_value"] == pytest.approx(dice[k - 1])
    assert f.evidence["last_finite_step"] == int(steps[k - 1])
    assert f"{points - 1} of the {points} logged points from step {steps[k]}" in f.message
    assert "train/loss stayed finite" in f.message and "while the loss stayed finite" in f.title
    assert f.fixes and all(fix[:1].isupper() for fix in f.fixes)


def test_an_eval_metric_is_judged_against_the_eval_loss() -> None:
    steps = np.arange(1, 31) * 100
    f1 = _rising_score(steps.size, seed=1)
    f1[20:24] = np.inf
    eval_loss = decaying_loss(steps, seed=3)
    eval_loss[27] = np.nan  # the eval loss broke too, later and on its own
    train = np.arange(1, 301) * 10
    run = make_run(
        {
            "train/loss": (train, decaying_loss(train, seed=4)),
            "eval/loss": (steps, eval_loss),
            "val_f1": (steps, f1),
        }
    )
    found = _detect(run)
    assert [f.metric for f in found if f.severity is Severity.ERROR] == ["eval/loss"]
    (f,) = _about(found, "val_f1")
    assert f.severity is Severity.WARNING and f.evidence["first_value"] == "+Inf"
    assert f.evidence["loss_stayed_finite"] == "no" and f.evidence["nonfinite_points"] == 4
    assert f.evidence["loss_metrics"] == "eval/loss"
    assert "eval/loss is non-finite at 1 of them" in f.message
    assert "while the loss stayed finite" not in f.title


def test_a_metric_breaking_with_the_loss_is_named_in_the_loss_finding() -> None:
    steps = every(400, 1)
    loss = decaying_loss(steps, seed=5)
    acc = _rising_score(steps.size)
    loss[300:] = np.nan
    acc[301:] = np.nan
    run = make_run({"train/loss": (steps, loss), "train_acc": (steps, acc)})
    (f,) = _detect(run)
    assert f.severity is Severity.ERROR and f.metric == "train/loss"
    assert f.evidence["also_nonfinite"] == "train_acc"


@pytest.mark.parametrize(
    ("case", "values"),
    [
        # Not computed before the first evaluation: a leading NaN run.
        ("leading", [np.nan] * 6 + [0.5, 0.6, 0.7, 0.72, 0.74, 0.75]),
        # One empty batch: NaN once, finite again at the next point.
        ("isolated", [0.5, 0.6, 0.7, np.nan, 0.72, 0.74, 0.75, 0.76, 0.77, 0.78]),
        # Two isolated NaNs far apart.
        ("far apart", [0.5, 0.6, np.nan, 0.7, 0.71, 0.72, 0.73, 0.74, np.nan, 0.75, 0.76]),
        # Never finite: nothing says it was ever computed.
        ("never", [np.nan] * 10),
        # NaN written between evaluations (every 4th log), and at the last log only because
        # the log ends before the next evaluation.
        ("placeholder", [np.nan, np.nan, np.nan, 0.5] * 4 + [np.nan, np.nan]),
    ],
)
def test_not_computed_or_a_lone_nan_is_silent(case: str, values: list[float]) -> None:
    steps = np.arange(1, len(values) + 1) * 10
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps, seed=6)), "val_acc": (steps, values)}
    )
    assert not _about(_detect(run), "val_acc"), case


def test_a_placeholder_grid_that_stops_being_computed_is_reported_at_its_next_evaluation() -> None:
    values = [np.nan, np.nan, np.nan, 0.5] * 4 + [np.nan] * 9
    steps = np.arange(1, len(values) + 1) * 10
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps, seed=7)), "val_acc": (steps, values)}
    )
    (f,) = _about(_detect(run), "val_acc")
    # The last finite value is at index 15; the next evaluation was due at index 19.
    assert f.step_start == int(steps[19]) and f.severity is Severity.WARNING


def test_timing_and_throughput_are_not_read() -> None:
    steps = every(200, 1)
    samples = np.full(steps.size, 512.0)
    samples[0] = np.inf  # a first step timed as 0 s
    samples[100:103] = np.inf
    run = make_run(
        {
            "train/loss": (steps, decaying_loss(steps, seed=8)),
            "throughput": (steps, samples),
            "train/samples_per_second": (steps, samples),
            "eval_runtime": (steps, samples),
        }
    )
    assert not _detect(run)
    for name in ("throughput", "step_time", "epoch", "eval_runtime", "tokens_per_sec"):
        assert not watched(name), name
    for name in ("train_dice", "val_f1", "eval/perplexity", "lr", "val_mean_io_u", "kl_beta"):
        assert watched(name), name


def test_empty_cells_of_a_wandb_history_export_are_absent_not_nan(tmp_path: Path) -> None:
    """W&B's run-history CSV leaves a cell empty where a metric was not logged at that
    step; an empty cell must never read as a NaN metric."""
    rows = ["_step,_runtime,_timestamp,train/loss,val/f1"]
    for step in range(40):
        f1 = f"{0.5 + step / 100:.3f}" if step % 5 == 4 else ""
        rows.append(f"{step},{step + 1.5},{1700000000 + step},{2.0 / (step + 1):.4f},{f1}")
    path = tmp_path / "wandb_export.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    run = read_log(path)
    assert bool(run.metrics["val/f1"].finite.all()) and len(run.metrics["val/f1"]) == 8
    assert not _detect(run)
