"""Write `logs/train/` and `logs/validation/` with Keras's own `TensorBoard` callback.

What the TensorBoard reader must recognise as Keras: the callback's `train/` and
`validation/` folders with `epoch_*` tags, written by TensorFlow's summary writer, and the
`keras` model-config summary (plugin `graph_keras_model`) it writes in `train/`. A tiny
Sequential regression (CPU, seeded) is trained with plain SGD at a learning rate far too
high for its inputs, so the loss grows every epoch until it overflows to inf/NaN (the
divergence detector's clipping fix must come out in Keras's words). The callback keeps its
defaults (`write_graph=True` writes the model-config summary; Keras 3 writes no op graph
here, so the files stay a few KB).

Regenerate (from the repository root, in a throwaway environment: TensorFlow is large)::

    pip install tensorflow-cpu==2.21.0 keras==3.15.1 tensorboard==2.21.0
    python tests/data/tb_writers/keras/make_fixture.py

Generated with tensorflow-cpu 2.21.0, keras 3.15.1 (TensorFlow backend) and tensorboard
2.21.0.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

HERE = Path(__file__).resolve().parent
EPOCHS = 12


def main() -> None:
    keras.utils.set_random_seed(0)
    target = HERE / "logs"
    shutil.rmtree(target, ignore_errors=True)
    rng = np.random.default_rng(0)
    x = (3.0 * rng.standard_normal((320, 8))).astype("float32")
    y = (x @ rng.standard_normal((8, 1)) + 0.1 * rng.standard_normal((320, 1))).astype("float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.3), loss="mse")
    model.fit(
        x[:256],
        y[:256],
        validation_data=(x[256:], y[256:]),
        epochs=EPOCHS,
        batch_size=32,
        verbose=0,
        callbacks=[keras.callbacks.TensorBoard(log_dir=str(target))],
    )
    print(sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()))


if __name__ == "__main__":
    main()
