"""plateau: stalls far from convergence warn, the flat end of an annealed run is info."""

from __future__ import annotations

import re

import numpy as np
import pytest
from synth import (
    decaying_loss,
    every,
    healthy_noisy_run,
    linear_decay,
    make_run,
    sgdr,
    step_decay,
    warmup_cosine,
)

from trainspotter.detectors import eval_stall
from trainspotter.detectors.plateau import DETECTOR, PlateauParams
from trainspotter.detectors.stuck import significant_digits
from trainspotter.model import Finding, Run, Severity

PARAMS = PlateauParams()


def _detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def _loud(run: Run) -> list[Finding]:
    return [f for f in _detect(run) if f.severity >= Severity.WARNING]


@pytest.mark.parametrize("interval", [1, 10, 50])
def test_lr_decayed_to_zero_early_is_a_warning_naming_the_cause(interval: int) -> None:
    # The scheduler was sized for 1,000 steps; the run is 5,000: LR ~0 from step 1,000.
    steps = every(5000, interval)
    lr = np.where(steps < 1000, 3e-4 * (1 - steps / 1000), 0.0)
    loss = np.where(steps < 1000, 2.5 - 1.0 * steps / 1000, 1.5)
    loss = loss * np.exp(np.random.default_rng(interval).normal(0, 0.02, steps.size))
    (f,) = _detect(make_run({"train/loss": (steps, loss), "lr": (steps, lr)}))
    assert f.severity is Severity.WARNING
    assert int(f.evidence["lr_zero_step"]) <= 1000 and "LR" in f.title
    # Tolerance: the flat stretch starts within 5% of the run of step 1000.
    assert abs(f.step_start - 1000) <= 250
    assert "classic cause" in f.message and f.fixes


def test_not_learning_is_a_warning_over_the_whole_run() -> None:
    steps = every(2000, 10)
    loss = 2.3 * np.exp(np.random.default_rng(0).normal(0, 0.05, steps.size))
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert f.severity is Severity.WARNING and "not learning" in f.title
    assert (f.step_start, f.step_end) == (0, 1990)


def test_stall_far_from_convergence_with_the_lr_still_high_is_a_warning() -> None:
    steps = every(3000, 1)
    loss = np.maximum(2.5 - 0.004 * steps, 2.1)  # falls 16%, then stuck from step 100
    loss = loss * np.exp(np.random.default_rng(1).normal(0, 0.02, steps.size))
    lr = np.full(steps.size, 1e-3)
    (f,) = _detect(make_run({"train/loss": (steps, loss), "lr": (steps, lr)}))
    assert f.severity is Severity.WARNING and "stalled" in f.title
    assert f.step_start <= 400


@pytest.mark.parametrize(
    "schedule",
    [
        lambda s: warmup_cosine(s, warmup=100),
        lambda s: linear_decay(s, warmup=50),
        lambda s: step_decay(s, every=1500),
        lambda s: sgdr(s, period=1000),
    ],
    ids=["cosine", "linear", "step", "sgdr"],
)
def test_the_flat_end_of_a_healthy_annealed_run_is_info_at_most(schedule) -> None:  # type: ignore[no-untyped-def]
    steps = every(4000, 1)
    loss = decaying_loss(steps, tau=400, seed=2)
    found = _detect(make_run({"train/loss": (steps, loss), "lr": (steps, schedule(steps))}))
    assert all(f.severity is Severity.INFO for f in found), found


def test_annealed_flat_end_says_so() -> None:
    steps = every(4000, 1)
    lr = warmup_cosine(steps, warmup=100)
    # Converges halfway through a cosine schedule that anneals to 0 at the end.
    loss = 0.5 + 2.0 * np.clip(1 - steps / 2000, 0, 1) ** 2
    loss = loss * np.exp(np.random.default_rng(3).normal(0, 0.01, steps.size))
    (f,) = _detect(make_run({"train/loss": (steps, loss), "lr": (steps, lr)}))
    assert f.severity is Severity.INFO and "annealed" in f.message


def test_a_still_improving_curve_gives_nothing() -> None:
    steps = every(3000, 1)
    loss = (
        3.0 * np.exp(-steps / 3000) * np.exp(np.random.default_rng(4).normal(0, 0.01, steps.size))
    )
    assert _detect(make_run({"train/loss": (steps, loss)})) == []


