"""Real Keras runs, logged by Keras' own ``CSVLogger``: short logs, as most published ones are.

Each trains on scikit-learn's bundled digits (the split and standardisation of
``examples/generate.py``) with Keras 3 on its torch backend, on CPU, seeded
(``keras.utils.set_random_seed``, one torch thread). Keras evaluates once per epoch and
``CSVLogger`` writes one row per epoch (``epoch,accuracy,loss,val_accuracy,val_loss``), so
these logs are a handful of rows, as most published Keras logs are.

- ``keras_frozen``: a "base + head" model where ``model.trainable = False``, meant for the
  pretrained base, is set on the whole model before ``compile``. Nothing trains (Keras warns
  "The model does not have any trainable weights" and goes on): ``val_loss`` and
  ``val_accuracy`` repeat one exact value at every epoch, ``loss`` differs only in float32
  round-off (the batch order changes the summation). A dead model.
- ``keras_short_overfit``: a 64-512-512-10 MLP, Adam 1e-3, no regularisation, on the 1,280
  training digits with 30% of their labels replaced by random ones (a noisy annotator), each
  epoch showing the training set 4 times (an oversampling ``np.tile``), 3 epochs. The model
  memorises the wrong labels: the train loss falls at every epoch while ``val_loss`` is best
  after epoch 0 and higher at each epoch after it, over 25% above its best at epoch 2.
  Overfitting on 3 evaluations, the shape of most short Keras fine-tuning logs.
- ``keras_tiny_val_set`` and ``keras_jittery_val_healthy``: one training setup, two
  validation sets. A 64-128(BatchNorm)-10 MLP, Adam 0.03, batch 4, on the first 300
  training digits for 30 epochs (tiny batches through BatchNorm at a high LR: the model
  moves a lot between epochs). ``keras_tiny_val_set`` validates on the first 24 eval
  digits (a validation split left tiny): ``val_accuracy`` moves in steps of 1/24 and one
  evaluation cannot tell one wrong digit from two, so the best epoch by it is a draw from
  the noise (the AUDIT #20 / wild3 keras/035 shape). ``keras_jittery_val_healthy`` validates
  on all 517: ``val_loss`` wobbles from epoch to epoch (0.21-0.39 over the last 12 epochs)
  around a converged level, the ordinary late jitter of a short Keras run (wild3 keras/013,
  keras/015), which one evaluation still resolves to better than a 1.5x difference.
- ``keras_finetune_overfit_4_epochs``: a pretrained MLP fine-tuned for 4 logged epochs on
  200 digits half of whose labels are random: ``val_loss`` is lowest at epoch 0 and higher
  at each later epoch, under 25% above it (overfitting that rests on the order of 4
  evaluations, not on a large effect).
- ``keras_eight_val_samples``: the jittery setup on 30 training digits for 14 epochs,
  validated on 8 digits: ``val_accuracy`` takes values k/8 (the binomial error of 8
  samples, which 14 quantised evaluations' jitter estimate cannot show).
- ``keras_binary_chance``: a logistic regression on "digit >= 5" with the label column
  shuffled against the images: ``val_loss`` at ln 2 throughout, the train loss flat.
- ``keras_shuffled_train_labels``: the training labels shuffled, the eval labels right:
  the train loss falls while ``val_loss`` never improves on its first epoch.

Environment (see examples/README.md; the framework venv plus Keras)::

    /tmp/examples-frameworks/bin/pip install -r examples/keras_requirements.txt
    /tmp/examples-frameworks/bin/python examples/keras_runs.py            # all, ~3 min
    /tmp/examples-frameworks/bin/python examples/keras_runs.py keras_frozen

Each run replaces its folder's ``training.log`` and its own entry in ``examples/expected.json``;
the ground truth is Keras' own ``History`` (the values ``CSVLogger`` wrote), read in memory.
"""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "torch"

import itertools
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

LOG_NAME = "training.log"


