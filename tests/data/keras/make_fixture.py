"""Write `appended_runs.csv`: Keras' own CSVLogger(append=True) used by two training runs.

A real, seeded run of a small Keras 3 MLP (torch backend, CPU) on scikit-learn's bundled
`load_digits`, trained twice into the same log file, the second time with a smaller
learning rate: what a user gets who re-runs a script whose CSVLogger appends. The epoch
counter restarts at 0 for the second run; the reader must analyse the last run, not read
its first epoch as the first run getting worse.

Environment (not the project's dependencies): keras>=3, torch, scikit-learn.
    KERAS_BACKEND=torch python tests/data/keras/make_fixture.py
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

OUT = Path(__file__).with_name("appended_runs.csv")


def train(learning_rate: float, epochs: int) -> None:
    """One run, logged by CSVLogger(append=True) into OUT."""
    keras.utils.set_random_seed(0)
    digits = load_digits()
    x_train, x_val, y_train, y_val = train_test_split(
        digits.data / 16.0, digits.target, test_size=0.25, random_state=0
    )
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(
        x_train,
        y_train,
        validation_data=(x_val, y_val),
        epochs=epochs,
        batch_size=32,
        verbose=0,
        callbacks=[keras.callbacks.CSVLogger(str(OUT), append=True)],
    )


if __name__ == "__main__":
    OUT.unlink(missing_ok=True)
    train(0.1, 12)
    train(0.03, 12)
