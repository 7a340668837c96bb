"""A real Stable-Baselines3 PPO run on CartPole-v1, logged by SB3's own CSV logger: a healthy
reinforcement-learning run whose policy-optimisation losses need not fall.

PPO (``stable_baselines3.PPO``, ``MlpPolicy``: two 64-unit tanh layers for the policy and
two for the value function) on one ``CartPole-v1`` environment, on CPU, seeded (``seed=0``,
one torch thread): rollouts of 256 steps, 10 epochs of minibatches of 64 on each, Adam at
LR 3e-4, clip range 0.2, SB3's default entropy coefficient 0, 50,176 environment steps
(196 rollouts).
``stable_baselines3.common.logger.configure(folder, ["csv"])`` writes
``sb3_ppo_cartpole/progress.csv``: one row per iteration, with ``time/total_timesteps``
(environment steps so far), ``time/iterations``, ``rollout/ep_rew_mean`` and
``rollout/ep_len_mean`` (means over the last 100 finished episodes), and the ``train/``
terms of the update before (so the first row has none): ``loss`` (the total,
``policy_gradient_loss + ent_coef * entropy_loss + vf_coef * value_loss``, of the last
minibatch), ``policy_gradient_loss`` (the clipped surrogate), ``value_loss`` (the value
head's MSE against the returns), ``entropy_loss`` (minus the policy's entropy),
``approx_kl``, ``clip_fraction``, ``explained_variance``, ``learning_rate``,
``clip_range`` and ``n_updates``.

- ``sb3_ppo_cartpole``: healthy. The agent learns to balance the pole (``ep_rew_mean``
  about 34 -> 363, medians of the first and last 10 iterations) while its losses do what
  PPO's losses do on a run that works: ``entropy_loss`` rises towards 0 (minus an entropy
  that falls as the policy sharpens, from -ln 2 = -0.693 for a uniform choice of two
  actions: -0.64 -> -0.45), and ``value_loss`` (and ``loss``, which it dominates) jumps
  10-300x for single updates and is back at the next (its targets are the returns of
  each new rollout). Must be silent. Before
  ``names.rl_losses`` trainspotter called its ``entropy_loss`` "drifting upward", its
  ``policy_gradient_loss`` "diverged and came back" and its ``loss`` "spiked" (warnings).

Environment (its own venv; torch must be the CPU build, see examples/README.md)::

    python3 -m venv /tmp/sb3-venv
    /tmp/sb3-venv/bin/pip install -r examples/sb3_ppo_cartpole/requirements.txt
    /tmp/sb3-venv/bin/python examples/sb3_ppo.py                                  # ~1-2 min

The ground truth the run writes into ``examples/expected.json`` (its own entry; its
folder's ``progress.csv`` is replaced) is what SB3's logger was handed while training,
recorded by a second output format beside the CSV writer, never read back from the CSV.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.logger import KVWriter, Logger, configure

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_entry  # noqa: E402

NAME = "sb3_ppo_cartpole"
LOG_FILE = "progress.csv"
SEED = 0
N_STEPS = 256
TOTAL_TIMESTEPS = 196 * N_STEPS  # 50,176
WINDOW = 10  # rows per summary window (2,560 environment steps)


class Recorder(KVWriter):
    """Keeps every row SB3's logger writes (an output format beside the CSV one)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def write(
        self,
        key_values: dict[str, Any],
        key_excluded: dict[str, tuple[str, ...]],
        step: int = 0,
    ) -> None:
        self.rows.append(
            {k: float(v) for k, v in key_values.items() if isinstance(v, (int, float))}
        )

    def close(self) -> None:
        pass


def column(rows: list[dict[str, float]], key: str) -> list[tuple[int, float]]:
    """(time/total_timesteps, value) for every row that has ``key``."""
    return [(int(r["time/total_timesteps"]), r[key]) for r in rows if key in r]


def window_medians(points: list[tuple[int, float]]) -> list[tuple[int, int, float]]:
    """(first step, last step, median) of the first and of the last WINDOW points."""
    return [
        (chunk[0][0], chunk[-1][0], statistics.median(v for _, v in chunk))
        for chunk in (points[:WINDOW], points[-WINDOW:])
    ]


