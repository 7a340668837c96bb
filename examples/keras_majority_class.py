"""Real Keras runs on small imbalanced tasks, logged by Keras' own ``CSVLogger``.

The task: is a digit an 8 or a 9 (22% of them are), on the first 300 training digits of
``examples/generate.py``'s split, validated after every epoch on the first 90 eval digits
(16 positives: a model that predicts "no" for all of them scores 74/90 = 0.8222222). The
model: a 64-16-16-16-16-1 ReLU MLP with a sigmoid output, binary cross-entropy, batch 32,
Keras 3 on its torch backend, CPU, seeded (``keras.utils.set_random_seed``, one torch
thread), as ``examples/keras_runs.py``.

- ``keras_majority_then_learns``: plain SGD at LR 0.01, 60 epochs. The output bias learns
  the class prior first; the weights of the deep narrow MLP grow slowly at that LR, so the
  model predicts "no" for every validation digit for most of the run while ``val_loss``
  falls at every epoch, and only then starts to separate the classes (val_accuracy 0.9 at
  the end). ``val_accuracy`` is exactly the majority share at most epochs: the shape of a
  published binary classifier (val_accuracy 26/47 at 21 of its first 23 epochs, val_loss
  falling) and of a segmentation model's IoU at the all-background value.
- ``keras_imbalanced_healthy``: the same model and data with Adam at 1e-3, 30 epochs: the
  majority share for the first 8 epochs, then it learns (val_accuracy 0.989 from epoch 21).
  Healthy: a short majority-class start is how an imbalanced run begins.

- ``keras_seg_all_background``: a per-pixel segmentation of generated 16x16 images (a
  bright 3-5 pixel square on Gaussian noise; the square is the foreground, 6% of the
  pixels), 200 training and 30 validation images. The model sees each pixel's 3x3
  neighbourhood and applies a 9-16-16-16-2 ReLU MLP to every pixel (a 1x1-conv stack),
  softmax over background/foreground, categorical cross-entropy, plain SGD at LR 0.005,
  batch 16, 40 epochs, ``keras.metrics.MeanIoU(num_classes=2)``, logged as
  ``val_mean_io_u``. The model predicts background for every validation pixel at most
  epochs while ``val_loss`` falls: ``val_mean_io_u`` is then exactly half the background
  share (the background IoU is that share, the foreground IoU 0), the published shape of a
  segmentation log whose IoU sat at the all-background value.

The ground truth is counted in a callback: after every epoch the model predicts the
validation set and the number of examples (digits, or pixels) it calls positive is
recorded (never read back from the log); Keras' ``History`` gives the logged values.

Environment (see examples/README.md; the framework venv plus Keras)::

    /tmp/examples-frameworks/bin/pip install -r examples/keras_requirements.txt
    /tmp/examples-frameworks/bin/python examples/keras_majority_class.py    # ~3 min
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
from keras_runs import LOG_NAME, epoch_log_layout, keras_facts  # noqa: E402

POSITIVE_DIGITS = (8, 9)
TRAIN_ROWS = 300
VAL_ROWS = 90
HIDDEN = (16, 16, 16, 16)
BATCH = 32


class PositivePredictions(keras.callbacks.Callback):
    """Counts, after every epoch, the validation examples the model calls positive: a
    sigmoid output over 0.5, or a softmax whose class 1 wins (per pixel)."""

    def __init__(self, x_val: np.ndarray) -> None:
        super().__init__()
        self.x_val = x_val
        self.counts: list[int] = []

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        scores = self.model.predict(self.x_val, verbose=0)
        if scores.shape[-1] == 1:
            self.counts.append(int((scores[..., 0] > 0.5).sum()))
        else:
            self.counts.append(int((scores.argmax(axis=-1) == 1).sum()))


def fit_binary(
    name: str, data: Digits, optimizer: keras.optimizers.Optimizer, epochs: int
) -> tuple[dict[str, list[float]], list[int], float]:
    """Train the MLP with ``CSVLogger`` into ``examples/<name>/training.log``; return the
    History, the positive predictions per epoch and the validation majority share."""
    keras.utils.set_random_seed(0)
    y_train = np.isin(data.y_train[:TRAIN_ROWS], POSITIVE_DIGITS).astype(np.float32)
    y_val = np.isin(data.y_eval[:VAL_ROWS], POSITIVE_DIGITS).astype(np.float32)
    layers: list[Any] = [keras.Input((64,))]
    layers += [keras.layers.Dense(width, activation="relu") for width in HIDDEN]
    layers.append(keras.layers.Dense(1, activation="sigmoid"))
    model = keras.Sequential(layers)
    model.compile(optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"])
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    counter = PositivePredictions(data.x_eval[:VAL_ROWS])
    fitted = model.fit(
        data.x_train[:TRAIN_ROWS],
        y_train,
        epochs=epochs,
        batch_size=BATCH,
        validation_data=(data.x_eval[:VAL_ROWS], y_val),
        verbose=0,
        callbacks=[counter, keras.callbacks.CSVLogger(str(folder / LOG_NAME))],
    )
    history = {key: [float(v) for v in values] for key, values in fitted.history.items()}
    return history, counter.counts, float(1.0 - y_val.mean())


def _setup(optimizer: str, epochs: int) -> str:
    return (
        f"Keras 64-16-16-16-16-1 ReLU MLP, {optimizer}, batch {BATCH}, {epochs} epochs, on "
        f"the first {TRAIN_ROWS} training digits labelled 'is it an 8 or a 9' (22% "
        f"positive), validated on the first {VAL_ROWS} eval digits after every epoch. "
        "Binary cross-entropy, CSVLogger."
    )


MAJORITY_EPOCHS = 60


def keras_majority_then_learns(data: Digits) -> dict[str, Any]:
    name = "keras_majority_then_learns"
    h, positives, majority = fit_binary(name, data, keras.optimizers.SGD(0.01), MAJORITY_EPOCHS)
    accuracy, val_loss = h["val_accuracy"], h["val_loss"]
    none_positive = [epoch for epoch, count in enumerate(positives) if count == 0]
    # What the run is for: the model predicts no positive at most epochs (its accuracy is
    # then the majority share), val_loss falls at every epoch, and it learns in the end.
    assert len(none_positive) > MAJORITY_EPOCHS // 2, positives
    assert all(abs(accuracy[e] - majority) < 1e-6 for e in none_positive), accuracy
    assert all(b < a for a, b in itertools.pairwise(val_loss)), val_loss
    assert accuracy[-1] > majority + 0.05, accuracy
    first, last = none_positive[0], none_positive[-1]
    return {
        "summary": (
            _setup("SGD at LR 0.01", MAJORITY_EPOCHS) + " The model calls no validation "
            f"digit positive at {len(none_positive)} of {MAJORITY_EPOCHS} epochs "
            f"({first}-{last}): val_accuracy is exactly the majority share {majority:.7g} "
            f"there while val_loss falls at every epoch ({val_loss[0]:.4f} -> "
            f"{val_loss[last]:.4f} by epoch {last}); then it learns (val_accuracy "
            f"{accuracy[-1]:.4f} at the last epoch)."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "val_accuracy",
                "log_column": "val_accuracy",
                "step_range": [first, last],
                "majority_share": rounded(majority),
                "epochs_without_a_positive_prediction": len(none_positive),
                "criterion": (
                    "epochs at which the model predicts no validation digit positive, "
                    "counted in a callback; val_accuracy is the majority share there"
                ),
                "min_severity": "warning",
                "max_severity": "warning",
            }
        ],
        "may_also_flag": {
            "eval_noise": (
                "val_accuracy on 90 digits: one evaluation's binomial error (~0.04) is as "
                "large as its late changes (true of a 90-digit validation set)"
            ),
        },
        **epoch_log_layout(MAJORITY_EPOCHS),
        "facts": keras_facts(
            positive_predictions=positives,
            val_accuracy=[rounded(v) for v in accuracy],
            val_loss=[rounded(v) for v in val_loss],
        ),
    }


HEALTHY_EPOCHS = 30


def keras_imbalanced_healthy(data: Digits) -> dict[str, Any]:
    name = "keras_imbalanced_healthy"
    h, positives, majority = fit_binary(name, data, keras.optimizers.Adam(1e-3), HEALTHY_EPOCHS)
    accuracy = h["val_accuracy"]
    none_positive = [epoch for epoch, count in enumerate(positives) if count == 0]
    # What the run is for: a short majority-class start (under a third of the run), then
    # it learns to well above the majority share.
    assert len(none_positive) < HEALTHY_EPOCHS // 3, positives
    assert max(accuracy) > majority + 0.1, accuracy
    return {
        "summary": (
            _setup("Adam 1e-3", HEALTHY_EPOCHS) + " The model calls no validation digit "
            f"positive at its first {len(none_positive)} epochs (val_accuracy the majority "
            f"share {majority:.7g}), then learns: val_accuracy {max(accuracy):.4f} at best. "
            "Healthy: a short majority-class start is how an imbalanced run begins."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        **epoch_log_layout(HEALTHY_EPOCHS),
        "facts": keras_facts(
            positive_predictions=positives,
            val_accuracy=[rounded(v) for v in accuracy],
            val_loss=[rounded(v) for v in h["val_loss"]],
        ),
    }


SEG_SIZE = 16
SEG_EPOCHS = 40


def squares(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` noisy images with one bright square each, as each pixel's 3x3 neighbourhood
    (count, 16, 16, 9), and the square's mask (count, 16, 16)."""
    images = rng.normal(0.0, 0.5, (count, SEG_SIZE, SEG_SIZE)).astype(np.float32)
    masks = np.zeros((count, SEG_SIZE, SEG_SIZE), np.int64)
    for i in range(count):
        side = int(rng.integers(3, 6))
        row, col = (int(v) for v in rng.integers(0, SEG_SIZE - side, 2))
        images[i, row : row + side, col : col + side] += 1.0
        masks[i, row : row + side, col : col + side] = 1
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    shifts = [(dr, dc) for dr in range(3) for dc in range(3)]
    patches = [padded[:, dr : dr + SEG_SIZE, dc : dc + SEG_SIZE] for dr, dc in shifts]
    return np.stack(patches, axis=-1).astype(np.float32), masks


