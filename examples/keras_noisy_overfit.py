"""A real Keras run that overfits on a NOISY validation loss, logged by Keras' ``CSVLogger``.

``keras_noisy_val_overfit``: a 64-256-256-10 MLP (Gaussian input noise 0.5), Adam 3e-3,
batch 8, on the first 300 training digits with 20% of their labels replaced by random ones,
40 epochs, validated on the first 50 eval digits after every epoch. The train loss falls
noisily (it memorises the random labels); ``val_loss`` is lowest after a few epochs and
then wanders over a wide range with a clear upward drift: each evaluation of 50 digits is
too noisy to show a rise above its best alone, the drift over 30+ of them is not. The shape
of a published U-Net log (32 epochs, val_loss 0.014 early, a lucky low and a spike, then
0.017-0.048 drifting up) that the single-point noise tests missed.

The same data, split and seeding as ``examples/keras_runs.py`` (scikit-learn's digits, Keras
3 on torch, CPU, one torch thread)::

    /tmp/examples-frameworks/bin/python examples/keras_noisy_overfit.py    # ~1 min

It replaces ``examples/keras_noisy_val_overfit/training.log`` and its entry in
``examples/expected.json``; the ground truth is Keras' own ``History``, read in memory.
"""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "torch"

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402
from generate import Digits, load_split_digits  # noqa: E402
from keras_runs import epoch_log_layout, fit_logged, keras_facts  # noqa: E402

NAME = "keras_noisy_val_overfit"
ROWS = 300
VAL_ROWS = 50
NOISY_FRACTION = 0.2
EPOCHS = 40
LEARNING_RATE = 3e-3
BATCH = 8


def _median(values: list[float]) -> float:
    return float(np.median(values))


def keras_noisy_val_overfit(data: Digits) -> dict[str, Any]:
    seed = 0
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    labels = data.y_train[:ROWS].copy()
    noisy = rng.random(ROWS) < NOISY_FRACTION
    labels[noisy] = rng.integers(0, 10, int(noisy.sum()))
    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.GaussianNoise(0.5),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    train = (data.x_train[:ROWS], labels)
    h = fit_logged(NAME, model, LEARNING_RATE, train, data, EPOCHS, BATCH, VAL_ROWS, ())
    val_loss, loss = h["val_loss"], h["loss"]
    best = int(np.argmin(val_loss))
    third = EPOCHS // 3
    first, last = _median(val_loss[:third]), _median(val_loss[-third:])
    # What the run is for: the train loss falls (medians of thirds), val_loss's last third
    # is well above its first, and it is noisy: its late evaluations span a wide range.
    assert _median(loss[-third:]) < 0.5 * _median(loss[:third]), loss
    assert last > 1.3 * first and max(val_loss[-third:]) > 1.5 * min(val_loss[-third:])
    return {
        "summary": (
            f"Keras 64-256-256-10 MLP (GaussianNoise 0.5), Adam {LEARNING_RATE:g}, batch "
            f"{BATCH}, on the first {ROWS} training digits with {NOISY_FRACTION:.0%} random "
            f"labels, {EPOCHS} epochs, validated on {VAL_ROWS} eval digits: the train loss "
            f"falls noisily, val_loss is lowest at epoch {best} ({val_loss[best]:.3g}) and "
            f"wanders {min(val_loss[-third:]):.3g}-{max(val_loss[-third:]):.3g} over the "
            f"last {third} epochs, their median {last:.3g} against {first:.3g} over the "
            "first: overfitting on a noisy eval loss. CSVLogger, loss only."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "overfitting",
                "detector": "overfitting",
                "metric": "eval/loss",
                "log_column": "val_loss",
                "best_step": best,
                "step_range": [best, EPOCHS - 1],
                "best_eval_loss": rounded(val_loss[best]),
                f"median_val_loss_first_{third}": rounded(first),
                f"median_val_loss_last_{third}": rounded(last),
                "evaluations": EPOCHS,
                "criterion": (
                    "an upward trend over the evaluations after the minimum, significant "
                    "by Mann-Kendall, the last third's median 5%+ above the first third's "
                    "and beyond their standard error, the train loss falling"
                ),
                "min_severity": "warning",
                "max_severity": "warning",
            }
        ],
        "may_also_flag": {
            "eval_noise": "val_loss jitters over a wide range between epochs: true",
        },
        **epoch_log_layout(EPOCHS),
        "facts": keras_facts(
            noisy_labels=int(noisy.sum()),
            val_loss=[rounded(v) for v in val_loss],
            train_loss=[rounded(v) for v in loss],
        ),
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {NAME: keras_noisy_val_overfit}


if __name__ == "__main__":
    torch.set_num_threads(1)
    write_runs(RUNS, sys.argv[1:], load_split_digits())
