"""spikes, runs of raised points: several consecutive points that are each a few noise
sigmas up (none alone at the single-point threshold) are one spike; fewer are not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt
import pytest
from synth import decaying_loss, make_run

from trainspotter.detectors.base import fmt
from trainspotter.detectors.spikes import DETECTOR, SpikesParams
from trainspotter.detectors.spikes.scoring import (
    Curve,
    flagged_points,
    follows_lr_rise,
    recovery_threshold,
)
from trainspotter.model import Finding, Run, Series, Severity

PARAMS = SpikesParams()


def _noisy_loss(seed: int, n: int = 400) -> np.ndarray:
    """A per-batch loss at a level of 0.3 with log-normal noise of 0.35 (natural log): a
    small batch's loss, which moves by a factor of 1.5-2 between batches."""
    rng = np.random.default_rng(seed)
    return 0.3 * np.exp(rng.normal(0.0, 0.35, n))


def _spikes(values: np.ndarray) -> list[Finding]:
    steps = np.arange(values.size)
    return [
        f
        for f in DETECTOR.detect(make_run({"train/loss": (steps, values)}), PARAMS)
        if f.severity >= Severity.WARNING
    ]


# Seeds whose noise leaves the burst's first three points at robust z 4.4-6.3 (measured):
# each under the single-point threshold, all of them over `sustained_z`.
@pytest.mark.parametrize("seed", [2, 3])
def test_five_raised_batches_are_one_spike_though_none_is_an_outlier_alone(seed: int) -> None:
    loss = _noisy_loss(seed)
    loss[250:255] = 0.3 * 8.0  # 8x the level
    found = _spikes(loss)
    assert [(f.step_start, f.step_end) for f in found] == [(250, 254)], found
    assert float(found[0].evidence["robust_z"]) < PARAMS.z_threshold
    assert "No single point reaches robust z 8" in found[0].message


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_raised_batches_are_not_enough(seed: int) -> None:
    loss = _noisy_loss(seed)
    loss[250:252] = 0.3 * 8.0
    assert not _spikes(loss)


def test_a_run_that_holds_an_outlier_is_dated_from_the_outlier() -> None:
    """The run rule only adds bursts the single-point rule misses; a run holding a point at
    the threshold stays that point's episode."""
    z = np.array([np.nan, 5.0, 9.0, 5.0, 5.0, np.nan, 4.5, 4.5, 4.5, np.nan, 4.5, 4.5])
    flagged = flagged_points(z, PARAMS)
    assert (
        flagged.tolist()
        == [False, False, True, False, False, False, True, True, True] + [False] * 3
    )


# --------------------------------------------------------------------------- not bursts
# The reviewer's cases (measured before the fix on 40 seeds: the run rule alone turned
# 5 -> 24 runs with a doubled level into findings, 18 of them errors; 2 -> 11 at 1.7x;
# 1 -> 11 PPO value losses). The run rule must add nothing to what the single-point rule
# reports on any of them.

SINGLE_POINT_ONLY = dataclasses.replace(PARAMS, sustained_points=10**6)


def _added_by_the_run_rule(run: Run) -> list[Finding]:
    """Findings (warning and above) the run rule adds to the single-point rule's."""
    alone = {(f.step_start, f.step_end) for f in DETECTOR.detect(run, SINGLE_POINT_ONLY)}
    return [
        f
        for f in DETECTOR.detect(run, PARAMS)
        if f.severity >= Severity.WARNING and (f.step_start, f.step_end) not in alone
    ]


@pytest.mark.parametrize(("factor", "noise"), [(2.0, 0.12), (1.7, 0.1), (1.6, 0.08)])
def test_a_lasting_level_shift_is_not_a_run_spike(factor: float, noise: float) -> None:
    """A per-batch loss whose level steps up at step 500 and stays (a harder data mixture):
    the first points after the step are each a few sigmas above the 5 before them, but
    the curve never comes back. That is a level shift, divergence's to judge."""
    steps = np.arange(1000)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        level = np.where(steps < 500, 0.5, 0.5 * factor)
        run = make_run({"train/loss": (steps, level * np.exp(rng.normal(0.0, noise, 1000)))})
        assert not _added_by_the_run_rule(run), seed


