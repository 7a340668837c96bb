"""divergence: NaN/Inf episodes, fp16 overflow skips, and sustained rises of a loss."""

from __future__ import annotations

import re

import numpy as np
import pytest
from synth import decaying_loss, every, healthy_noisy_run, make_run, sgdr, warmup_cosine

from trainspotter.detectors.divergence import DETECTOR, DivergenceParams
from trainspotter.model import Finding, Run, Severity

PARAMS = DivergenceParams()


def _detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def _run(steps: np.ndarray, loss: np.ndarray, **extra: np.ndarray) -> Run:
    metrics = {"train/loss": (steps, loss), "lr": (steps, warmup_cosine(steps))}
    metrics.update({name.replace("__", "/"): (steps, v) for name, v in extra.items()})
    return make_run(metrics)


@pytest.mark.parametrize("interval", [1, 50])
def test_nan_loss_is_an_error_at_the_first_nonfinite_step(interval: int) -> None:
    steps = every(20_000 if interval > 1 else 2000, interval)
    loss = decaying_loss(steps, seed=1)
    k = steps.size * 2 // 3
    loss[k:] = np.nan
    grad = np.ones(steps.size)
    grad[k + 1 :] = np.inf
    (f,) = _detect(_run(steps, loss, grad_norm=grad))
    assert f.severity is Severity.ERROR and f.metric == "train/loss"
    assert f.evidence["first_nonfinite_step"] == int(steps[k])
    assert f.step_start == int(steps[k]) and f.step_end == int(steps[-1])
    assert "grad_norm" in f.message and "NaN" in f.title


def test_nan_from_the_first_step_to_the_end_is_one_finding() -> None:
    steps = every(320, 1)
    disc = np.full(steps.size, np.nan)
    disc[0] = 1.6e24
    gen = np.full(steps.size, np.nan)
    run = make_run({"train_disc_loss": (steps, disc), "train_gen_loss": (steps, gen)})
    (f,) = _detect(run)
    assert f.severity is Severity.ERROR and (f.step_start, f.step_end) == (0, 319)
    assert "never finite" in f.message


def test_inf_in_an_eval_loss_is_an_error() -> None:
    steps = every(2000, 1)
    eval_steps = every(2000, 100)
    eval_loss = decaying_loss(eval_steps, seed=2)
    eval_loss[7] = np.inf
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps)), "eval/loss": (eval_steps, eval_loss)}
    )
    (f,) = _detect(run)
    assert f.metric == "eval/loss" and f.severity is Severity.ERROR and "+Inf" in f.title


def test_isolated_fp16_overflow_skips_are_info() -> None:
    # The wild hf/010 pattern: grad_norm NaN at steps 1, 2, 18 and 74, loss finite.
    steps = every(76, 1)[1:]
    grad = np.abs(np.random.default_rng(0).normal(10, 3, steps.size))
    for s in (1, 2, 18, 74):
        grad[s - 1] = np.nan
    found = _detect(_run(steps, decaying_loss(steps, seed=3), grad_norm=grad))
    assert [(f.step_start, f.step_end) for f in found] == [(1, 2), (18, 18), (74, 74)]
    assert all(f.severity is Severity.INFO and f.metric == "grad_norm" for f in found)


def test_frequent_overflow_skips_are_a_warning() -> None:
    steps = every(200, 1)
    grad = np.ones(steps.size)
    grad[::5] = np.nan  # every fifth step skipped: 20%
    found = _detect(_run(steps, decaying_loss(steps, seed=4), grad_norm=grad))
    assert found and all(f.severity is Severity.WARNING for f in found)


def test_persistent_nonfinite_gradient_is_an_error() -> None:
    steps = every(500, 1)
    grad = np.ones(steps.size)
    grad[300:] = np.nan
    (f,) = _detect(_run(steps, decaying_loss(steps, seed=5), grad_norm=grad))
    assert f.severity is Severity.ERROR and f.step_start == 300


@pytest.mark.parametrize(("interval", "seed"), [(1, 0), (10, 1), (50, 2)])
def test_a_loss_rising_to_the_end_is_an_error_from_where_it_turned(
    interval: int, seed: int
) -> None:
    steps = every(20_000, interval)
    loss = decaying_loss(steps, seed=seed, noise=0.03)
    turn = steps.size * 6 // 10
    growth = np.exp(np.linspace(0.0, 2.0, steps.size - turn))  # x7 by the end
    loss[turn:] = loss[turn:] * growth
    (f,) = _detect(_run(steps, loss))
    assert f.severity is Severity.ERROR and f.metric == "train/loss"
    # Tolerance: 5% of the run around the turning point.
    assert abs(f.step_start - int(steps[turn])) <= 0.05 * 20_000
    assert f.step_end == int(steps[-1]) and f.fixes


