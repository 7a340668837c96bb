"""spikes, the end of the log (`spikes.end`): the last logged points, which nothing after
them can show coming back.

Before the rule a metric shorter than `min_points` (a 10-epoch log) was never judged at its
last point (the neighbour rule needs a point after it), and a long per-batch loss whose last
logged batch was a heavy-tailed outlier was a warning like any episode too close to the end.
"""

from __future__ import annotations

import numpy as np
import pytest
from synth import decaying_loss, every, make_run

from trainspotter.detectors import stats
from trainspotter.detectors.spikes import DETECTOR, SpikesParams
from trainspotter.detectors.spikes.end import end_episode
from trainspotter.detectors.spikes.scoring import Curve, spike_scores
from trainspotter.model import Finding, FloatArray, Run, Severity
from trainspotter.names import EVAL_LOSS, TRAIN_LOSS

PARAMS = SpikesParams()


def _detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def _short_eval(last: float, seed: int = 3, n: int = 10) -> tuple[FloatArray, FloatArray]:
    """An eval loss over n epochs: falls from ~0.3 to ~0.03 with 30% jitter, then `last`."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1, dtype=np.int64)
    clean = 0.03 + 0.27 * np.exp(-(steps - 1) / 2.0)
    values = clean * np.exp(rng.normal(0.0, 0.3, n))
    values[-1] = last
    return steps, values


def _short_run(last: float, seed: int = 3) -> tuple[Run, FloatArray, FloatArray]:
    steps, values = _short_eval(last, seed)
    train = 0.02 + 0.8 * np.exp(-(steps - 1) / 1.5)
    return make_run({EVAL_LOSS: (steps, values), TRAIN_LOSS: (steps, train)}), steps, values


def test_a_short_eval_loss_that_jumps_at_its_last_evaluation_is_a_warning() -> None:
    run, steps, values = _short_run(last=0.3)
    (f,) = [f for f in _detect(run) if f.metric == EVAL_LOSS]
    assert f.severity is Severity.WARNING
    assert (f.step_start, f.step_end) == (10, 10)
    assert f.evidence["rule"] == "end_of_log" and f.evidence["recovered"] == "unknown"
    assert "last logged point" in f.title
    assert "It is the last logged point: nothing after it can show" in f.message
    assert "final checkpoint may be worse than an earlier one" in f.message
    best = int(np.argmin(values[:-1]))
    assert f.evidence["best_earlier_step"] == int(steps[best])
    assert f"at step {int(steps[best])}." in f.message
    assert any("Do not use the final checkpoint" in fix for fix in f.fixes)


def test_the_same_short_curve_without_the_jump_is_silent() -> None:
    for seed in range(20):
        steps, values = _short_eval(last=0.0, seed=seed)
        values[-1] = values[-2] * 1.2
        run = make_run({EVAL_LOSS: (steps, values)})
        assert not _detect(run), seed


def test_a_last_point_within_twice_the_curves_earlier_rises_is_info() -> None:
    """A per-batch loss whose earlier outliers reached 2x: a last batch 2.5x up is as
    likely its own tail (one hard batch) as a blow-up."""
    steps = every(1000, 1)
    loss = decaying_loss(steps, seed=5, noise=0.02)
    loss[400] *= 2.0  # an earlier hard batch, back at the next
    loss[-1] *= 2.5
    found = [
        f for f in _detect(make_run({TRAIN_LOSS: (steps, loss)})) if f.step_end == int(steps[-1])
    ]
    (f,) = found
    assert f.severity is Severity.INFO
    assert f.evidence["within_history"] == "yes"
    assert f.evidence["largest_earlier_rise_step"] == int(steps[400])
    assert "as likely one hard batch" in f.message


def test_a_last_point_far_beyond_the_curves_history_is_a_warning_not_an_error() -> None:
    steps = every(1000, 1)
    loss = decaying_loss(steps, seed=5, noise=0.02)
    loss[-1] *= 6.0
    (f,) = _detect(make_run({TRAIN_LOSS: (steps, loss)}))
    assert f.severity is Severity.WARNING
    assert f.evidence["rule"] == "end_of_log" and f.step_end == int(steps[-1])
    assert f"the last checkpoint before step {int(steps[-1])}" in f.message


def test_the_last_few_points_up_are_one_episode_the_log_ends_on() -> None:
    steps = every(1000, 1)
    loss = decaying_loss(steps, seed=5, noise=0.02)
    loss[-3:] *= np.array([4.0, 5.0, 6.0])
    (f,) = _detect(make_run({TRAIN_LOSS: (steps, loss)}))
    assert f.severity is Severity.WARNING
    assert (f.step_start, f.step_end) == (997, 999)
    assert "the last 3 logged points (steps 997-999)" in f.message


def test_a_memorised_curve_ending_on_one_hard_example_is_info() -> None:
    steps = every(400, 1)
    rng = np.random.default_rng(0)
    loss = np.where(steps < 50, 2.3, 1e-3) * np.exp(rng.normal(0.0, 0.05, steps.size))
    loss[-1] = 0.05  # 50x a memorised level, far below where the curve started
    found = _detect(make_run({TRAIN_LOSS: (steps, loss)}))
    assert all(f.severity is Severity.INFO for f in found), found


def test_a_metric_that_ends_non_finite_is_left_to_the_did_not_recover_rule() -> None:
    steps = every(1000, 1)
    loss = decaying_loss(steps, seed=12)
    loss[-3] *= 50.0
    loss[-2:] = np.nan
    (f,) = _detect(make_run({TRAIN_LOSS: (steps, loss)}))
    assert f.severity is Severity.ERROR and "rule" not in f.evidence


def _sgdr(cut: int, seed: int, period: int = 250) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A cosine schedule with warm restarts every `period` steps (logged every 5), the loss
    rising with the LR (2x at a restart), the log cut at step `cut`: steps, loss, LR."""
    steps = np.arange(0, cut + 1, 5, dtype=np.int64)
    rng = np.random.default_rng(seed)
    lr = 1e-3 * 0.5 * (1 + np.cos(np.pi * (steps % period) / period))
    base = 0.3 + 2.2 * np.exp(-steps / 300)
    loss = base * (1 + lr / 1e-3) * np.exp(rng.normal(0.0, 0.03, steps.size))
    return steps, loss, lr