def test_rising_loss_is_left_to_divergence() -> None:
    steps = every(1000, 1)
    loss = np.linspace(1.0, 1.08, steps.size) * np.exp(
        np.random.default_rng(5).normal(0, 0.005, steps.size)
    )
    assert _detect(make_run({"train/loss": (steps, loss)})) == []


def test_component_losses_next_to_train_loss_are_left_alone() -> None:
    steps = every(2000, 1)
    run = make_run(
        {
            "train/loss": (steps, decaying_loss(steps, seed=6)),
            "kl_loss": (steps, np.full(steps.size, 0.3)),
        }
    )
    assert all(f.metric == "train/loss" for f in _detect(run))


def test_scale_does_not_matter() -> None:
    steps = every(2000, 10)
    rng = np.random.default_rng(7)
    for scale in (1e-4, 1e4):
        loss = scale * 2.3 * np.exp(rng.normal(0, 0.05, steps.size))
        (f,) = _detect(make_run({"train/loss": (steps, loss)}))
        assert "not learning" in f.title


def test_nan_and_short_runs() -> None:
    steps = every(8, 1)
    assert _detect(make_run({"train/loss": (steps, np.full(steps.size, 2.3))})) == []
    steps = every(2000, 10)
    loss = 2.3 * np.exp(np.random.default_rng(8).normal(0, 0.05, steps.size))
    loss[::7] = np.nan
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert "not learning" in f.title


def test_false_alarm_rate_on_healthy_noisy_runs() -> None:
    # Measured: 0 of 200 seeds warn (1 in 1,000 over a longer sweep).
    loud = sum(bool(_loud(healthy_noisy_run(seed))) for seed in range(200))
    assert (200 - loud) / 200 >= 0.99, loud


def _converging_run(eval_floor_step: int | None) -> Run:
    """Train loss flat from ~step 2000 of 4000 under an annealed cosine; the eval loss (if
    any) falls until `eval_floor_step` and is flat after it."""
    steps = every(4000, 1)
    lr = warmup_cosine(steps, warmup=100)
    loss = 0.5 + 2.0 * np.clip(1 - steps / 2000, 0, 1) ** 2
    loss = loss * np.exp(np.random.default_rng(3).normal(0, 0.01, steps.size))
    metrics = {"train/loss": (steps, loss), "lr": (steps, lr)}
    if eval_floor_step is not None:
        eval_steps = every(4000, 100)[1:]
        eval_loss = 0.6 + 0.5 * np.clip(1 - eval_steps / eval_floor_step, 0, 1)
        eval_loss = eval_loss + 0.002 * np.random.default_rng(4).normal(0, 1, eval_steps.size)
        eval_loss[eval_steps > eval_floor_step] += 0.05  # its best is at the floor step
        metrics["eval/loss"] = (eval_steps, eval_loss)
    return make_run(metrics)


def test_converged_suggests_an_early_stop_only_when_the_eval_loss_agrees() -> None:
    (f,) = _detect(_converging_run(eval_floor_step=1800))
    best = int(f.evidence["eval_loss_min_step"])
    assert f.severity is Severity.INFO and best == 1800
    # The step named is the best evaluation's, the checkpoint worth keeping (issue 10 class 7).
    assert f"could have stopped near step {best}," in f.fixes[0]


def test_converged_with_the_eval_loss_still_improving_says_so() -> None:
    (f,) = _detect(_converging_run(eval_floor_step=3900))
    assert f.severity is Severity.INFO and int(f.evidence["eval_loss_min_step"]) == 3900
    assert "still improving" in f.fixes[0] and "could have stopped" not in f.fixes[0]


def test_converged_without_an_eval_loss_keeps_the_hedge() -> None:
    (f,) = _detect(_converging_run(eval_floor_step=None))
    assert "If the eval metric stopped improving" in f.fixes[0]
    assert "eval_loss_min" not in f.evidence
    assert "nothing is wrong" not in " ".join((f.message, *f.fixes)).lower()


