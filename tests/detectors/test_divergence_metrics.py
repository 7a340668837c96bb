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
    assert f.evidence["logged_points"] == points
    assert f.evidence["loss_stayed_finite"] == "yes"
    assert f.evidence["last_finite_value"] == pytest.approx(dice[k - 1])
    assert f.evidence["last_finite_step"] == int(steps[k - 1])
    assert (
        f"from step {steps[k]} to the end of the log (step {steps[-1]}): {points - 1} of the "
        f"{points} logged points there" in f.message
    )
    assert "train/loss stayed finite" in f.message and "while the loss stayed finite" in f.title
    # Undefined on some inputs is common: the message says where to look, not "a bug".
    assert "usually a 0/0" in f.message and "bug" not in f.message
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
    assert (f.step_start, f.step_end) == (int(steps[20]), int(steps[23]))
    assert f.evidence["nonfinite_points"] == 4 and f.evidence["loss_metrics"] == "eval/loss"
    # The eval loss broke after the metric was finite again: judged over the metric's own
    # stretch, it stayed finite.
    assert f.evidence["loss_stayed_finite"] == "yes"
    assert f.evidence["finite_again_step"] == int(steps[24])
    assert f"infinite (+Inf) at steps {steps[20]}-{steps[23]}: all 4 logged points" in f.message
    assert f"finite again from step {steps[24]}" in f.message
    assert "eval/loss stayed finite over those steps" in f.message


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
        # Two isolated NaNs `merge_gap` apart (two empty-mask batches): one stretch, but
        # never two non-finite points in a row.
        ("isolated pair", [0.5, 0.6, 0.7, np.nan, 0.7, 0.71, 0.72, np.nan, 0.73, 0.74, 0.75]),
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
    # Counted in evaluations (two were due, at indices 19 and 23), not in placeholder rows.
    assert f.evidence["nonfinite_points"] == 2 and f.evidence["evaluation_every_steps"] == 40
    assert f"at the 2 scheduled evaluations after step {steps[15]} (one every 40 steps" in f.message
    assert "logged points" not in f.message


def test_epoch_end_evaluations_between_rows_of_another_interval_are_placeholders() -> None:
    """Rows every 50 steps, an evaluation at every epoch end (every 117 steps), NaN in the
    rows between: the finite points are never on one grid of rows, but each is isolated
    and the last is recent. Healthy, silent."""
    steps = np.array(sorted(set(range(50, 1200, 50)) | set(range(117, 1200, 117))))
    acc = np.array([0.5 + 0.3 * s / 1200 if s % 117 == 0 else np.nan for s in steps])
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps, seed=9)), "val_accuracy": (steps, acc)}
    )
    assert not _about(_detect(run), "val_accuracy")


def test_evaluations_missing_in_the_middle_are_counted_in_evaluations() -> None:
    """An evaluation every 4th row; three in a row come out NaN, then it is finite again."""
    values = [np.nan, np.nan, np.nan, 0.5] * 10
    for i in (19, 23, 27):
        values[i] = np.nan
    steps = np.arange(1, len(values) + 1) * 10
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps, seed=10)), "val_acc": (steps, values)}
    )
    (f,) = _about(_detect(run), "val_acc")
    assert (f.step_start, f.step_end) == (int(steps[19]), int(steps[30]))
    assert f.evidence["nonfinite_points"] == 3 and f.evidence["finite_again_step"] == steps[31]
    assert f"at the 3 scheduled evaluations after step {steps[15]}" in f.message


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
    for name in ("it/s", "time/fps", "total_flos", "train/samples_per_second"):
        assert not watched(name), name
    for name in ("train_dice", "val_f1", "eval/perplexity", "lr", "val_mean_io_u", "kl_beta"):
        assert watched(name), name
    # Whole name words, not substrings: no word "time" here, and a "per" not per second.
    for name in ("val_sentiment_f1", "f1_per_class"):
        assert watched(name), name


def test_an_explained_variance_is_nan_by_design_and_not_read() -> None:
    """Stable-Baselines3's explained_variance is 1 - Var(returns - values) / Var(returns):
    NaN whenever a rollout's returns are all equal (a sparse reward never reached)."""
    steps = np.arange(1, 201) * 2048
    ev = np.linspace(-0.5, 0.9, steps.size)
    ev[50:53] = np.nan
    ev[120:140] = np.nan
    run = make_run(
        {
            "train/value_loss": (steps, decaying_loss(steps, seed=11)),
            "train/explained_variance": (steps, ev),
        }
    )
    assert not watched("train/explained_variance") and not watched("explainedVariance")
    assert not _detect(run)