def test_a_log_cut_just_after_a_warm_restart_is_info_naming_the_lr_rise() -> None:
    """Before: a warning, "the run ended on a blow-up", while its evidence held the LR at
    the restart. The LR went back to the peak the run trained at: the schedule's doing."""
    steps, loss, lr = _sgdr(cut=255, seed=0)
    (f,) = _detect(make_run({TRAIN_LOSS: (steps, loss), "lr": (steps, lr)}))
    assert f.severity is Severity.INFO
    assert f.evidence["rule"] == "end_of_log" and f.step_start == 250
    assert f.evidence["lr_rose_from_step"] == 245 and f.evidence["lr_rose_to_step"] == 250
    assert f"The LR rose from {lr[-3]:.4g} at step 245 to 0.001 at step 250 just before" in (
        f.message
    )
    assert "not blowing up" in f.message and "ended on a blow-up" not in f.message
    assert not any("Do not use the final checkpoint" in fix for fix in f.fixes)


def test_no_cut_after_a_warm_restart_warns() -> None:
    """The class: logs cut 0-2 logs after the first or second restart, 5 seeds each (the
    end rule's findings: the first restart is the trailing-window rule's to judge)."""
    for cut in (250, 255, 260, 500, 505, 510):
        for seed in range(5):
            steps, loss, lr = _sgdr(cut, seed)
            found = _detect(make_run({TRAIN_LOSS: (steps, loss), "lr": (steps, lr)}))
            at_end = [f for f in found if f.evidence.get("rule") == "end_of_log"]
            loud = [f for f in at_end if f.severity >= Severity.WARNING]
            assert not loud, (cut, seed, loud)


def test_the_same_restart_without_a_logged_lr_is_still_a_warning() -> None:
    steps, loss, _ = _sgdr(cut=255, seed=0)
    (f,) = _detect(make_run({TRAIN_LOSS: (steps, loss)}))
    assert f.severity is Severity.WARNING and "ended on a blow-up" in f.message


def test_an_lr_raised_above_every_earlier_lr_at_the_end_stays_a_warning_that_names_it() -> None:
    """A schedule bug that multiplies the LR by 100 for the last epoch (the class of
    examples/lightning_last_epoch_lr, which logs no LR): not a restart to a known LR."""
    steps = every(400, 5)
    loss = decaying_loss(steps, seed=4, noise=0.03)
    lr = np.full(steps.size, 1e-3)
    lr[-1] = 0.1
    loss[-1] *= 3.0
    (f,) = _detect(make_run({TRAIN_LOSS: (steps, loss), "lr": (steps, lr)}))
    assert f.severity is Severity.WARNING
    last, before = int(steps[-1]), int(steps[-2])
    assert (
        f"The LR rose from 0.001 at step {before} to 0.1 at step {last} just before, above "
        "every LR logged before it (the highest was 0.001): the new LR may be too high"
    ) in f.message
    assert "ended on a blow-up" in f.message
    assert "lr_back_to_earlier_peak" not in f.evidence


