"""A real Keras run that predicts one class for every example, logged by Keras' ``CSVLogger``.

``keras_uint8_inputs_chance``: the digits 0-4 of scikit-learn's bundled set (the split of
``examples/generate.py``), each class cut to the same count (118 per class to train, 42 per
class to validate: a balanced 5-class set), scaled "to [0, 1] as 8-bit images" with
``(pixels / 255.0).astype(np.uint8)``, the cast meant to keep the array compact. The cast
truncates every pixel (0-16, so at most 0.063 after the division) to 0: every input is the
zero vector. A 64-64-5 MLP (softmax), Adam 1e-2, batch 32, 8 epochs, on CPU, seeded.

The model's output cannot depend on its input, so it predicts one class for every example
at every epoch (which class moves with the output bias) and ``val_accuracy`` is exactly 0.2,
1/5 in float32, at all 8 epochs, while ``val_loss`` moves (by about 1e-4, around
ln 5 = 1.6094: the output bias learns the class prior and jitters with the batches). The
shape of a published 5-class Keras log with ``val_accuracy`` 0.2 at every epoch.

The ground truth is what a callback counted: the predicted class of every validation digit
after each epoch (``model.predict``), and Keras' own ``History`` (the values ``CSVLogger``
wrote), read in memory, never from the log::

    /tmp/examples-frameworks/bin/python examples/keras_one_class.py    # ~30 s

It replaces ``examples/keras_uint8_inputs_chance/training.log`` and its entry in
``examples/expected.json``.
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
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402
from generate import DATA_SEED, TRAIN_SIZE  # noqa: E402
from keras_runs import LOG_NAME, epoch_log_layout, keras_facts  # noqa: E402

NAME = "keras_uint8_inputs_chance"
CLASSES = 5
EPOCHS = 8
LEARNING_RATE = 1e-2
BATCH = 32

Split = tuple[np.ndarray, np.ndarray]


def balanced_split() -> tuple[Split, Split]:
    """The digits 0 to CLASSES-1 of generate.py's train and eval split, each class cut to
    the count of the rarest in its split, through the uint8 cast (the bug)."""
    digits = load_digits()
    images = (digits.data / 255.0).astype(np.uint8)  # the bug: truncates every pixel to 0
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(DATA_SEED).permutation(len(labels))

    def balanced(rows: np.ndarray) -> Split:
        rows = rows[labels[rows] < CLASSES]
        count = int(np.bincount(labels[rows]).min())
        kept = np.concatenate([rows[labels[rows] == c][:count] for c in range(CLASSES)])
        kept = np.sort(kept)  # the split's order, not class blocks
        return images[kept].astype(np.float32), labels[kept]

    return balanced(order[:TRAIN_SIZE]), balanced(order[TRAIN_SIZE:])


class PredictedClasses(keras.callbacks.Callback):
    """Counts the predicted class of every validation example after each epoch."""

    def __init__(self, x_val: np.ndarray) -> None:
        super().__init__()
        self.x_val = x_val
        self.counts: list[list[int]] = []

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        predicted = self.model.predict(self.x_val, verbose=0).argmax(axis=1)
        self.counts.append(np.bincount(predicted, minlength=CLASSES).tolist())


def keras_uint8_inputs_chance(_: object) -> dict[str, Any]:
    keras.utils.set_random_seed(0)
    (x_train, y_train), (x_val, y_val) = balanced_split()
    per_class = np.bincount(y_val, minlength=CLASSES)
    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    folder = HERE / NAME
    folder.mkdir(exist_ok=True)
    predicted = PredictedClasses(x_val)
    fitted = model.fit(
        x_train,
        y_train,
        epochs=EPOCHS,
        batch_size=BATCH,
        validation_data=(x_val, y_val),
        verbose=0,
        callbacks=[keras.callbacks.CSVLogger(str(folder / LOG_NAME)), predicted],
    )
    h = {key: [float(v) for v in values] for key, values in fitted.history.items()}
    val_accuracy, val_loss = h["val_accuracy"], h["val_loss"]
    classes = [int(np.argmax(counts)) for counts in predicted.counts]
    # What the run is for: a balanced validation set, every input the zero vector, one
    # class predicted for every validation digit at every epoch, so val_accuracy is 1/5
    # (in float32) throughout, while val_loss is not one repeated value.
    assert len(set(per_class.tolist())) == 1 and float(x_train.max()) == 0.0, per_class
    assert all(max(counts) == len(y_val) for counts in predicted.counts), predicted.counts
    assert all(v == float(np.float32(1 / CLASSES)) for v in val_accuracy), val_accuracy
    assert len(set(val_loss)) > 1, val_loss
    return {
        "summary": (
            f"Keras 64-64-{CLASSES} MLP, Adam {LEARNING_RATE:g}, batch {BATCH}, {EPOCHS} "
            f"epochs, on the digits 0-{CLASSES - 1} balanced ({per_class[0]} per class to "
            "validate), the pixels cast with (x / 255.0).astype(np.uint8): every input is "
            "the zero vector, the model predicts one class for every example, val_accuracy "
            f"is exactly 1/{CLASSES} at every epoch while val_loss moves "
            f"{min(val_loss):.7g}-{max(val_loss):.7g}. CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "stuck_metric",
                "detector": "plateau",
                "metric": "val_accuracy",
                "log_column": "val_accuracy",
                "step_range": [0, EPOCHS - 1],
                "constant_value": rounded(val_accuracy[0]),
                "constant_points": EPOCHS,
                "classes": CLASSES,
                "criterion": "the predicted class of every validation digit counted after "
                "each epoch (model.predict): one class for all of them at every epoch",
                "min_severity": "warning",
            }
        ],
        "may_also_flag": {
            "plateau": "val_loss stays near ln 5 (the loss of a constant uniform output) and "
            "never falls: not learning, true",
        },
        **epoch_log_layout(EPOCHS),
        "facts": keras_facts(
            validation_per_class=int(per_class[0]),
            predicted_class_per_epoch=classes,
            val_accuracy=[rounded(v) for v in val_accuracy],
            val_loss=[rounded(v) for v in val_loss],
            train_loss=[rounded(v) for v in h["loss"]],
        ),
    }


RUNS: dict[str, Callable[[Any], dict[str, Any]]] = {NAME: keras_uint8_inputs_chance}


if __name__ == "__main__":
    torch.set_num_threads(1)
    write_runs(RUNS, sys.argv[1:], None)