def train() -> list[dict[str, float]]:
    """Train the agent; SB3 writes progress.csv, the recorder keeps the same rows."""
    torch.set_num_threads(1)
    folder = HERE / NAME
    (folder / LOG_FILE).unlink(missing_ok=True)
    csv_logger = configure(str(folder), ["csv"])
    recorder = Recorder()
    logger = Logger(folder=str(folder), output_formats=[*csv_logger.output_formats, recorder])
    model = PPO(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=N_STEPS,
        batch_size=64,
        n_epochs=10,
        learning_rate=3e-4,
        ent_coef=0.0,
        seed=SEED,
        device="cpu",
        verbose=0,
    )
    model.set_logger(logger)
    model.learn(total_timesteps=TOTAL_TIMESTEPS)
    logger.close()
    return recorder.rows


def main() -> None:
    rows = train()
    reward = window_medians(column(rows, "rollout/ep_rew_mean"))
    entropy = window_medians(column(rows, "train/entropy_loss"))
    value = window_medians(column(rows, "train/value_loss"))
    # The run is healthy and its losses rise: checked on what the logger was handed.
    assert reward[-1][2] > 5 * reward[0][2], reward
    assert entropy[-1][2] > entropy[0][2] + 0.1, entropy
    value_peak = max(column(rows, "train/value_loss"), key=lambda point: point[1])
    steps = int(rows[-1]["time/total_timesteps"])
    first_entropy = column(rows, "train/entropy_loss")[0]
    write_entry(
        NAME,
        {
            "summary": (
                "Stable-Baselines3 PPO (MlpPolicy, one CartPole-v1 environment, rollouts of "
                f"{N_STEPS} steps, 10 epochs of minibatches of 64, Adam 3e-4, entropy "
                f"coefficient 0) for {steps} environment steps, logged by SB3's CSV "
                "logger: the agent learns (rollout/ep_rew_mean, medians of the first and "
                f"last {WINDOW} iterations, {reward[0][2]:.3g} -> {reward[-1][2]:.3g}) while "
                f"train/entropy_loss rises {entropy[0][2]:.3g} -> {entropy[-1][2]:.3g} "
                "(minus an entropy that falls as the policy sharpens) and train/value_loss "
                f"(medians {value[0][2]:.3g} -> {value[-1][2]:.3g}) jumps for single updates "
                f"(up to {value_peak[1]:.4g} at step {value_peak[0]}; its targets are the "
                "returns of each new rollout), train/loss with it. Healthy: PPO's "
                "losses need not fall."
            ),
            "healthy": True,
            "must_be_silent": True,
            "pathologies": [],
            "may_also_flag": {},
            "files": [LOG_FILE],
            "steps": steps,
            "max_steps": TOTAL_TIMESTEPS,
            "logging_steps": N_STEPS,
            "eval_steps": None,
            "facts": {
                "rows": len(rows),
                "window_iterations": WINDOW,
                "ep_rew_mean_window_first": [reward[0][0], reward[0][1], rounded(reward[0][2])],
                "ep_rew_mean_window_last": [
                    reward[-1][0],
                    reward[-1][1],
                    rounded(reward[-1][2]),
                ],
                "entropy_loss_first": [first_entropy[0], rounded(first_entropy[1])],
                "entropy_loss_window_first": [
                    entropy[0][0],
                    entropy[0][1],
                    rounded(entropy[0][2]),
                ],
                "entropy_loss_window_last": [
                    entropy[-1][0],
                    entropy[-1][1],
                    rounded(entropy[-1][2]),
                ],
                "value_loss_window_first": [value[0][0], value[0][1], rounded(value[0][2])],
                "value_loss_window_last": [value[-1][0], value[-1][1], rounded(value[-1][2])],
                "value_loss_max": [value_peak[0], rounded(value_peak[1])],
                "uniform_policy_entropy_loss": rounded(-math.log(2)),
                "step_convention": "time/total_timesteps counts environment steps; each row "
                f"comes after a rollout of {N_STEPS}, and its train/ values are those of the "
                "update before (the first row has none)",
            },
        },
    )
    print(NAME, "written:", steps, "steps,", len(rows), "rows")


if __name__ == "__main__":
    main()
