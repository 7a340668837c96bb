"""eval_stall: an eval error rate (WER, CER) that never improved on its first evaluation.

A word or character error rate is lower-is-better and bounded (0-1, or 0-100%). One that
stayed mostly wrong at every evaluation is "not learning" (plateau, when the train loss
did not fall) or "no generalisation" (overfitting, when it did), whatever its scale; one
that improves slowly but materially, or converged low before its first evaluation, is not.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from synth import make_run

from trainspotter.detectors import eval_stall
from trainspotter.detectors.overfitting import DETECTOR as OVERFITTING
from trainspotter.detectors.overfitting import OverfittingParams
from trainspotter.detectors.plateau import DETECTOR as PLATEAU
from trainspotter.detectors.plateau import PlateauParams
from trainspotter.model import Finding, Run, Severity

EVAL_STEPS = np.arange(1, 21) * 130
TRAIN_STEPS = np.arange(1, 6) * 500  # logged from after the first evaluation on


def _stuck_wer(scale: float, seed: int = 3) -> np.ndarray:
    """20 evaluations jittering (sd 2.5%, within 1.5 sd) around 93% with no trend; the
    first one sd high, the second a lucky 2.6 sd below it: beyond one pair's noise bound
    (2.33 sd), as one of 19 later evaluations often is by chance."""
    noise = np.clip(np.random.default_rng(seed).normal(0, 1, EVAL_STEPS.size), -1.5, 1.5)
    wer = 93.0 + 2.5 * noise
    wer[0] = 95.5
    wer[1] = wer[0] - 2.6 * 2.5
    return wer * scale / 100.0


def _loud(detector_findings: list[Finding], metric: str) -> list[Finding]:
    return [f for f in detector_findings if f.metric == metric and f.severity >= Severity.WARNING]


def _plateau(run: Run) -> list[Finding]:
    return PLATEAU.detect(run, PlateauParams())


def _overfitting(run: Run) -> list[Finding]:
    return OVERFITTING.detect(run, OverfittingParams())


@pytest.mark.parametrize(("name", "scale"), [("eval/wer", 100.0), ("val_cer", 1.0)])
def test_an_error_rate_mostly_wrong_that_never_improved_is_not_learning(
    name: str, scale: float
) -> None:
    """WER ~93% at all 20 evaluations, a rising train loss logged from after the first
    evaluation: reported by plateau at either scale, and the message quotes the raw first,
    best and last evaluations with their steps."""
    wer = _stuck_wer(scale)
    train = np.array([1.24, 2.03, 2.16, 1.98, 1.79])
    run = make_run({"train/loss": (TRAIN_STEPS, train), name: (EVAL_STEPS, wer)})
    found = _loud(_plateau(run), name)
    assert len(found) == 1, [f.title for f in _plateau(run)]
    message = found[0].message
    best = int(np.argmin(wer))
    for value, step in ((wer[0], EVAL_STEPS[0]), (wer[best], EVAL_STEPS[best])):
        assert re.search(rf"{value:.4g} at (its first evaluation \(step|step) {step}\b", message)
    assert f"its last is {wer[-1]:.4g} (step {EVAL_STEPS[-1]})" in message
    assert "at least half of its" in message
    assert (found[0].step_start, found[0].step_end) == (EVAL_STEPS[0], EVAL_STEPS[-1])


def test_one_lucky_evaluation_among_many_is_no_improvement() -> None:
    """The best of 19 later evaluations of a flat curve beats the first by more than one
    pair's noise bound (2.33 sigma) in a large share of runs; the bound is for the best of
    n - 1 (3.95 sigma for 20), so the flat curve above is judged a stall."""
    run = make_run({"eval/wer": (EVAL_STEPS, _stuck_wer(100.0))})
    stall = eval_stall.never_improved(run, "eval/wer")
    assert stall is not None
    assert stall.noise_sigmas == pytest.approx(3.95, abs=0.01)
    assert eval_stall.pair_noise_sigmas(2) == pytest.approx(2.33, abs=0.01)


def test_a_mostly_wrong_error_rate_while_the_train_loss_fell_is_no_generalisation() -> None:
    """The train loss fell (memorising labels that do not match their inputs) while the CER
    stayed ~0.87: overfitting's "no generalisation", its first fix the labels."""
    cer = _stuck_wer(1.0) * 0.87 / 0.93
    train = np.linspace(2.3, 2.0, TRAIN_STEPS.size)
    run = make_run({"train/loss": (TRAIN_STEPS, train), "val_cer": (EVAL_STEPS, cer)})
    found = _loud(_overfitting(run), "val_cer")
    assert len(found) == 1 and "no generalisation" in found[0].title
    assert found[0].fixes[0].startswith("Check that labels match inputs")
    assert not _loud(_plateau(run), "val_cer")  # overfitting's, not repeated


@pytest.mark.parametrize("scale", [100.0, 1.0])
@pytest.mark.parametrize("seed", range(5))
def test_a_wer_that_improves_slowly_but_materially_is_silent(scale: float, seed: int) -> None:
    """A fine-tune whose WER falls 60% -> 50% over 20 evaluations with 1.5% jitter (a first
    evaluation in the noise, no single later one far below it early on): healthy."""
    rng = np.random.default_rng(100 + seed)
    wer = (np.linspace(60.0, 50.0, EVAL_STEPS.size) + rng.normal(0, 1.5, EVAL_STEPS.size)) * (
        scale / 100.0
    )
    for train in (np.linspace(1.2, 0.8, TRAIN_STEPS.size), np.full(TRAIN_STEPS.size, 1.0)):
        run = make_run({"train/loss": (TRAIN_STEPS, train), "eval/wer": (EVAL_STEPS, wer)})
        assert eval_stall.never_improved(run, "eval/wer") is None
        assert not _loud(_plateau(run) + _overfitting(run), "eval/wer")