def test_a_slow_steady_decline_is_not_not_learning() -> None:
    """AUDIT #17: a loss falling a little at every epoch (0.00208 -> 0.00184, Kendall tau
    -0.99) learns slowly; under 10% lower is not 'not learning' when the fall is significant."""
    steps = np.arange(467, 20 * 467 + 1, 467)
    loss = 0.00208 * np.exp(-0.0065 * np.arange(steps.size))
    loss = loss * np.exp(np.random.default_rng(3).normal(0, 0.001, steps.size))
    assert not [f for f in _detect(make_run({"mse_loss": (steps, loss)})) if "not" in f.title]


def test_not_learning_quotes_raw_values_and_says_when_the_log_starts_late() -> None:
    steps = every(2000, 10)[5:]  # the first logged point is step 50
    loss = 2.3 * np.exp(np.random.default_rng(0).normal(0, 0.05, steps.size))
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert f"{loss[0]:.4g} at step 50" in f.message and f"{loss[-1]:.4g} at step 1990" in f.message
    assert "not in this log" in f.message
    assert not re.search(r"-\d[\d.]*% lower", f.message)


@pytest.mark.parametrize(
    ("values", "stuck"),
    [
        ([0.9, 0.48743417859077454, 0.48743411898612976, 0.48743417859077454], True),
        ([0.72414] * 31, True),  # an eval accuracy that never moves
        ([0.5, 0.6, 0.7, 0.8, 0.9375, 0.9375, 0.9375, 0.9375, 0.9375], False),  # at its best
        ([0.3, 0.2, 0.1, 0.0001, 0.0001, 0.0001, 0.0001], False),  # rounded to 4 decimals
        ([1.0, 1.0, 1.0], False),  # saturated
    ],
)
def test_an_exactly_repeated_value_is_stuck(values: list[float], stuck: bool) -> None:
    steps = np.arange(len(values))
    name = "train/loss" if values[0] != 0.5 and len(values) != 31 else "eval/accuracy"
    found = [f for f in _detect(make_run({name: (steps, np.array(values))})) if "stuck" in f.title]
    assert bool(found) is stuck, found
    if stuck:
        assert found[0].severity is Severity.WARNING and "logged points" in found[0].message


def test_significant_digits_are_counted_as_logged() -> None:
    assert significant_digits(0.72414) == 5
    assert significant_digits(float(np.float32(0.95))) == 2  # float32, not 0.949999988
    assert significant_digits(0.0001) == 1 and significant_digits(0.0) == 0


def test_a_tiny_but_significant_fall_is_not_learning() -> None:
    """An LR far too small for the loss's scale: 85.09 -> 85.03 (0.07%) over 1,000 epochs,
    falling at nearly every one (a highly significant trend). Not learning."""
    steps = np.arange(1000)
    loss = 85.029 + 0.064 * np.exp(-steps / 10.0)
    loss = loss + np.random.default_rng(0).normal(0, 2e-4, steps.size)
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert f.severity is Severity.WARNING and "not learning" in f.title
    assert "by too little" in f.message and float(f.evidence["drop_fraction_of_start"]) < 0.001


@pytest.mark.parametrize("fall", [0.06, 0.09])
def test_a_material_slow_fall_is_learning(fall: float) -> None:
    """A significant fall of 6-9% (under the 10% band, over the 5% effect size) is slow
    learning, not "not learning"."""
    steps = np.arange(500)
    loss = 3.0 * (1 - fall * steps / steps[-1])
    loss = loss * np.exp(np.random.default_rng(2).normal(0, 0.01, steps.size))
    assert not [f for f in _detect(make_run({"train/loss": (steps, loss)})) if "not" in f.title]


def test_a_fall_hidden_in_the_noise_is_not_learning() -> None:
    """7% over the run (past the level scale) but under the per-point scatter (10% of
    the level): the points do not show it."""
    steps = np.arange(3000)
    loss = 2.4 * (1 - 0.07 * steps / steps[-1])
    loss = loss * np.exp(np.random.default_rng(3).normal(0, 0.1, steps.size))
    (f,) = _detect(make_run({"train/loss": (steps, loss)}))
    assert "not learning" in f.title


def _collapse(steps: np.ndarray) -> np.ndarray:
    """Falls from 1.75, then approaches 0.25 exponentially and wobbles in its 6th digit."""
    loss = 0.25 + 1.5 * np.exp(-steps / 200.0)
    return loss + np.random.default_rng(4).normal(0, 2e-6, steps.size)


