"""loss_floor: a heuristic for a loss too low too early, or train and eval both ~0."""

from __future__ import annotations

import numpy as np
from synth import decaying_loss, every, healthy_noisy_run, make_run

from trainspotter.detectors.loss_floor import DETECTOR, LossFloorParams
from trainspotter.model import Finding, Run, Severity

PARAMS = LossFloorParams()


def _detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def test_collapse_within_the_first_percent_is_flagged_and_labelled_a_heuristic() -> None:
    steps = every(10_000, 1)
    loss = decaying_loss(steps, start=2.3, floor=1e-4, tau=30, seed=1)  # ~0 by step 300
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert f.severity is Severity.WARNING
    assert f.title.startswith("Heuristic") and f.message.startswith("Heuristic")
    assert f.step_start == 0 and f.step_end <= 500
    assert float(f.evidence["early_low"]) <= 1e-3


def test_thousand_fold_drop_of_a_large_vocabulary_loss() -> None:
    steps = every(20_000, 10)
    loss = decaying_loss(steps, start=10.8, floor=0.005, tau=100, seed=2)
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert f.evidence["rule"] in ("absolute floor", "thousand-fold drop")


def test_train_and_eval_both_near_zero_is_flagged_late_too() -> None:
    steps = every(1000, 1)
    eval_steps = every(1000, 25)
    train = decaying_loss(steps, start=4.3, floor=4e-4, tau=60, seed=3)
    evals = decaying_loss(eval_steps, start=4.0, floor=6e-4, tau=60, seed=4, noise=0.01)
    run = make_run({"train/loss": (steps, train), "eval/loss": (eval_steps, evals)})
    (f,) = _detect(run)
    assert "eval/loss" in f.title and f.step_end == 999
    assert 200 <= f.step_start <= 900


def test_memorising_the_training_set_alone_is_not_flagged() -> None:
    steps = every(2000, 5)
    eval_steps = every(2000, 20)
    train = decaying_loss(steps, start=3.0, floor=2e-4, tau=300, seed=5)
    evals = decaying_loss(eval_steps, start=3.0, floor=0.3, tau=300, seed=6, noise=0.01)
    run = make_run({"train/loss": (steps, train), "eval/loss": (eval_steps, evals)})
    assert _detect(run) == []


def test_a_small_scale_regression_loss_is_not_flagged() -> None:
    steps = every(2000, 1)
    loss = decaying_loss(steps, start=2e-3, floor=1e-4, tau=50, seed=7)
    assert _detect(make_run({"train/loss": (steps, loss)})) == []


def test_a_huge_initial_regression_loss_falling_fast_is_not_flagged() -> None:
    steps = every(2000, 1)
    loss = decaying_loss(steps, start=1e4, floor=5.0, tau=20, seed=8)
    assert _detect(make_run({"train/loss": (steps, loss)})) == []


def test_one_lucky_batch_is_not_enough() -> None:
    steps = every(5000, 1)
    loss = decaying_loss(steps, seed=9)
    loss[50] = 1e-5
    assert _detect(make_run({"train/loss": (steps, loss)})) == []


def test_short_runs_abstain() -> None:
    steps = every(6, 1)
    assert (
        _detect(make_run({"train/loss": (steps, np.array([2.3, 1e-5, 1e-5, 1e-5, 1e-5, 1e-5]))}))
        == []
    )


def test_false_alarm_rate_on_healthy_noisy_runs() -> None:
    # Measured: 0 of 200 seeds warn.
    loud = sum(bool(_detect(healthy_noisy_run(seed))) for seed in range(200))
    assert (200 - loud) / 200 >= 0.99, loud


def test_a_regression_loss_fitting_to_near_zero_is_not_a_leak() -> None:
    """An MSE on normalised targets starts near their variance (0.1-0.5) and a good fit takes
    train and eval below 1e-4 together (wild2 lightning/022, csv/048: both judged healthy
    in that respect): below a cross-entropy's starting scale there is nothing to judge by."""
    steps = every(1500, 1)
    eval_steps = every(1500, 15)
    train = decaying_loss(steps, start=0.26, floor=3e-5, tau=40, seed=10)
    evals = decaying_loss(eval_steps, start=0.03, floor=4e-5, tau=40, seed=11, noise=0.01)
    assert _detect(make_run({"train/loss": (steps, train), "eval/loss": (eval_steps, evals)})) == []
    named = decaying_loss(steps, start=2.0, floor=1e-5, tau=8, seed=12)
    assert _detect(make_run({"train_mse_loss": (steps, named)})) == []
    # The same collapse from a cross-entropy's start is still flagged.
    assert _detect(make_run({"train/loss": (steps, named)}))