def test_only_the_stretch_that_overlaps_a_loss_incident_is_folded_into_it() -> None:
    """val_f1 NaN at steps 20-30 and 900-910, train/loss NaN at step 500 only: three
    incidents, none overlapping. The loss error is about step 500 alone; val_f1 keeps a
    warning of its own about its first stretch, naming the later one."""
    steps = np.arange(0, 1001, 10)
    loss = decaying_loss(steps, seed=12)
    loss[50] = np.nan
    f1 = _rising_score(steps.size, seed=2)
    f1[[2, 3, 90, 91]] = np.nan
    found = _detect(make_run({"train/loss": (steps, loss), "val_f1": (steps, f1)}))
    (error,) = [f for f in found if f.severity is Severity.ERROR]
    assert error.metric == "train/loss" and (error.step_start, error.step_end) == (500, 500)
    assert error.evidence["nonfinite_points"] == 1 and "also_nonfinite" not in error.evidence
    assert "val_f1" not in error.message
    assert error.fixes[0].startswith("Restart from the last checkpoint before step 500")
    (warning,) = _about(found, "val_f1")
    assert warning.severity is Severity.WARNING
    assert (warning.step_start, warning.step_end) == (20, 30)
    assert warning.evidence["nonfinite_points"] == 2 and warning.evidence["later_stretches"] == 1
    assert "at steps 20-30: both logged points there; finite again from step 40" in (
        warning.message
    )
    assert "non-finite again in 1 later stretch: steps 900-910" in warning.message


def test_a_folded_metric_never_moves_the_loss_incident() -> None:
    """The metric turns NaN a few points before the loss and stays so: it is named in the
    loss's error, which still starts (and restarts) at the loss's first NaN and counts
    non-finite points, not index spans."""
    steps = np.arange(0, 1001, 10)
    loss = decaying_loss(steps, seed=13)
    loss[60] = np.nan
    loss[62:] = np.nan  # one finite point inside: merged, not counted
    acc = _rising_score(steps.size, seed=3)
    acc[58:] = np.nan
    (f,) = _detect(make_run({"train/loss": (steps, loss), "train_acc": (steps, acc)}))
    assert f.severity is Severity.ERROR and f.metric == "train/loss"
    assert f.evidence["also_nonfinite"] == "train_acc"
    assert (f.step_start, f.step_end) == (600, 1000)
    assert f.fixes[0].startswith("Restart from the last checkpoint before step 600")
    loss_points = int(np.isnan(loss).sum())
    acc_points = int(np.isnan(acc).sum())
    assert f.evidence["nonfinite_points"] == loss_points + acc_points


def test_the_loss_is_judged_over_the_metric_stretch_not_to_the_end_of_the_log() -> None:
    """train_dice NaN in pairs from step 100 to 310, finite again after; train/loss NaN from
    step 800 to the end. The dice stretch is its own warning, over its own steps, where the
    loss was finite."""
    steps = np.arange(0, 1001, 10)
    loss = decaying_loss(steps, seed=14)
    loss[80:] = np.nan
    dice = _rising_score(steps.size, seed=4)
    for i in range(10, 32, 3):
        dice[i : i + 2] = np.nan  # NaN, NaN, finite, ...
    found = _detect(make_run({"train/loss": (steps, loss), "train_dice": (steps, dice)}))
    (error,) = [f for f in found if f.severity is Severity.ERROR]
    assert error.step_start == 800 and "also_nonfinite" not in error.evidence
    (f,) = _about(found, "train_dice")
    assert (f.step_start, f.step_end) == (100, 320)
    assert f.evidence["loss_stayed_finite"] == "yes" and f.evidence["until_end_of_log"] == "no"
    nonfinite = int(np.isnan(dice).sum())
    assert f.evidence["nonfinite_points"] == nonfinite and f.evidence["logged_points"] == 23
    assert f"at steps 100-320: {nonfinite} of the 23 logged points there" in f.message
    assert "finite again from step 330" in f.message and "end of the log" not in f.message


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
