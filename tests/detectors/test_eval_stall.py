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
