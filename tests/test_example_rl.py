"""A reinforcement-learning update's losses, pinned on a real Stable-Baselines3 PPO run
(examples/sb3_ppo.py, SB3's own CSV logger): a healthy agent whose entropy loss rises and
whose value loss jumps with its rollouts is not diverging, spiking or stalled, and the same
values without the run's RL marks are still judged. The dynamics are checked on the raw log
(csv module) and against what the training script recorded (expected.json).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics

import numpy as np
from test_example_train_side import EXPECTED, log_of

from trainspotter.analysis import analyze
from trainspotter.model import Run, Series, Severity
from trainspotter.names import rl_losses
from trainspotter.readers import read_log

RUN = "sb3_ppo_cartpole"
STEP = "time/total_timesteps"
LOSSES = {"train/entropy_loss", "train/value_loss", "train/policy_gradient_loss", "train/loss"}


def raw_column(name: str) -> list[tuple[int, float]]:
    """(time/total_timesteps, value) of every row of progress.csv that has `name`."""
    with log_of(RUN).open(newline="", encoding="utf-8") as handle:
        return [(int(r[STEP]), float(r[name])) for r in csv.DictReader(handle) if r[name]]


def test_a_healthy_ppo_runs_rising_entropy_loss_gets_no_verdict() -> None:
    """The agent learns while minus its policy's entropy rises towards 0 and its value loss
    jumps for single updates: no divergence, spikes or plateau finding on any RL loss, and
    nothing loud at all."""
    facts = EXPECTED[RUN]["facts"]
    window = facts["window_iterations"]
    reward = raw_column("rollout/ep_rew_mean")
    entropy = raw_column("train/entropy_loss")
    value = raw_column("train/value_loss")
    # The dynamics, on the raw log: the reward rises tenfold ...
    first_reward = statistics.median(v for _, v in reward[:window])
    last_reward = statistics.median(v for _, v in reward[-window:])
    assert [reward[0][0], reward[window - 1][0]] == facts["ep_rew_mean_window_first"][:2]
    assert math.isclose(first_reward, facts["ep_rew_mean_window_first"][2], rel_tol=1e-5)
    assert math.isclose(last_reward, facts["ep_rew_mean_window_last"][2], rel_tol=1e-5)
    assert last_reward > 10 * first_reward
    # ... while minus the entropy climbs from near -ln 2 (a uniform choice of two actions) ...
    first_entropy = statistics.median(v for _, v in entropy[:window])
    last_entropy = statistics.median(v for _, v in entropy[-window:])
    assert math.isclose(first_entropy, facts["entropy_loss_window_first"][2], rel_tol=1e-5)
    assert math.isclose(last_entropy, facts["entropy_loss_window_last"][2], rel_tol=1e-5)
    assert entropy[0] == (512, entropy[0][1]) and entropy[0][1] > -math.log(2)
    assert last_entropy - first_entropy > 0.15
    # ... and the value loss jumps for one update and is back at the next.
    peak = max(range(len(value)), key=lambda i: value[i][1])
    assert value[peak][0] == facts["value_loss_max"][0]
    assert math.isclose(value[peak][1], facts["value_loss_max"][1], rel_tol=1e-5)
    assert value[peak + 1][1] < value[peak][1] / 100
    run = read_log(log_of(RUN))
    assert rl_losses(run.metrics) == LOSSES
    findings = analyze(run).findings
    assert not [f for f in findings if f.metric in LOSSES], findings
    assert not [f for f in findings if f.severity >= Severity.WARNING], findings


def test_the_same_losses_without_the_runs_rl_marks_are_still_judged() -> None:
    """The exemption, not blindness, keeps the PPO run silent: its entropy_loss as a run's
    only loss is an error 'drifting upward (diverging)', and its four losses without the
    rollout/ metrics are a rise, a climb that came back and spikes of train/loss."""
    run = read_log(log_of(RUN))
    alone = dataclasses.replace(
        run, metrics={"train/entropy_loss": run.metrics["train/entropy_loss"]}
    )
    assert rl_losses(alone.metrics) == frozenset()
    errors = [f for f in analyze(alone).findings if f.severity is Severity.ERROR]
    assert [(f.detector, f.metric) for f in errors] == [("divergence", "train/entropy_loss")]
    assert "drifting upward (diverging)" in errors[0].title
    unmarked = dataclasses.replace(run, metrics={name: run.metrics[name] for name in LOSSES})
    judged = {(f.detector, f.metric) for f in analyze(unmarked).findings}
    assert ("divergence", "train/entropy_loss") in judged
    assert ("spikes", "train/loss") in judged


def test_an_rl_loss_that_turns_non_finite_is_still_an_error() -> None:
    """The checks an RL run keeps: the PPO run with its value loss NaN from step 30208 (the
    update's weights gone, as a real blow-up leaves them) is a divergence error there."""
    run = read_log(log_of(RUN))
    series = run.metrics["train/value_loss"]
    onset = 30208
    broken = np.where(series.steps >= onset, np.nan, series.values)
    metrics = {**run.metrics, "train/value_loss": Series.build(series.steps, broken)[0]}
    sick: Run = dataclasses.replace(run, metrics=metrics)
    assert "train/value_loss" in rl_losses(sick.metrics)
    errors = [f for f in analyze(sick).findings if f.severity is Severity.ERROR]
    assert [(f.detector, f.metric) for f in errors] == [("divergence", "train/value_loss")]
    assert errors[0].evidence["first_nonfinite_step"] == onset