@pytest.mark.parametrize("scale", [100.0, 1.0])
def test_a_wer_converged_low_before_its_first_evaluation_is_silent(scale: float) -> None:
    """A WER flat at ~12% from the first evaluation on (learned within the first epoch):
    a stall by the rule, but not mostly wrong, and the train loss is logged only from after
    the first evaluation: nothing says it did not learn."""
    wer = (12.0 + np.random.default_rng(5).normal(0, 0.4, EVAL_STEPS.size)) * scale / 100.0
    for train in (np.linspace(0.5, 0.4, TRAIN_STEPS.size), np.full(TRAIN_STEPS.size, 0.45)):
        run = make_run({"train/loss": (TRAIN_STEPS, train), "eval/wer": (EVAL_STEPS, wer)})
        assert not _loud(_plateau(run) + _overfitting(run), "eval/wer")


SHORT_STEPS = np.arange(6)


def _short_run(eval_loss: np.ndarray) -> Run:
    """Six epochs, a train loss logged from the first evaluation on that falls under 5%
    (flat by the rule): the plateau side judges the eval loss on its own."""
    train = np.linspace(6.90, 6.65, SHORT_STEPS.size)
    return make_run({"train/loss": (SHORT_STEPS, train), "eval/loss": (SHORT_STEPS, eval_loss)})


@pytest.mark.parametrize("drop", [0.001, 0.05, 0.2])
def test_an_eval_loss_better_at_every_evaluation_is_not_not_learning(drop: float) -> None:
    """Six evaluations, each lower than the one before (a straight line; 6.92 -> 6.67 is
    3.6%): learning, if slowly. Too few for the trend test, but an unchanging curve orders
    its evaluations so with chance 1/6! = 1/720, so the rule does not call it a stall."""
    eval_loss = 6.92 - drop * SHORT_STEPS
    run = _short_run(eval_loss)
    assert eval_stall.never_improved(run, "eval/loss") is None
    assert not [f for f in _plateau(run) + _overfitting(run) if f.metric == "eval/loss"]


def test_a_stall_a_little_below_its_first_evaluation_is_worded_as_it_is() -> None:
    """0.70, then 0.69 at five evaluations: no trend, 1.4% better at best. The title does
    not say "never improved" (the best is below the first), the message says the 5% floor
    held it back, and a curve without point-to-point jitter (sigma 0) quotes no noise
    bound of 0."""
    run = _short_run(np.array([0.70, 0.69, 0.69, 0.69, 0.69, 0.69]))
    stall = eval_stall.never_improved(run, "eval/loss")
    assert stall is not None and stall.sigma == 0.0
    (finding,) = [f for f in _plateau(run) if f.metric == "eval/loss"]
    assert (
        finding.title
        == "eval/loss did not improve materially on its first evaluation (not learning)"
    )
    assert "never" not in finding.title + finding.message
    assert (
        "did not improve materially on it: its best, 0.69 at step 1, is lower by only 1.4% of "
        "its first value (0.7), under the 5% an improvement needs;"
    ) in finding.message
    assert "noise 0" not in finding.message and "point-to-point" not in finding.message


def test_a_stall_with_no_evaluation_better_than_the_first_never_improved() -> None:
    """Every later evaluation at or above the first: "never improved" is true, and said."""
    run = _short_run(np.array([0.69, 0.70, 0.69, 0.71, 0.70, 0.70]))
    (finding,) = [f for f in _plateau(run) if f.metric == "eval/loss"]
    assert finding.title == "eval/loss never improved on its first evaluation (not learning)"
    assert "never improved on it: no later evaluation was better;" in finding.message


def test_a_best_held_back_by_the_noise_quotes_the_bound() -> None:
    """20 evaluations jittering ~2.5% around 93% WER, the best 7% below the first: past the
    5% floor, inside the best-of-19 noise bound, which the message quotes with its sigma."""
    wer = _stuck_wer(100.0)
    wer[5] = wer[0] * 0.93
    run = make_run({"eval/wer": (EVAL_STEPS, wer)})
    stall = eval_stall.never_improved(run, "eval/wer")
    assert stall is not None and stall.best_gain_percent >= 5.0
    text = eval_stall.stall_text(stall)
    bound = stall.noise_sigmas * stall.sigma
    assert (
        f"within the noise: an improvement also needs more than {stall.noise_sigmas:.2f}x its "
        f"point-to-point noise {stall.sigma:.3g} ({bound:.3g}), the bound for the best of 19"
    ) in text
    assert "under the 5%" not in text


def test_an_accuracy_stall_is_measured_against_its_distance_to_perfect() -> None:
    """0.90 -> at best 0.902: 2% of the errors left at the first evaluation (1 - 0.9)."""
    accuracy = np.array([0.90, 0.902, 0.899, 0.901, 0.900, 0.9015])
    run = make_run({"eval/accuracy": (SHORT_STEPS, accuracy)})
    stall = eval_stall.never_improved(run, "eval/accuracy")
    assert stall is not None
    assert (
        "its best, 0.902 at step 1, is higher by only 2.0% of its distance to perfect "
        "(1 - 0.9 = 0.1), under the 5% an improvement needs;"
    ) in eval_stall.stall_text(stall)