def test_a_loss_that_fell_then_froze_has_collapsed() -> None:
    steps = np.arange(0, 12000, 50)
    (f,) = _detect(make_run({"train/loss": (steps, _collapse(steps))}))
    assert f.severity is Severity.WARNING and "collapsed to a constant" in f.title
    assert int(f.evidence["frozen_since_step"]) == f.step_start < 3000
    assert "constant prediction" in f.fixes[0]


def test_a_frozen_loss_under_an_annealed_lr_or_near_zero_is_not_a_collapse() -> None:
    steps = np.arange(0, 12000, 50)
    lr = np.where(steps < 2000, 1e-3, 1e-7)  # annealed to ~0 before it froze
    run = make_run({"train/loss": (steps, _collapse(steps)), "lr": (steps, lr)})
    assert not [f for f in _detect(run) if "collapsed" in f.title]
    memorised = 1e-5 + 1.75 * np.exp(-steps / 200.0)  # froze at 1e-5: converged near 0
    memorised = memorised * (1 + np.random.default_rng(5).normal(0, 1e-6, steps.size))
    assert not [
        f for f in _detect(make_run({"train/loss": (steps, memorised)})) if "collapsed" in f.title
    ]


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_flat_per_step_loss_on_few_points_is_not_learning(seed: int) -> None:
    """50 per-batch losses (Lightning's default log_every_n_steps=50) scattered 18% around
    a level that does not move: the 5-point smoothed minimum dips ~20% below the start by
    chance, which is the smoothed curve's noise, not a fall."""
    steps = np.arange(49, 2500, 50)
    loss = 2.3 * np.exp(np.random.default_rng(seed).normal(0, 0.18, steps.size))
    (f,) = _loud(make_run({"train/loss": (steps, loss)}))
    assert "not learning" in f.title and f.severity is Severity.WARNING


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_per_step_loss_that_falls_is_learning(seed: int) -> None:
    """The same scatter around a loss that falls 2.3 -> 1.6 (30%) over the run."""
    steps = np.arange(49, 2500, 50)
    level = 2.3 - 0.7 * steps / steps[-1]
    loss = level * np.exp(np.random.default_rng(seed).normal(0, 0.18, steps.size))
    assert not [f for f in _loud(make_run({"train/loss": (steps, loss)})) if "not" in f.title]


def _band_run(values: np.ndarray, name: str = "eval/token_accuracy") -> Run:
    steps = np.arange(1, values.size + 1) * 100
    return make_run({name: (steps, values)})


def test_an_accuracy_in_a_tiny_band_far_below_its_ceiling_is_stuck() -> None:
    """Token accuracy 0.066 +- 0.0005 at all 24 evaluations (a resolution of 1/8,000)."""
    counts = 528 + np.random.default_rng(0).integers(-4, 5, 24)
    (f,) = _loud(_band_run(counts / 8000.0))
    assert "stuck near" in f.title and f.severity is Severity.WARNING
    assert f.evidence["resolution"] == pytest.approx(1 / 8000)
    assert "at all 24 logged points" in f.message and "had to rise" in f.message


@pytest.mark.parametrize(
    "values",
    [
        # Converged near the ceiling: a tiny band, but nothing left to gain.
        0.981 + np.random.default_rng(1).integers(0, 3, 24) / 1000.0,
        # Rising: learning, however slowly at first.
        np.linspace(0.066, 0.2, 24),
        # Eval-set noise of a model that is learning: wider than 2% of the room.
        0.3 + np.random.default_rng(2).normal(0, 0.02, 24),
        # Too few evaluations to call a band.
        np.array([0.066, 0.0661, 0.0659, 0.066, 0.0662]),
    ],
)
def test_a_band_that_is_not_stuck(values: np.ndarray) -> None:
    assert not [f for f in _loud(_band_run(values)) if "stuck" in f.title]


def test_a_band_in_percent_and_a_loss_band() -> None:
    counts = 528 + np.random.default_rng(3).integers(-4, 5, 20)
    assert _loud(_band_run(100 * counts / 8000.0, "eval/accuracy"))
    # Not accuracy-like (a loss): the band rule does not apply (the loss verdicts do).
    assert not [f for f in _detect(_band_run(counts / 8000.0, "eval/loss")) if "near" in f.title]