def classifier(hidden: tuple[int, ...]) -> keras.Model:
    layers: list[Any] = [keras.Input((64,))]
    layers += [keras.layers.Dense(width, activation="relu") for width in hidden]
    layers.append(keras.layers.Dense(10, activation="softmax"))
    return keras.Sequential(layers)


def epoch_log_layout(epochs: int) -> dict[str, Any]:
    """expected.json's file and step fields of a Keras log: one row per epoch, from 0."""
    last = epochs - 1
    return {
        "files": [LOG_NAME],
        "steps": last,
        "max_steps": last,
        "logging_steps": 1,
        "eval_steps": 1,
    }


def fit_logged(
    name: str,
    model: keras.Model,
    learning_rate: float,
    train: tuple[np.ndarray, np.ndarray],
    data: Digits,
    epochs: int,
    batch_size: int = 32,
    val_rows: int | None = None,
    metrics: tuple[str, ...] = ("accuracy",),
) -> dict[str, list[float]]:
    """Compile, fit with ``CSVLogger`` into ``examples/<name>/training.log``, return History.
    Validation on the first `val_rows` eval digits (all by default)."""
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=list(metrics),
    )
    history = model.fit(
        *train,
        epochs=epochs,
        batch_size=batch_size,
        validation_data=(data.x_eval[:val_rows], data.y_eval[:val_rows]),
        verbose=0,
        callbacks=[keras.callbacks.CSVLogger(str(folder / LOG_NAME))],
    )
    return {key: [float(v) for v in values] for key, values in history.history.items()}


def keras_frozen(data: Digits) -> dict[str, Any]:
    keras.utils.set_random_seed(0)
    base = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu")])
    model = keras.Sequential([base, keras.layers.Dense(10, activation="softmax")])
    model.trainable = False  # the bug: meant for `base` (a pretrained feature extractor)
    epochs = 6
    h = fit_logged("keras_frozen", model, 1e-3, (data.x_train, data.y_train), data, epochs)
    assert len(set(h["val_loss"])) == 1, h["val_loss"]  # what the run is for
    loss_spread = max(h["loss"]) - min(h["loss"])
    return {
        "summary": (
            "Keras MLP on digits with model.trainable = False set on the whole model (meant "
            "for its base) before compile: nothing trains; val_loss repeats one exact value, "
            "loss moves only by float32 round-off. CSVLogger, 6 epochs."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "eval/loss",
                "log_column": "val_loss",
                "step_range": [0, epochs - 1],
                "constant_value": rounded(h["val_loss"][0]),
                "constant_points": epochs,
                "criterion": "every logged val_loss is the same float32 value",
                "min_severity": "warning",
            },
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "train/loss",
                "log_column": "loss",
                "step_range": [0, epochs - 1],
                "constant_value": rounded(h["loss"][0]),
                "largest_difference": float(f"{loss_spread:.3g}"),
                "criterion": "every logged loss within float32 round-off of the others",
                "min_severity": "warning",
            },
        ],
        **epoch_log_layout(epochs),
        "facts": {
            "step_convention": "Keras' epoch index: the first epoch is step 0",
            "trainable_weights": len(model.trainable_weights),
            "val_accuracy": rounded(h["val_accuracy"][0]),
        },
    }


def keras_facts(**values: Any) -> dict[str, Any]:
    """expected.json's facts of a Keras run: the step convention, `values`, the framework."""
    step = "Keras' epoch index: the first epoch is step 0"
    return {"step_convention": step, **values, "framework": "keras"}


def short_overfit_pathology(
    val_loss: list[float], best: int, rise: float, **extra: Any
) -> dict[str, Any]:
    """expected.json's overfitting pathology of a short Keras run, best at epoch `best`."""
    return {
        "kind": "overfitting",
        "detector": "overfitting",
        "metric": "eval/loss",
        "log_column": "val_loss",
        "best_step": best,
        "step_range": [best, len(val_loss) - 1],
        "best_eval_loss": rounded(val_loss[best]),
        "last_eval_loss": rounded(val_loss[-1]),
        "eval_rise_percent": rounded(rise),
        "evaluations": len(val_loss),
        **extra,
        "min_severity": "warning",
        "max_severity": "warning",
    }