def test_a_climb_that_comes_back_is_a_warning() -> None:
    steps = every(600, 1)
    loss = decaying_loss(steps, seed=6, noise=0.05)
    bump = np.exp(3.0 * np.exp(-(((steps - 330) / 60.0) ** 2)))  # up to x20, back by ~450
    (f,) = _detect(_run(steps, loss * bump))
    assert f.severity is Severity.WARNING
    assert 200 <= f.step_start <= 330 <= f.step_end <= 480


def test_a_loss_rising_after_warm_restarts_is_not_a_divergence() -> None:
    steps = every(2000, 1)
    lr = sgdr(steps, period=500)
    # Each restart lifts the loss x3 and it decays again within the cycle.
    phase = (steps % 500) / 500.0
    loss = decaying_loss(steps, seed=7) * (1.0 + 2.0 * np.exp(-phase * 8.0) * (steps >= 500))
    run = make_run({"train/loss": (steps, loss), "lr": (steps, lr)})
    assert [f for f in _detect(run) if f.severity >= Severity.WARNING] == []


def test_a_rising_component_loss_next_to_a_falling_total_is_a_warning() -> None:
    steps = every(3000, 1)
    total = decaying_loss(steps, seed=8)
    term = decaying_loss(steps, seed=9, start=0.05, floor=0.05) * np.linspace(1.0, 3.0, steps.size)
    run = make_run({"train/loss": (steps, total), "omega_loss": (steps, term)})
    (f,) = _detect(run)
    assert f.metric == "omega_loss" and f.severity is Severity.WARNING
    assert "loss weights" in f.message


def test_eval_loss_rising_while_train_falls_is_left_to_overfitting() -> None:
    steps = every(2000, 1)
    eval_steps = every(2000, 50)
    eval_loss = 0.5 + 0.3 * (eval_steps / 2000.0) ** 2
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps)), "eval/loss": (eval_steps, eval_loss)}
    )
    assert _detect(run) == []


def test_scale_does_not_matter() -> None:
    steps = every(4000, 1)
    for scale in (1e-4, 1e4):
        loss = decaying_loss(steps, seed=10) * scale
        loss[2500:] *= np.exp(np.linspace(0.0, 3.0, steps.size - 2500))
        (f,) = _detect(_run(steps, loss))
        assert f.severity is Severity.ERROR


def test_short_runs_abstain_from_the_trend_test() -> None:
    steps = every(12, 1)
    assert _detect(_run(steps, np.linspace(1.0, 5.0, steps.size))) == []


def test_false_alarm_rate_on_healthy_noisy_runs() -> None:
    # Measured: 0 of 200 seeds warn (100% silent).
    loud = sum(
        any(f.severity >= Severity.WARNING for f in _detect(healthy_noisy_run(seed)))
        for seed in range(200)
    )
    assert (200 - loud) / 200 >= 0.99, loud


def _climb_into_inf() -> tuple[np.ndarray, np.ndarray, int, int]:
    """A decaying loss, then an exponential climb from step 300 that overflows at step 380."""
    steps = every(400, 1)
    loss = decaying_loss(steps, seed=21)
    onset, blowup = 300, 380
    loss[onset:blowup] *= 10.0 ** (0.5 * np.arange(1, blowup - onset + 1))
    loss[blowup:] = np.inf
    return steps, loss, onset, blowup


def test_a_climb_into_inf_is_dated_from_its_onset_with_the_observed_rise() -> None:
    steps, loss, onset, blowup = _climb_into_inf()
    (f,) = _detect(_run(steps, loss))
    assert f.evidence["first_nonfinite_step"] == blowup
    # Tolerance: the climb is clear within a few steps of where it began.
    assert onset <= f.step_start <= onset + 5
    assert f.evidence["climb_from_step"] == f.step_start
    assert f"climbing since step {f.step_start}," in f.message
    # The level it rose from is smoothed: called so, with the logged points it is a median of.
    assert "its minimum" not in f.message
    quoted, logged_median = _quoted_window(f.message, steps, loss)
    assert quoted == pytest.approx(float(f.evidence["climb_from_level"]), rel=1e-3)
    assert quoted == pytest.approx(logged_median, rel=0.05)
    # The restart goes before the onset, not merely before the first Inf.
    assert f"checkpoint before step {f.step_start} " in f.fixes[0]
    # The size is what was observed: the last finite value over the level it rose from.
    ratio = float(loss[blowup - 1]) / float(f.evidence["climb_from_level"])
    assert float(f.evidence["rise_factor"]) == pytest.approx(ratio)
    assert f"x{ratio:.4g} by step {blowup - 1}" in f.message
    # Trend statistics next to an overflow read as weak evidence: evidence only.
    assert "p=" not in f.message and "tau" not in f.message and "Theil-Sen" not in f.message
    assert "mann_kendall_p" in f.evidence


