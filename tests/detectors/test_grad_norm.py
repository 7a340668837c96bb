"""grad_norm: explosions (jumps and climbs), error escalation, clipping saturation."""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt
import pytest
import synth

from trainspotter import names
from trainspotter.detectors.grad_norm import DETECTOR, GradNormParams, explosion
from trainspotter.model import Finding, FloatArray, Run, Severity

PARAMS = GradNormParams()


def detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def noisy_norms(
    steps: npt.NDArray[np.int64], *, level: float = 1.0, spread: float = 0.3, seed: int = 0
) -> FloatArray:
    """Healthy pre-clip norms: log-normal around a slowly decaying level."""
    return synth.decaying_loss(steps, start=3 * level, floor=level, noise=spread, seed=seed)


def run_with(
    steps: npt.NDArray[np.int64], norms: FloatArray, loss: FloatArray | None = None
) -> Run:
    if loss is None:
        loss = synth.decaying_loss(steps, seed=1)
    return synth.make_run({names.GRAD_NORM: (steps, norms), names.TRAIN_LOSS: (steps, loss)})


def one_jump(every: int) -> tuple[npt.NDArray[np.int64], FloatArray, int]:
    """Healthy norms logged every `every` steps with one 30x jump half way: steps, norms,
    the jump's step."""
    steps = synth.every(100 * every * 20, every, start=every)
    norms = noisy_norms(steps)
    k = int(steps[len(steps) // 2])
    norms[steps == k] *= 30
    return steps, norms, k


@pytest.mark.parametrize("every", [1, 50])
def test_a_jump_is_a_warning_at_its_step(every: int) -> None:
    """With no loss logged, nothing says the jump was harmless: a warning."""
    steps, norms, k = one_jump(every)
    [finding] = detect(synth.make_run({names.GRAD_NORM: (steps, norms)}))
    assert finding.severity is Severity.WARNING
    assert finding.step_start == finding.step_end == k
    assert float(finding.evidence["ratio"]) > 10 and float(finding.evidence["z"]) >= 6


@pytest.mark.parametrize("every", [1, 50])
def test_a_jump_while_the_loss_keeps_falling_is_info(every: int) -> None:
    """Issue 10 class 3: a gradient spike the loss shrugs off is at most info, said so."""
    steps, norms, k = one_jump(every)
    [finding] = detect(run_with(steps, norms))
    assert finding.severity is Severity.INFO
    assert finding.step_start == finding.step_end == k
    assert "did not react" in finding.message


def test_a_jump_before_a_loss_blow_up_is_an_error() -> None:
    steps = synth.every(2001, 1, start=1)
    norms = noisy_norms(steps)
    loss = synth.decaying_loss(steps, seed=1)
    norms[1000:1004] *= 40
    loss[1003:1040] *= 20  # the loss blows up three steps later and stays up
    [finding] = detect(run_with(steps, norms, loss))
    assert finding.severity is Severity.ERROR
    assert finding.step_start == 1001
    assert "blew up" in finding.message


def test_a_loss_spike_on_the_same_step_that_recovers_is_not_a_blow_up() -> None:
    # One corrupted batch: norm and loss spike together and are back at the next step.
    steps = synth.every(2001, 1, start=1)
    norms = noisy_norms(steps)
    loss = synth.decaying_loss(steps, seed=1)
    norms[1000] *= 30
    loss[1000] *= 50
    [finding] = detect(run_with(steps, norms, loss))
    assert finding.severity is Severity.WARNING


def test_nonfinite_loss_after_an_explosion_is_an_error() -> None:
    steps = synth.every(1001, 1, start=1)
    norms = noisy_norms(steps)
    loss = synth.decaying_loss(steps, seed=1)
    norms[600:] *= np.logspace(0.5, 6, 400)
    loss[620:] = np.nan
    [finding] = detect(run_with(steps, norms, loss))
    assert finding.severity is Severity.ERROR
    assert abs(finding.step_start - 601) <= 3
    assert "non-finite" in finding.message


def test_the_rolling_mad_fallback_agrees_with_gathered_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = synth.every(3001, 1, start=1)
    norms = noisy_norms(steps)
    norms[2000] *= 30
    run = run_with(steps, norms)
    [gathered] = detect(run)
    monkeypatch.setattr(explosion, "MAX_GATHERED", 0)
    [rolling] = detect(run)
    assert gathered.step_start == rolling.step_start == 2001
    assert float(rolling.evidence["z"]) >= 6


def test_a_steady_climb_is_dated_from_where_it_took_off() -> None:
    # zero_grad() dropped: gradients accumulate and the norm climbs ~4% per step.
    steps = synth.every(601, 1, start=1)
    norms = noisy_norms(steps, spread=0.2)
    norms[300:] *= 1.04 ** np.arange(300)
    [finding] = detect(run_with(steps, norms))
    # Tolerance: the norm must first double against its baseline (~18 steps at 4%/step,
    # blurred by the noise).
    assert 301 <= finding.step_start <= 330
    assert finding.step_end == 600


@pytest.mark.parametrize("every", [1, 10, 200])
def test_healthy_noisy_norms_are_silent(every: int) -> None:
    steps = synth.every(200 * max(every, 10) + 1, every, start=every)
    assert detect(run_with(steps, noisy_norms(steps, spread=0.4, seed=every))) == []


def test_pre_clip_norms_above_the_clip_value_are_normal() -> None:
    # transformers logs the norm before clipping: it exceeds max_grad_norm=1.0 often.
    steps = synth.every(3001, 1, start=1)
    norms = noisy_norms(steps, level=0.8, spread=0.35)
    assert (norms > 1.0).mean() > 0.2
    assert detect(run_with(steps, norms)) == []


def test_post_clip_norm_pinned_at_the_clip_value() -> None:
    steps = synth.every(2001, 1, start=1)
    raw = noisy_norms(steps, level=1.5, spread=0.3)
    clipped = np.minimum(raw, 1.0)
    [finding] = detect(run_with(steps, clipped))
    assert finding.severity is Severity.WARNING
    assert finding.evidence["clip_value"] == 1.0
    assert float(finding.evidence["saturated_fraction"]) > 0.5
    assert "pinned" in finding.title
    # Clipping active on a minority of steps: normal.
    occasionally = np.minimum(noisy_norms(steps, level=0.5, spread=0.3), 1.0)
    assert detect(run_with(steps, occasionally)) == []


def test_bf16_quantised_norms_do_not_look_saturated() -> None:
    steps = synth.every(1501, 25, start=25)
    norms = noisy_norms(steps, level=3.0, spread=0.3)
    # bf16 keeps 8 significant bits: round the mantissa to 1/128.
    mantissa, exponent = np.frexp(norms)
    quantised = np.ldexp(np.round(mantissa * 256) / 256, exponent)
    assert detect(run_with(steps, quantised)) == []


def test_fp16_scaled_norms_with_loss_scale_changes_are_silent() -> None:
    # Norms of scaled gradients: ~1e5 whatever the loss; torch's GradScaler halves the
    # scale on an overflow and doubles it after 2000 clean steps.
    steps = synth.every(20001, 10, start=10)
    overflow = np.random.default_rng(5).random(20001) < 1 / 1500
    scale, clean, history = 1.0, 0, np.empty(20001)
    for step in range(20001):
        clean += 1
        if overflow[step]:
            scale, clean = scale / 2, 0
        elif clean == 2000:
            scale, clean = scale * 2, 0
        history[step] = scale
    norms = noisy_norms(steps, level=1e5, spread=0.2) * history[steps]
    assert detect(run_with(steps, norms)) == []


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_scale_free(scale: float) -> None:
    steps = synth.every(2001, 1, start=1)
    norms = noisy_norms(steps, level=scale)
    assert detect(run_with(steps, norms)) == []
    norms = norms.copy()  # Series.build froze the array it was given
    norms[1500] *= 25
    [finding] = detect(run_with(steps, norms))
    assert finding.step_start == 1501


def test_short_nonfinite_and_duplicate_inputs() -> None:
    assert detect(run_with(np.arange(8), np.array([1, 1, 1, 1, 1, 1, 1, 50.0]))) == []
    steps = synth.every(2001, 1, start=1)
    norms = noisy_norms(steps)
    norms[::37] = np.nan  # fp16 overflow steps skipped by the scaler: left to divergence
    norms[::53] = 0.0
    assert detect(run_with(steps, norms)) == []
    dup_steps = np.concatenate((steps, steps[500:520]))
    dup = np.concatenate((noisy_norms(steps), noisy_norms(steps)[500:520]))
    assert detect(run_with(dup_steps, dup, synth.decaying_loss(dup_steps))) == []


def test_false_alarm_rate_on_healthy_norms() -> None:
    """Measured: 200/200 seeds silent (100%) over spreads, levels and logging intervals;
    the requirement is >= 99%."""
    silent = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        every = int(rng.choice([1, 5, 50, 200]))
        steps = synth.every(int(rng.choice([300, 2000, 5000])) * every + 1, every, start=every)
        spread = float(rng.choice([0.1, 0.2, 0.4]))
        norms = noisy_norms(steps, level=float(10 ** rng.uniform(-2, 2)), spread=spread, seed=seed)
        loss = synth.decaying_loss(steps, noise=float(rng.choice([0.02, 0.1])), seed=seed + 1)
        silent += not any(
            f.severity >= Severity.WARNING for f in detect(run_with(steps, norms, loss))
        )
    assert silent / 200 >= 0.99


def test_a_million_points_in_well_under_a_second() -> None:
    steps = np.arange(1, 1_000_001)
    rng = np.random.default_rng(0)
    norms = np.exp(rng.normal(0.0, 0.3, steps.size))
    norms[700_000] = 100.0
    run = run_with(steps, norms, 0.3 + 2.0 * np.exp(-steps / 2e5))
    # CPU time of this process: the machine may be shared with other jobs.
    started = time.process_time()
    [finding] = detect(run)
    assert time.process_time() - started < 1.0
    assert finding.step_start == 700_001


def test_a_steady_climb_reports_its_growth_and_no_z() -> None:
    steps = synth.every(601, 1, start=1)
    norms = noisy_norms(steps, spread=0.2)
    norms[300:] *= 1.04 ** np.arange(300)
    [finding] = detect(run_with(steps, norms))
    # Flagged by the climb test, which has no z: none is printed or put in evidence.
    assert "z" not in finding.evidence and "steady climb" in str(finding.evidence["flagged_by"])
    assert "robust z" not in finding.message and "steady climb" in finding.message
    ratio = float(finding.evidence["peak_value"]) / float(finding.evidence["baseline_median"])
    assert f"({ratio:.3g}x;" in finding.message
    assert "lowest of its" in finding.message


def test_a_one_point_jump_says_so_in_the_singular() -> None:
    steps = synth.every(2001, 1, start=1)
    norms = noisy_norms(steps)
    norms[1000] *= 30
    [finding] = detect(run_with(steps, norms))
    assert finding.evidence["points"] == 1
    assert "robust z" in finding.message and "points)" not in finding.message