NOISY_LABEL_FRACTION = 0.3
REPEATS_PER_EPOCH = 4


def keras_short_overfit(data: Digits) -> dict[str, Any]:
    seed = 1
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    labels = data.y_train.copy()
    noisy = rng.random(labels.size) < NOISY_LABEL_FRACTION
    labels[noisy] = rng.integers(0, 10, int(noisy.sum()))
    train = (
        np.tile(data.x_train, (REPEATS_PER_EPOCH, 1)),
        np.tile(labels, REPEATS_PER_EPOCH),
    )
    epochs = 3
    h = fit_logged("keras_short_overfit", classifier((512, 512)), 1e-3, train, data, epochs)
    val_loss, val_accuracy, loss = h["val_loss"], h["val_accuracy"], h["loss"]
    best = int(np.argmin(val_loss))
    best_accuracy = int(np.argmax(val_accuracy))
    rise = 100 * (val_loss[-1] / val_loss[best] - 1)
    assert all(b < a for a, b in itertools.pairwise(loss)), loss
    assert best == 0 and val_loss[1] < val_loss[2] and rise >= 25, val_loss
    return {
        "summary": (
            "Keras 512-512 MLP on digits with 30% random labels, each epoch the training set "
            f"{REPEATS_PER_EPOCH} times, 3 epochs: train loss falls every epoch, val_loss is "
            f"best at epoch {best} and {rise:.0f}% higher at the last; val_accuracy is best "
            f"at epoch {best_accuracy}. CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            short_overfit_pathology(
                val_loss,
                best,
                rise,
                train_loss=[rounded(v) for v in loss],
                best_val_accuracy_step=best_accuracy,
                best_val_accuracy=rounded(val_accuracy[best_accuracy]),
            )
        ],
        **epoch_log_layout(epochs),
        "facts": {
            "step_convention": "Keras' epoch index: the first epoch is step 0",
            "noisy_labels": int(noisy.sum()),
            "val_loss": [rounded(v) for v in val_loss],
            "val_accuracy": [rounded(v) for v in val_accuracy],
            "framework": "keras",
        },
    }


JITTERY_ROWS = 300
JITTERY_EPOCHS = 30
JITTERY_LR = 0.03
JITTERY_BATCH = 4
TINY_VAL = 24


