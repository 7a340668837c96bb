"""divergence on an accuracy-like metric logged outside its range (`metric_range`): an F1
of 1.09 or an accuracy below 0 is a metric bug, a warning; fractions and percentages in
range, and names that only look like a rate, stay silent."""

from __future__ import annotations

import numpy as np
import pytest
from synth import decaying_loss, every, make_run

from trainspotter.detectors import stuck
from trainspotter.detectors.divergence import DETECTOR, DivergenceParams
from trainspotter.detectors.divergence.metric_range import judged
from trainspotter.model import Finding, Run, Severity
from trainspotter.names import is_rate

PARAMS = DivergenceParams()
STEPS = every(30 * 20, 20, start=19)


def _detect(run: Run) -> list[Finding]:
    return [f for f in DETECTOR.detect(run, PARAMS) if "out_of_range_points" in f.evidence]


def _run(**rates: np.ndarray) -> Run:
    loss = decaying_loss(STEPS, seed=3)
    return make_run({"train/loss": (STEPS, loss), **{k: (STEPS, v) for k, v in rates.items()}})


def _score(level: float = 0.9, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = STEPS.size
    return np.clip(level - 0.4 * np.exp(-np.arange(n) / 6) + rng.normal(0, 0.01, n), 0, 1)


def test_an_f1_above_1_is_a_warning_with_its_raw_value_step_and_count() -> None:
    """The partial-batch bug: an epoch mean of per-batch F1s divided by the full batches
    (5 summed, 4 counted) is 1.25x the mean, above 1 once the F1 is above 0.8."""
    f1 = _score() * 5 / 4
    out = np.flatnonzero(f1 > 1)
    run = _run(val_f1=f1)
    (f,) = _detect(run)
    worst = int(np.argmax(f1))
    assert f.detector == "divergence" and f.metric == "val_f1"
    assert f.severity is Severity.WARNING
    assert (f.step_start, f.step_end) == (int(STEPS[out[0]]), int(STEPS[out[-1]]))
    assert f.evidence["value"] == pytest.approx(f1[worst])
    assert f.evidence["step"] == int(STEPS[worst])
    assert f.evidence["out_of_range_points"] == out.size
    assert f.evidence["logged_points"] == STEPS.size
    assert f.evidence["scale"] == "fraction or percentage"  # never above 2: see below
    assert f"val_f1 is {f1[worst]:.4g} at step {STEPS[worst]}, above 1" in f.message
    assert f"at {out.size} of its {STEPS.size} logged points" in f.message
    assert "unreliable" in f.message


def test_a_negative_accuracy_is_out_of_range_on_any_scale() -> None:
    acc = _score()
    acc[7] = -0.125
    (f,) = _detect(_run(train_acc=acc))
    assert f.metric == "train_acc"
    assert f"train_acc is -0.125 at step {STEPS[7]}, below 0" in f.message
    assert "at step" in f.message and f.evidence["out_of_range_points"] == 1


def test_a_percentage_above_100_is_reported_on_the_percent_scale() -> None:
    acc = 100 * _score()
    acc[-3] = 104.5
    (f,) = _detect(_run(val_accuracy=acc))
    assert f.evidence["scale"] == "percentage" and f.evidence["range"] == "[0, 100]"
    assert "104.5" in f.title


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("val_accuracy", _score()),  # a fraction in range
        ("val_accuracy", 100 * _score()),  # a percentage in range
        ("val_acc", np.linspace(0.1, 1.5, STEPS.size)),  # percent rising past 1.5% ...
        ("grad_acc_steps", np.full(STEPS.size, 128.0)),  # settings that borrow a rate word
        ("noise_precision", np.linspace(1, 400, STEPS.size)),  # an inverse variance
        ("precision_bits", np.full(STEPS.size, 16.0)),
        ("acc_reward", np.linspace(-3, 40, STEPS.size)),
        ("train/acc_x", np.linspace(-5, 5, STEPS.size)),
        ("eval/top_accuracy", np.full(STEPS.size, 1.0) + 1e-7),  # float32 round-off of 1
        ("accuracy_gain", _score() - 0.5),  # a difference: may be negative
        ("f1_delta", np.linspace(-0.2, 0.2, STEPS.size)),
        ("auc_logit", np.linspace(-2, 3, STEPS.size)),  # log-odds: any real number
        ("train_dice_loss", np.linspace(1.8, 0.3, STEPS.size)),  # a loss, not a score
        ("grad_accum", np.full(STEPS.size, 4.0)),  # not an accuracy word
    ],
)
def test_in_range_or_not_a_bounded_score_is_silent(name: str, values: np.ndarray) -> None:
    other = {"train_acc": 100 * _score(0.95, seed=1)} if name == "val_acc" else {}
    # ... when its train twin is logged as a percentage.
    assert _detect(_run(**{name: values}, **other)) == []