def test_a_loss_that_goes_negative_is_not_judged_against_a_floor_at_zero() -> None:
    """A policy-gradient surrogate around -0.02 with no trend: not a loss with a floor at 0,
    so "not learning" (a distance to that floor) is not said of it; the same curve shifted
    above 0 is."""
    steps = np.arange(51)
    noise = np.random.default_rng(5).normal(0, 0.004, steps.size)
    surrogate = -0.022 + noise
    assert not [f for f in _loud(make_run({"train/loss": (steps, surrogate)}))]
    assert [f for f in _loud(make_run({"train/loss": (steps, 0.05 + noise)})) if "not" in f.title]


def test_a_low_metric_that_grew_several_fold_is_not_stuck_in_a_band() -> None:
    """Macro-F1 over thousands of labels: 0.0003 -> 0.0018 is under 2% of the room to 1 but
    a sixfold rise: changing, however low."""
    values = np.linspace(0.0003, 0.0018, 20) + np.random.default_rng(6).normal(0, 5e-5, 20)
    assert not [f for f in _loud(_band_run(values, "eval/macro_f1")) if "stuck" in f.title]


def test_flat_eval_and_train_in_a_resumed_log_are_not_called_not_learning() -> None:
    """Train and eval losses flat around 0.045 from step 263,300 (a resumed late-stage
    run): the learning happened before the log, so the eval side's "never improved" is not
    a verdict there; the same curves from step 0 are."""
    rng = np.random.default_rng(7)
    train_noise, eval_noise = rng.normal(0, 0.02, 194), rng.normal(0, 0.02, 19)
    for offset, expected in ((263_300, False), (0, True)):
        train_steps = offset + np.arange(0, 97_000, 500)
        eval_steps = offset + np.arange(1_000, 96_000, 5_000)
        run = make_run(
            {
                "train/loss": (train_steps, 0.045 * np.exp(train_noise)),
                "eval/loss": (eval_steps, 0.046 * np.exp(eval_noise)),
            }
        )
        found = eval_stall.not_learning_findings(run, "plateau", set(), train_reported=False)
        assert bool(found) is expected, (offset, [f.title for f in found])


@pytest.mark.parametrize(
    ("name", "value", "points", "stuck"),
    [
        # 35 of 36 right at every evaluation: a converged model on a tiny eval set.
        ("eval/accuracy", 97.22, 10, False),
        ("eval/accuracy", 0.9722222, 10, False),
        # 21 of 29 (csv/004 in ../shared/wild): far from perfect, stuck.
        ("eval/accuracy", 0.72414, 31, True),
        # No set of 200 or fewer gives 0.977302 as logged: a large set that never moved.
        ("eval/mean_token_accuracy", 0.977302, 45, True),
    ],
)
def test_an_exact_repeat_near_perfect_on_a_tiny_eval_set_is_not_stuck(
    name: str, value: float, points: int, stuck: bool
) -> None:
    run = _band_run(np.full(points, value), name)
    assert bool([f for f in _loud(run) if "stuck at exactly" in f.title]) is stuck


def test_an_eval_metric_perfect_from_its_first_evaluation_never_improved_by_no_rule() -> None:
    """An accuracy at 100 at every evaluation (a no-object accuracy of a detector) had
    nothing to improve on: "never improved" is not said of it; at 60 it is."""
    steps = np.arange(1, 31) * 900
    train = 15.6 * np.exp(np.random.default_rng(8).normal(0, 0.01, steps.size))
    for level, expected in ((100.0, False), (60.0, True)):
        run = make_run(
            {
                "train/loss": (steps, train),
                "eval/obj_accuracy": (steps, np.full(30, level)),
            }
        )
        found = eval_stall.not_learning_findings(run, "plateau", set(), train_reported=False)
        assert bool(found) is expected, (level, [f.title for f in found])