def test_a_drift_reports_the_observed_rise_not_the_slope_times_the_span() -> None:
    steps = every(4000, 1)
    loss = decaying_loss(steps, seed=22, noise=0.03)
    # Rises tenfold by the end, fast at first: a straight line in log space (Theil-Sen
    # slope x span) misjudges a curved climb, so the message gives end over minimum.
    loss[2000:] *= 10.0 ** np.sqrt((steps[2000:] - 2000) / 2000.0)
    (f,) = _detect(_run(steps, loss))
    factor = float(f.evidence["end_level"]) / float(f.evidence["min_level"])
    assert float(f.evidence["rise_factor"]) == pytest.approx(factor)
    assert 3.0 <= factor <= 15.0
    assert f"; x{factor:.4g} from the smoothed minimum)" in f.message
    assert "Theil-Sen" not in f.message
    assert f"rising since step {f.step_start}," in f.message


_SPAN = re.compile(
    r"smoothed minimum (\S+) at step (\d+) \(a rolling median over the (\d+) points "
    r"logged at steps (\d+)-(\d+)\)"
)


def _quoted_window(message: str, steps: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """The smoothed minimum a message quotes, and the median of the logged values over the
    steps it says that rolling median spans (after checking the count it gives)."""
    match = _SPAN.search(message)
    assert match is not None, message
    quoted, step, count, first, last = match.groups()
    inside = (steps >= int(first)) & (steps <= int(last))
    assert int(first) <= int(step) <= int(last)
    assert int(count) == int(np.count_nonzero(inside))
    return float(quoted), float(np.median(values[inside]))


@pytest.mark.parametrize("points", [300, 1000])
def test_a_drift_calls_its_smoothed_levels_smoothed_and_quotes_the_last_logged_value(
    points: int,
) -> None:
    """A loss ramping 0.05 -> 1 from its first step: the rolling median at step 0 (0.0675
    over 8 points for 300) is not the logged 0.05 there, so the message calls it smoothed
    and names the steps it spans, whose logged median it is (1000 points: a rolling median
    of 3-point block medians); the end is quoted raw at the last step."""
    steps = np.arange(points) * 10
    loss = np.linspace(0.05, 1.0, points)
    run = make_run({"train/loss": (steps, loss)})
    (f,) = [f for f in _detect(run) if "drifting upward" in f.title]
    assert "its minimum" not in f.message
    quoted, logged_median = _quoted_window(f.message, steps, loss)
    assert quoted == pytest.approx(logged_median, rel=5e-3)
    assert quoted == pytest.approx(float(f.evidence["min_level"]), rel=1e-3)
    assert quoted > 1.2 * loss[0]  # not the logged value at step 0
    assert f"it ends at a smoothed {float(f.evidence['end_level']):.4g} (the median of the " in (
        f.message
    )
    assert f"its last logged value {loss[-1]:.4g} at step {steps[-1]}." in f.message


def test_a_transient_climb_names_the_window_of_its_smoothed_minimum() -> None:
    """The bump of `test_a_climb_that_comes_back_is_a_warning`: 600 points, decimated to
    300 block medians of 2, a rolling median over 15 of them spans 30 logged points; the
    median of medians is within the noise of those points' median."""
    steps = every(600, 1)
    loss = decaying_loss(steps, seed=6, noise=0.05)
    bump = np.exp(3.0 * np.exp(-(((steps - 330) / 60.0) ** 2)))
    (f,) = _detect(_run(steps, loss * bump))
    assert f.message.startswith("train/loss (smoothed) climbed from")
    quoted, logged_median = _quoted_window(
        f.message.replace("(smoothed) climbed from", "smoothed minimum"), steps, loss * bump
    )
    assert quoted == pytest.approx(logged_median, rel=0.02)


def test_the_lr_note_of_a_drift_names_the_steps_of_its_lr_values() -> None:
    steps = every(4000, 1)
    loss = decaying_loss(steps, seed=22, noise=0.03)
    loss[2000:] *= 10.0 ** np.sqrt((steps[2000:] - 2000) / 2000.0)
    lr = np.where(steps < 2000, 1e-3, np.linspace(1e-3, 1e-2, steps.size))
    run = make_run({"train/loss": (steps, loss), "lr": (steps, lr)})
    (f,) = [f for f in _detect(run) if "drifting upward" in f.title]
    match = re.search(
        r"The LR rose over the same stretch \((\S+) at step (\d+) -> (\S+) at step (\d+)\)",
        f.message,
    )
    assert match is not None, f.message
    first, first_step, last, last_step = match.groups()
    at = {int(s): v for s, v in zip(steps, lr, strict=True)}
    assert float(first) == pytest.approx(at[int(first_step)], rel=1e-3)
    assert float(last) == pytest.approx(at[int(last_step)], rel=1e-3)