def test_a_rise_that_relaxes_slowly_is_not_a_run_spike() -> None:
    """A PPO value loss when a new reward regime raises the returns 4x: the critic catches
    up over ~40 updates. It comes back near its level only ~100 updates later, long after
    the raised points faded: no burst."""
    k = np.arange(500) - 250
    bump = np.where(k >= 0, 3.0 * np.minimum(k + 1, 3) / 3 * np.exp(-np.maximum(k - 2, 0) / 40), 0)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        value_loss = 0.05 * (1 + bump) * np.exp(rng.normal(0.0, 0.25, 500))
        run = make_run({"train/value_loss": (np.arange(500) * 2048, value_loss)})
        assert not _added_by_the_run_rule(run), seed


def _sgdr_run(seed: int, with_lr: bool = True) -> Run:
    """A loss under SGDR (restarts every 250 steps): after each restart it rises to 2x over
    2 steps and falls back over ~60 (the reviewer's sgdr.py, amplitude 1, noise 0.1)."""
    steps = np.arange(1000)
    cycle = steps % 250
    lr = 1e-3 * 0.5 * (1 + np.cos(np.pi * cycle / 250))
    bump = np.where(
        steps >= 250, np.minimum(cycle, 2) / 2 * np.exp(-np.maximum(cycle - 2, 0) / 40), 0
    )
    rng = np.random.default_rng(seed)
    loss = (0.4 + 1.6 * np.exp(-steps / 150)) * (1 + bump) * np.exp(rng.normal(0, 0.1, 1000))
    metrics: dict[str, tuple[npt.ArrayLike, npt.ArrayLike]] = {"train/loss": (steps, loss)}
    if with_lr:
        metrics["lr"] = (steps, lr)
    return make_run(metrics)


@pytest.mark.parametrize("with_lr", [True, False], ids=["lr_logged", "no_lr"])
def test_the_rise_after_a_warm_restart_is_not_a_run_spike(with_lr: bool) -> None:
    """Before the fix: 7 -> 14 warnings on these 6 seeds (seed 3: "train/loss spiked at
    steps 501-517" right after the restart lr_schedule reports). Either reason alone
    drops them: the LR just went up, and the rise relaxes slowly."""
    for seed in range(6):
        assert not _added_by_the_run_rule(_sgdr_run(seed, with_lr)), seed


@pytest.mark.parametrize("seed", [2, 3])
def test_a_burst_right_after_an_lr_rise_is_the_schedule(seed: int) -> None:
    """The same five raised batches as above, two steps after the LR went up 10x: the
    loss answering the schedule, not a spike. Without the LR rise they are one."""
    loss = _noisy_loss(seed)
    loss[250:255] = 0.3 * 8.0
    steps = np.arange(loss.size)
    lr = np.where(steps < 248, 1e-4, 1e-3)
    run = make_run({"train/loss": (steps, loss), "lr": (steps, lr)})
    assert not [f for f in DETECTOR.detect(run, PARAMS) if f.severity >= Severity.WARNING]
    flat = make_run({"train/loss": (steps, loss), "lr": (steps, np.full(loss.size, 1e-3))})
    assert [(f.step_start, f.step_end) for f in DETECTOR.detect(flat, PARAMS)] == [(250, 254)]


def test_an_lr_rise_is_a_rise_of_more_than_ten_percent_just_before() -> None:
    steps = np.arange(20)
    rise = Series.build(steps, np.where(steps < 10, 1e-4, 1e-3))[0]
    assert follows_lr_rise(rise, steps, 12)  # up 10x two points before
    assert not follows_lr_rise(rise, steps, 17)  # more than 5 logged points before
    assert not follows_lr_rise(rise, steps, 9)  # not yet
    jitter = Series.build(steps, 1e-3 * (1 + 1e-3 * np.sin(steps)))[0]
    assert not follows_lr_rise(jitter, steps, 12)
    assert not follows_lr_rise(None, steps, 12)