def _gan(seed: int, epochs: int = 15) -> dict[str, tuple[FloatArray, FloatArray]]:
    """Per-epoch generator and discriminator losses, each a random walk (log sd 0.15)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(epochs, dtype=np.int64)
    d_loss = 0.6 * np.exp(np.cumsum(rng.normal(0.0, 0.15, epochs)))
    g_loss = 1.5 * np.exp(np.cumsum(rng.normal(0.0, 0.15, epochs)))
    return {"d_loss": (steps, d_loss), "g_loss": (steps, g_loss)}


def test_a_gan_players_last_epoch_is_not_judged_by_the_end_rule() -> None:
    """Before: 5 of 200 such GANs warned "ended on a blow-up" (seed 23: g_loss 0.8887 ->
    1.356 at the last epoch, 1.53x, robust z 7.5). Each player's loss follows the other's
    skill; the end rule's lower bar (`end_z` sigmas) would call the game a blow-up."""
    loud = []
    for seed in range(200):
        found = _detect(make_run(_gan(seed)))
        at_end = [f for f in found if f.evidence.get("rule") == "end_of_log"]
        loud += [(seed, f.title) for f in at_end if f.severity >= Severity.WARNING]
    assert not loud
    assert not _detect(make_run(_gan(23)))
    # The exemption is what keeps it quiet: the same g_loss as a run's only loss is judged.
    alone = make_run({TRAIN_LOSS: _gan(23)["g_loss"]})
    (f,) = _detect(alone)
    assert f.severity is Severity.WARNING and f.evidence["rule"] == "end_of_log"


def test_the_end_rule_floors_its_noise_as_the_trailing_window_rule_does() -> None:
    """One noise floor (`scoring.noise_floor`): on a loss rounded to 3 decimals, nearly
    flat before its last point (the floor is near the rounding step), and on a linear
    (signed) curve, the end rule's sigma is the trailing-window rule's at the same point."""
    steps = every(200, 1)
    jitter = np.random.default_rng(0).choice([-0.001, 0.0, 0.0, 0.0, 0.001], steps.size)
    flat = np.round(np.where(steps < 20, 2.0, 0.2) + jitter, 3)  # its noise under 1e-3
    flat[-1] = 0.9
    signed = np.sin(steps / 7.0) * 0.01 - 0.5
    signed[-1] = 3.0
    for values in (flat, signed):
        series = make_run({TRAIN_LOSS: (steps, values)}).metrics[TRAIN_LOSS]
        logged, in_log = stats.log_if_positive(values)
        min_jump = (
            np.log10(PARAMS.min_ratio)
            if in_log
            else (PARAMS.min_ratio - 1.0) * stats.level_scale(values)
        )
        curve = Curve(
            steps=series.steps,
            raw=values,
            values=logged,
            in_log=in_log,
            min_jump=float(min_jump),
            window=PARAMS.min_window,
            ends_nonfinite=False,
        )
        _, _, sigma = spike_scores(curve, PARAMS)
        ep = end_episode(curve, PARAMS)
        assert ep is not None and ep.start == steps.size - 1
        assert ep.sigma == pytest.approx(float(sigma[-1]), rel=1e-12)


@pytest.mark.parametrize("train_end", [float("inf"), 40.0])
def test_an_eval_tail_while_the_train_loss_blows_up_is_its_echo(train_end: float) -> None:
    """The same last-evaluation jump, but the train loss turned non-finite (or reached 10x
    its level) from step 10: divergence reports that incident, so the eval tail is info
    naming the step; with a train loss that did not blow up it stays a warning (above)."""
    steps, values = _short_eval(last=0.3)
    train = 0.02 + 0.8 * np.exp(-(steps - 1) / 1.5)
    train[-1] = train_end
    run = make_run({EVAL_LOSS: (steps, values), TRAIN_LOSS: (steps, train)})
    (f,) = [f for f in _detect(run) if f.metric == EVAL_LOSS]
    assert f.severity is Severity.INFO
    assert f.evidence["train_blow_up_step"] == 10
    assert f"{TRAIN_LOSS} blew up over the same steps" in f.message
    assert "divergence reports it" in f.message