def test_values_up_to_2_name_both_readings_unless_a_twin_logs_percentages() -> None:
    """A top-1 accuracy in percent, 0.1 -> 1.6 (the first epochs of a 1000-class model),
    is a fraction gone wrong or a percentage below 2%: the warning names both readings and
    does not state the bug as fact."""
    acc = np.linspace(0.1, 1.6, STEPS.size)
    (f,) = _detect(_run(val_acc=acc))
    assert f.severity is Severity.WARNING
    assert f.evidence["scale"] == "fraction or percentage"
    assert f"val_acc is 1.6 at step {STEPS[-1]}, above 1" in f.message
    assert "or a percentage that never reached 2%" in f.title
    assert "As a fraction" in f.message and "As a percentage, 1.6% is in range" in f.message
    assert "No model scores this" not in f.message
    assert "never above 2" in f.message


def test_only_the_metrics_own_twin_sets_the_percent_scale() -> None:
    """A top-5 accuracy in percent says nothing about a top-1 accuracy's scale; its
    train/eval twin does (same name after the side prefix and step/epoch suffixes)."""
    acc = np.linspace(0.1, 1.5, STEPS.size)
    (f,) = _detect(_run(val_acc=acc, val_top5_accuracy=100 * _score(0.95, seed=1)))
    assert f.metric == "val_acc" and f.evidence["scale"] == "fraction or percentage"
    for twin in ("train_acc", "train/acc", "acc_epoch", "train_acc_step"):
        assert _detect(_run(val_acc=acc, **{twin: 100 * _score(0.95, seed=1)})) == [], twin


@pytest.mark.parametrize(
    ("setting", "values"),
    [
        ("grad_acc_steps", np.full(STEPS.size, 8.0)),  # used to make the run "percent"
        ("grad_acc_steps", np.full(STEPS.size, 128.0)),  # used to be a "metric bug" itself
        ("noise_precision", np.linspace(1, 400, STEPS.size)),
    ],
)
def test_a_setting_named_with_a_rate_word_neither_warns_nor_hides_a_real_bug(
    setting: str, values: np.ndarray
) -> None:
    """val_f1 ramping 0.9 -> 1.09 is a metric bug whatever the run's settings are called:
    one warning, on val_f1, read as a fraction (or a percentage below 2%)."""
    f1 = np.linspace(0.9, 1.09, STEPS.size)
    (f,) = _detect(_run(val_f1=f1, **{setting: values}))
    assert f.metric == "val_f1" and f.evidence["range"] == "[0, 1]"
    assert f"val_f1 is 1.09 at step {STEPS[-1]}, above 1" in f.message


def test_the_count_of_logged_points_counts_every_logged_point() -> None:
    """A NaN logged point is a logged point: "k of its N logged points" counts them all,
    and the evidence says how many were finite."""
    f1 = _score() * 5 / 4
    f1[[3, 9]] = np.nan
    out = np.flatnonzero(f1 > 1)
    (f,) = _detect(_run(val_f1=f1))
    assert f"at {out.size} of its {STEPS.size} logged points" in f.message
    assert f.evidence["logged_points"] == STEPS.size
    assert f.evidence["finite_points"] == STEPS.size - 2


def test_rate_names_are_whole_words() -> None:
    for name in ("val_F1_score", "BinaryF1Score", "train_acc_step_epoch", "val_mean_io_u", "auc"):
        assert is_rate(name) and judged(name), name
    for name in ("grad_accum", "accuracy_gain", "f1_delta", "auc_logit", "dice_loss", "acc_sum"):
        assert not judged(name), name
    # Settings and quantities that only borrow a rate word.
    for name in ("grad_acc_steps", "acc_steps", "train/grad_acc", "acc_reward"):
        assert not judged(name), name
    for name in ("noise_precision", "precision_bits", "train/acc_x"):
        assert not judged(name), name
    for name in ("train_acc_step", "val_acc_epoch", "train/acc_step"):  # Lightning suffixes
        assert judged(name), name
    # The shared recogniser: plateau's train-side exact-repeat check reads Keras's IoU too.
    assert stuck.is_train_rate("mean_io_u") and not stuck.is_train_rate("val_mean_io_u")
    assert stuck.is_train_rate("train_dice_loss")  # unchanged: plateau reads a dice loss