def keras_seg_all_background(data: Digits) -> dict[str, Any]:
    del data  # generated images, not digits
    name = "keras_seg_all_background"
    rng = np.random.default_rng(0)
    x_train, y_train = squares(rng, 200)
    x_val, y_val = squares(rng, 30)
    keras.utils.set_random_seed(0)
    layers: list[Any] = [keras.Input((SEG_SIZE, SEG_SIZE, 9))]
    layers += [keras.layers.Dense(16, activation="relu") for _ in range(3)]
    layers.append(keras.layers.Dense(2, activation="softmax"))
    model = keras.Sequential(layers)
    # One-hot targets and categorical cross-entropy: the sparse loss's backward on a 4-D
    # output fails on the torch backend ("grad_input must be contiguous").
    iou = keras.metrics.MeanIoU(num_classes=2, sparse_y_true=False, sparse_y_pred=False)
    model.compile(
        optimizer=keras.optimizers.SGD(0.005), loss="categorical_crossentropy", metrics=[iou]
    )
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    counter = PositivePredictions(x_val)
    one_hot = np.eye(2, dtype=np.float32)
    fitted = model.fit(
        x_train,
        one_hot[y_train],
        epochs=SEG_EPOCHS,
        batch_size=16,
        validation_data=(x_val, one_hot[y_val]),
        verbose=0,
        callbacks=[counter, keras.callbacks.CSVLogger(str(folder / LOG_NAME))],
    )
    h = {key: [float(v) for v in values] for key, values in fitted.history.items()}
    iou_values, val_loss = h["val_mean_io_u"], h["val_loss"]
    background = float(1.0 - y_val.mean())
    empty = [epoch for epoch, count in enumerate(counter.counts) if count == 0]
    # What the run is for: no foreground pixel predicted at most epochs, where the IoU is
    # half the background share; val_loss falling at every epoch.
    assert len(empty) > SEG_EPOCHS // 2, counter.counts
    assert all(abs(iou_values[e] - background / 2) < 1e-6 for e in empty), iou_values
    assert all(b < a for a, b in itertools.pairwise(val_loss)), val_loss
    first, last = empty[0], empty[-1]
    return {
        "summary": (
            "Keras per-pixel segmentation (a 9-16-16-16-2 ReLU MLP on each pixel's 3x3 "
            "neighbourhood) of generated 16x16 images with one bright square (foreground, "
            f"{1 - background:.1%} of the validation pixels), plain SGD at LR 0.005, "
            f"{SEG_EPOCHS} epochs, MeanIoU logged as val_mean_io_u. The model predicts no "
            f"foreground pixel at {len(empty)} of {SEG_EPOCHS} epochs ({first}-{last}): "
            f"val_mean_io_u is exactly half the background share ({background / 2:.7g}) "
            f"there while val_loss falls at every epoch ({val_loss[0]:.4f} -> "
            f"{val_loss[-1]:.4f}). CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "val_mean_io_u",
                "log_column": "val_mean_io_u",
                "step_range": [first, last],
                "all_background_iou": rounded(background / 2),
                "epochs_without_a_foreground_pixel": len(empty),
                "criterion": (
                    "epochs at which the model predicts no validation pixel foreground, "
                    "counted in a callback; val_mean_io_u is half the background share there"
                ),
                "min_severity": "warning",
                "max_severity": "warning",
            }
        ],
        **epoch_log_layout(SEG_EPOCHS),
        "facts": keras_facts(
            foreground_pixels_predicted=counter.counts,
            val_mean_io_u=[rounded(v) for v in iou_values],
            val_loss=[rounded(v) for v in val_loss],
        ),
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {
    "keras_majority_then_learns": keras_majority_then_learns,
    "keras_imbalanced_healthy": keras_imbalanced_healthy,
    "keras_seg_all_background": keras_seg_all_background,
}


if __name__ == "__main__":
    torch.set_num_threads(1)
    write_runs(RUNS, sys.argv[1:], load_split_digits())