def jittery_fit(
    name: str,
    data: Digits,
    val_rows: int,
    train_rows: int = JITTERY_ROWS,
    epochs: int = JITTERY_EPOCHS,
) -> dict[str, list[float]]:
    """The shared setup of the validation-set runs: a 64-128(BatchNorm)-10 MLP, seed 0."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(128),
            keras.layers.BatchNormalization(),
            keras.layers.Activation("relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    train = (data.x_train[:train_rows], data.y_train[:train_rows])
    return fit_logged(name, model, JITTERY_LR, train, data, epochs, JITTERY_BATCH, val_rows)


def _setup_text(val_rows: int) -> str:
    return (
        f"Keras 64-128(BatchNorm)-10 MLP, Adam {JITTERY_LR:g}, batch {JITTERY_BATCH}, on the "
        f"first {JITTERY_ROWS} training digits for {JITTERY_EPOCHS} epochs, validated on "
        f"{val_rows} eval digits after every epoch. CSVLogger."
    )


def keras_tiny_val_set(data: Digits) -> dict[str, Any]:
    h = jittery_fit("keras_tiny_val_set", data, TINY_VAL)
    accuracy = h["val_accuracy"]
    late = accuracy[JITTERY_EPOCHS // 2 :]
    # What the run is for: a 24-digit val set, so val_accuracy takes values k/24 only.
    assert all(abs(a * TINY_VAL - round(a * TINY_VAL)) < 1e-4 for a in accuracy), accuracy
    wrong = sorted({round((1 - a) * TINY_VAL) for a in late})
    return {
        "summary": (
            _setup_text(TINY_VAL) + " The validation set is 24 digits: val_accuracy moves in "
            f"steps of 1/24 (late epochs: {wrong} wrong digits), so the best epoch by it is "
            "a draw from the noise."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "noisy_eval",
                "detector": "eval_noise",
                "metric": "val_accuracy",
                "log_column": "val_accuracy",
                "step_range": [JITTERY_EPOCHS // 2, JITTERY_EPOCHS - 1],
                "eval_samples_per_evaluation": TINY_VAL,
                "late_wrong_digits": wrong,
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "plateau": "the train loss levels off from mid-run (info): true",
        },
        **epoch_log_layout(JITTERY_EPOCHS),
        "facts": {
            "step_convention": "Keras' epoch index: the first epoch is step 0",
            "val_loss": [rounded(v) for v in h["val_loss"]],
            "val_accuracy": [rounded(v) for v in accuracy],
            "framework": "keras",
        },
    }


def keras_jittery_val_healthy(data: Digits) -> dict[str, Any]:
    h = jittery_fit("keras_jittery_val_healthy", data, len(data.y_eval))
    val_loss = h["val_loss"]
    late = val_loss[JITTERY_EPOCHS // 2 :]
    return {
        "summary": (
            _setup_text(len(data.y_eval)) + " val_loss wobbles around a converged level "
            f"({min(late):.3g}-{max(late):.3g} over the last {len(late)} epochs): the "
            "ordinary late jitter of a short Keras run, not a noisy eval set. Healthy."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        **epoch_log_layout(JITTERY_EPOCHS),
        "facts": {
            "step_convention": "Keras' epoch index: the first epoch is step 0",
            "val_loss": [rounded(v) for v in val_loss],
            "val_accuracy": [rounded(v) for v in h["val_accuracy"]],
            "framework": "keras",
        },
    }


FINETUNE_ROWS = 200
FINETUNE_NOISY_FRACTION = 0.5
FINETUNE_LR = 1.5e-4
FINETUNE_EPOCHS = 4


def keras_finetune_overfit_4_epochs(data: Digits) -> dict[str, Any]:
    """A model trained on the clean digits (not logged), then fine-tuned for 4 logged epochs
    on 200 digits half of whose labels are random: it memorises them, so the clean
    val_loss is best after the first logged epoch and higher after each one."""
    seed = 0
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    model = classifier((256,))
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    model.fit(data.x_train, data.y_train, epochs=15, batch_size=32, verbose=0)  # pretraining
    labels = data.y_train[-FINETUNE_ROWS:].copy()
    noisy = rng.random(labels.size) < FINETUNE_NOISY_FRACTION
    labels[noisy] = rng.integers(0, 10, int(noisy.sum()))
    train = (data.x_train[-FINETUNE_ROWS:], labels)
    name = "keras_finetune_overfit_4_epochs"
    # Loss only (no accuracy metric), as many fine-tuning logs: at this small LR the
    # argmax of almost every eval digit stays put, so an accuracy would not move.
    h = fit_logged(
        name, model, FINETUNE_LR, train, data, FINETUNE_EPOCHS, batch_size=16, metrics=()
    )
    val_loss, loss = h["val_loss"], h["loss"]
    rise = 100 * (val_loss[-1] / val_loss[0] - 1)
    # What the run is for: best first, higher at each later epoch, a moderate rise (under
    # the 25% a 3-evaluation run needs), the train loss falling at every epoch.
    assert all(b > a for a, b in itertools.pairwise(val_loss)), val_loss
    assert all(b < a for a, b in itertools.pairwise(loss)), loss
    assert 5 <= rise < 25, val_loss
    return {
        "summary": (
            "Keras 64-256-10 MLP trained on the 1,280 clean digits (15 epochs, not logged), "
            f"then fine-tuned for {FINETUNE_EPOCHS} logged epochs (Adam {FINETUNE_LR:g}, "
            f"batch 16) on {FINETUNE_ROWS} digits with {FINETUNE_NOISY_FRACTION:.0%} random "
            f"labels: the train loss falls every epoch, val_loss is best at epoch 0 and "
            f"higher at each later epoch, {rise:.0f}% above it at the last. CSVLogger, loss "
            "only (no accuracy metric)."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            short_overfit_pathology(
                val_loss,
                0,
                rise,
                criterion=(
                    "the lowest evaluation, then 3 each higher than the one before "
                    "(1/(4 x 3!) = 0.042 under exchangeable noise) and 5%+ above it"
                ),
            )
        ],
        **epoch_log_layout(FINETUNE_EPOCHS),
        "facts": keras_facts(
            noisy_labels=int(noisy.sum()),
            val_loss=[rounded(v) for v in val_loss],
            train_loss=[rounded(v) for v in loss],
        ),
    }


SMALL_VAL = 8
SMALL_VAL_ROWS = 30
SMALL_VAL_EPOCHS = 14


def keras_eight_val_samples(data: Digits) -> dict[str, Any]:
    """The jittery setup on the first 30 training digits, 14 epochs, validated on 8: fewer
    evaluations than a jitter estimate needs (16), the shape of most Keras logs."""
    name = "keras_eight_val_samples"
    h = jittery_fit(name, data, SMALL_VAL, SMALL_VAL_ROWS, SMALL_VAL_EPOCHS)
    accuracy = h["val_accuracy"]
    # What the run is for: val_accuracy takes values k/8 only.
    assert all(abs(a * SMALL_VAL - round(a * SMALL_VAL)) < 1e-4 for a in accuracy), accuracy
    late = accuracy[SMALL_VAL_EPOCHS // 2 :]
    right = sorted({round(a * SMALL_VAL) for a in late})
    return {
        "summary": (
            f"Keras 64-128(BatchNorm)-10 MLP, Adam {JITTERY_LR:g}, batch {JITTERY_BATCH}, on "
            f"the first {SMALL_VAL_ROWS} training digits for {SMALL_VAL_EPOCHS} epochs, "
            f"validated on {SMALL_VAL} eval digits after every epoch. CSVLogger. "
            f"val_accuracy takes values k/{SMALL_VAL} only (late epochs: {right} of "
            f"{SMALL_VAL} right): one evaluation's binomial standard error is far larger "
            "than its few quantised values' jitter shows, and the best epoch is a draw."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "noisy_eval",
                "detector": "eval_noise",
                "metric": "val_accuracy",
                "log_column": "val_accuracy",
                "step_range": [SMALL_VAL_EPOCHS // 2, SMALL_VAL_EPOCHS - 1],
                "eval_samples_per_evaluation": SMALL_VAL,
                "late_right_digits": right,
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "eval_noise": "val_loss on 8 digits jitters too (true)",
            "overfitting": "val_loss on 8 digits wanders up and down by 2x (true of the data)",
            "plateau": "the train loss levels off (info): true",
        },
        **epoch_log_layout(SMALL_VAL_EPOCHS),
        "facts": keras_facts(
            val_loss=[rounded(v) for v in h["val_loss"]],
            val_accuracy=[rounded(v) for v in accuracy],
        ),
    }


CHANCE_EPOCHS = 8


def keras_binary_chance(data: Digits) -> dict[str, Any]:
    """A logistic regression (zero-initialised) on "digit >= 5", whose label column was
    shuffled against the image rows (a join bug, train and eval alike): nothing to learn."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    train_labels = rng.permutation((data.y_train >= 5).astype(np.float32))
    eval_labels = rng.permutation((data.y_eval >= 5).astype(np.float32))
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(1, "sigmoid", kernel_initializer="zeros")]
    )
    folder = HERE / "keras_binary_chance"
    folder.mkdir(exist_ok=True)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy", metrics=["accuracy"]
    )
    fitted = model.fit(
        data.x_train,
        train_labels,
        epochs=CHANCE_EPOCHS,
        batch_size=32,
        validation_data=(data.x_eval, eval_labels),
        verbose=0,
        callbacks=[keras.callbacks.CSVLogger(str(folder / LOG_NAME))],
    )
    h = {key: [float(v) for v in values] for key, values in fitted.history.items()}
    val_loss, loss = h["val_loss"], h["loss"]
    ln2 = float(np.log(2.0))
    # What the run is for: val_loss within 2% of ln 2 at every epoch, no epoch below the
    # first, the train loss within 5% of where it started.
    assert all(abs(v - ln2) < 0.02 * ln2 for v in val_loss), val_loss
    assert min(val_loss[1:]) >= val_loss[0] * 0.99 and loss[-1] > 0.95 * loss[0], h
    return {
        "summary": (
            "Keras logistic regression (zero-initialised) on digits >= 5 vs < 5, the label "
            "column shuffled against the images (train and eval alike): val_loss sits at "
            f"ln 2 = {ln2:.4f}, a 50/50 guess, at all {CHANCE_EPOCHS} epochs and the train "
            "loss stays within 2% of its first epoch. Binary cross-entropy, CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "not_learning",
                "detector": "plateau",
                "metric": "eval/loss",
                "log_column": "val_loss",
                "step_range": [0, CHANCE_EPOCHS - 1],
                "chance_level": rounded(ln2),
                "val_loss_range": [rounded(min(val_loss)), rounded(max(val_loss))],
                "criterion": "val_loss never below its first evaluation, at ln 2 throughout",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {"plateau": "val_accuracy never improves either (true)"},
        **epoch_log_layout(CHANCE_EPOCHS),
        "facts": keras_facts(
            val_loss=[rounded(v) for v in val_loss],
            train_loss=[rounded(v) for v in loss],
            val_accuracy=[rounded(v) for v in h["val_accuracy"]],
        ),
    }


SHUFFLED_EPOCHS = 10


def keras_shuffled_train_labels(data: Digits) -> dict[str, Any]:
    """A 64-512-10 MLP whose training labels were shuffled against the images (a join
    bug in the train split only): it memorises them, the eval on true labels never
    improves on its first epoch."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    train = (data.x_train, rng.permutation(data.y_train))
    name = "keras_shuffled_train_labels"
    h = fit_logged(name, classifier((512,)), 3e-4, train, data, SHUFFLED_EPOCHS)
    val_loss, loss = h["val_loss"], h["loss"]
    # What the run is for: no evaluation below the first, the train loss 10%+ lower.
    assert min(val_loss) == val_loss[0] and loss[-1] < 0.9 * loss[0], h
    rise = 100 * (val_loss[-1] / val_loss[0] - 1)
    return {
        "summary": (
            "Keras 64-512-10 MLP, Adam 3e-4, on the 1,280 training digits with their label "
            "column shuffled against the images (the eval split's labels are right): the "
            f"train loss falls {loss[0]:.3f} -> {loss[-1]:.3f} (memorising) while val_loss "
            f"never goes below its first epoch ({val_loss[0]:.4f}; {rise:.1f}% higher at "
            f"the last of {SHUFFLED_EPOCHS}). CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            short_overfit_pathology(
                val_loss,
                0,
                rise,
                criterion="val_loss never below its first evaluation while loss falls",
            )
        ],
        **epoch_log_layout(SHUFFLED_EPOCHS),
        "facts": keras_facts(
            val_loss=[rounded(v) for v in val_loss],
            train_loss=[rounded(v) for v in loss],
            val_accuracy=[rounded(v) for v in h["val_accuracy"]],
        ),
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {
    "keras_frozen": keras_frozen,
    "keras_short_overfit": keras_short_overfit,
    "keras_tiny_val_set": keras_tiny_val_set,
    "keras_jittery_val_healthy": keras_jittery_val_healthy,
    "keras_finetune_overfit_4_epochs": keras_finetune_overfit_4_epochs,
    "keras_eight_val_samples": keras_eight_val_samples,
    "keras_binary_chance": keras_binary_chance,
    "keras_shuffled_train_labels": keras_shuffled_train_labels,
}


def main(names: list[str]) -> None:
    torch.set_num_threads(1)
    write_runs(RUNS, names, load_split_digits())


if __name__ == "__main__":
    main(sys.argv[1:])