def test_an_eval_loss_that_got_much_worse_is_not_called_not_learning() -> None:
    """Best at its first evaluation, then 87% worse (after a train-loss climb): a
    degradation, reported by overfitting and divergence; "never improved (not learning)"
    would be untrue of a fine-tune that was best at once. The same start held flat is."""
    steps = np.arange(1, 7) * 250
    train_steps = np.arange(1, 61) * 25
    train = 0.15 * np.exp(np.random.default_rng(9).normal(0, 0.02, train_steps.size))
    for eval_loss, expected in (
        (np.array([0.219, 0.31, 0.38, 0.41, 0.40, 0.42]), False),
        (np.array([0.219, 0.222, 0.218, 0.221, 0.220, 0.223]), True),
    ):
        run = make_run({"train/loss": (train_steps, train), "eval/loss": (steps, eval_loss)})
        found = eval_stall.not_learning_findings(run, "plateau", set(), train_reported=False)
        assert bool(found) is expected, (eval_loss, [f.title for f in found])


@pytest.mark.parametrize(
    ("name", "values", "stuck"),
    [
        ("acc", [0.0] * 100, True),  # a train accuracy never computed (integer division)
        ("train_acc_step_epoch", [0.0] * 10, True),
        ("train_accuracy", [0.1, 0.4, 0.7, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], False),
        # Not a rate of right answers: whole words only.
        ("grad_accum_steps", [0.0] * 20, False),
        ("train/acc", [0.2, 0.5, 0.7, 0.81, 0.86, 0.9, 0.92, 0.93, 0.94, 0.95], False),
    ],
)
def test_a_train_accuracy_that_never_moves_is_stuck(
    name: str, values: list[float], stuck: bool
) -> None:
    """A train-side accuracy is checked for an exact repeat like an eval metric; the band
    rule (an eval metric near a constant) stays eval-only."""
    steps = np.arange(1, len(values) + 1)
    loss = 2.0 * np.exp(-steps / 20)
    run = make_run({"train/loss": (steps, loss), name: (steps, np.array(values))})
    found = [f for f in _loud(run) if f.metric == name]
    assert bool(found) is stuck, found
    if stuck:
        assert "stuck at exactly 0" in found[0].title
        assert "batches it is computed on" in " ".join(found[0].fixes)


@pytest.mark.parametrize(
    ("name", "values", "stuck"),
    [
        # float32 0.2 at every evaluation, the loss moving: one class predicted of five.
        ("val_accuracy", [float(np.float32(0.2))] * 8, True),
        ("eval/accuracy", [0.1] * 12, True),  # CIFAR-10's chance level
        ("eval/accuracy", [0.5] * 6, True),
        # Not exactly a unit fraction at every point, or not an accuracy: the digit rule.
        ("eval/accuracy", [0.5, 0.5, 0.5, 0.75, 0.5, 0.5], False),
        ("eval/accuracy", [0.3] * 8, False),
        ("eval/loss", [0.5] * 8, False),
    ],
)
def test_an_accuracy_exactly_at_a_chance_share_is_stuck_despite_its_few_digits(
    name: str, values: list[float], stuck: bool
) -> None:
    steps = np.arange(10, 10 + len(values))
    run = make_run({name: (steps, np.array(values)), "train/loss": (steps, 2.0 / (steps - 8))})
    found = [f for f in _loud(run) if f.metric == name and "stuck" in f.title]
    assert bool(found) is stuck, found
    if stuck:
        assert "predicts one class for every example" in found[0].message


@pytest.mark.parametrize(
    ("name", "values", "stuck"),
    [
        ("train/loss", [0.0] * 9, True),  # never computed: nothing was trained
        ("train/loss", [0.4, 0.1, 0.01, 0.0, 0.0, 0.0, 0.0], False),  # rounded once converged
        ("aug_loss", [0.0] * 9, False),  # a disabled auxiliary term
    ],
)
def test_a_train_loss_at_exactly_zero_from_its_first_point_is_stuck(
    name: str, values: list[float], stuck: bool
) -> None:
    steps = np.arange(1, len(values) + 1)
    metrics = {name: (steps, np.array(values))}
    if name != "train/loss":
        metrics["train/loss"] = (steps, 2.0 / steps)
    found = [f for f in _loud(make_run(metrics)) if f.metric == name and "stuck" in f.title]
    assert bool(found) is stuck, found
    if stuck:
        assert "nothing was trained" in found[0].message