# --------------------------------------------------------------------------- recovery


@pytest.mark.parametrize("seed", [2, 3])
def test_a_run_spike_says_the_level_it_came_down_to(seed: int) -> None:
    """After the burst the loss settles 1.6x above its old level: on a curve this noisy
    (2 sigmas is about 2x) that counts as back, but the message says where it is, relative
    to the level before, and does not say "came back"."""
    loss = _noisy_loss(seed)
    loss[250:255] = 0.3 * 8.0
    loss[255:] *= 1.6
    (f,) = _spikes(loss)
    after, before = float(f.evidence["level_after"]), float(f.evidence["level_before"])
    assert after / before > 1.5
    assert "came back" not in f.message and "recovered" not in f.title
    assert f"the median of the next 5 points is {fmt(after)}, {fmt(after / before)}x" in (f.message)
    assert f"came down to {fmt(after / before)}x the level before" in f.title
    assert "within 2 noise sigmas of it" in f.message


@pytest.mark.parametrize("seed", [2, 3])
def test_a_run_spike_that_came_back_says_how_close(seed: int) -> None:
    loss = _noisy_loss(seed)
    loss[250:255] = 0.3 * 8.0
    (f,) = _spikes(loss)
    after, before = float(f.evidence["level_after"]), float(f.evidence["level_before"])
    assert after / before < 1.5**0.5
    assert f"It came back: from step 255 the median of the next 5 points is {fmt(after)} " in (
        f.message
    )
    assert f"({fmt(after / before)}x the level before)" in f.message
    assert f.title.endswith("and recovered")


def test_a_run_must_come_back_below_half_its_flag_level() -> None:
    """A run was flagged at 4 sigmas and 1.5x: back means within 2 sigmas or sqrt(1.5)x
    (the wider), a single point within 4 sigmas or 1.5x."""
    curve = Curve(
        steps=np.arange(3),
        raw=np.ones(3),
        values=np.zeros(3),
        in_log=True,
        min_jump=math.log10(1.5),
        window=20,
        ends_nonfinite=False,
    )
    assert recovery_threshold(curve, 0.01, True, PARAMS) == pytest.approx(math.log10(1.5) / 2)
    assert recovery_threshold(curve, 0.1, True, PARAMS) == pytest.approx(0.2)
    assert recovery_threshold(curve, 0.01, False, PARAMS) == pytest.approx(math.log10(1.5))
    assert recovery_threshold(curve, 0.1, False, PARAMS) == pytest.approx(0.4)


def test_a_single_point_spike_that_leaves_the_loss_up_says_so() -> None:
    """One point 10x up on a quiet loss (3% noise), after which the loss stays 1.3x up:
    under min_ratio, so "recovered" by the single-point rule, but the message says 1.36x
    and it is not passed off as one hard batch (info)."""
    steps = np.arange(1000)
    loss = decaying_loss(steps, seed=1, noise=0.03)
    loss[600] *= 10
    loss[601:] *= 1.3
    (f,) = DETECTOR.detect(make_run({"train/loss": (steps, loss)}), PARAMS)
    ratio = float(f.evidence["level_after"]) / float(f.evidence["level_before"])
    assert 1.22 < ratio < 1.5
    assert f.severity is Severity.WARNING
    assert f"{fmt(ratio)}x the level before (below the smallest jump that counts" in f.message
    assert "hard batch" not in f.message


def test_a_run_the_log_ends_on_is_info() -> None:
    """Raised points at the very end: a burst and the start of a lasting shift look alike."""
    loss = _noisy_loss(3)
    loss[395:] = 0.3 * 8.0
    found = DETECTOR.detect(make_run({"train/loss": (np.arange(loss.size), loss)}), PARAMS)
    assert [f.severity for f in found] == [Severity.INFO]
    assert "look alike so far" in found[0].message
