"""Write `mlruns/` with MLflow's own client (its file store), for the MLflow reader's tests.

The store is the real format, not an imitation. One experiment, `tiny-logreg`, with two
runs of a small logistic regression trained by full-batch gradient descent on seeded
random data (numpy, CPU):

- `lr-0.5` and `lr-2.0`: `train/loss` (a name with `/`: MLflow nests it as a folder),
  `val_loss` and `learning_rate` logged every step for 40 steps;
- in `lr-2.0`, as a resumed run would: steps 30-39 of `train/loss` are logged a second
  time with their own values (the re-logged values are the later writes), and step 5 of
  `val_loss` is logged again with an older timestamp than the line before it;
- `lr-0.5` logs one `grad_norm` value of NaN at step 20 (MLflow keeps it as `nan`).

Regenerate (from the repository root; written with mlflow-skinny 3.17.2 and numpy 2.4.6)::

    pip install mlflow-skinny==3.17.2 numpy==2.4.6

    python tests/data/mlflow/make_fixture.py

`write_store(folder)` is also used by the test that writes a fresh store when mlflow is
installed (the `mlflow-test` extra).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 3
STEPS = 40


def _train(lr: float) -> list[tuple[float, float, float]]:
    """(train loss, val loss, gradient norm) per step of gradient descent."""
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(400, 5))
    w_true = rng.normal(size=5)
    y = (x @ w_true + 0.5 * rng.normal(size=400) > 0).astype(float)
    x_train, y_train, x_val, y_val = x[:300], y[:300], x[300:], y[300:]
    w = np.zeros(5)

    def loss(xs: np.ndarray, ys: np.ndarray) -> float:
        p = 1 / (1 + np.exp(-(xs @ w)))
        return float(-np.mean(ys * np.log(p + 1e-12) + (1 - ys) * np.log(1 - p + 1e-12)))

    out = []
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(x_train @ w)))
        grad = x_train.T @ (p - y_train) / len(y_train)
        w = w - lr * grad
        out.append((loss(x_train, y_train), loss(x_val, y_val), float(np.linalg.norm(grad))))
    return out


def write_store(root: Path) -> Path:
    """Write the two runs into `root/mlruns` with the MLflow client; return the store."""
    # MLflow 3.x keeps the file store in "maintenance mode" and refuses it unless asked:
    # it still writes it, and stores written by earlier versions are everywhere.
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    store = root / "mlruns"
    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    experiment = client.create_experiment("tiny-logreg")
    base = 1_700_000_000_000
    for lr in (0.5, 2.0):
        run = client.create_run(experiment, run_name=f"lr-{lr}")
        run_id = run.info.run_id
        client.log_param(run_id, "lr", lr)
        history = _train(lr)
        for step, (train_loss, val_loss, grad_norm) in enumerate(history):
            stamp = base + 1000 * step
            client.log_metric(run_id, "train/loss", train_loss, timestamp=stamp, step=step)
            client.log_metric(run_id, "val_loss", val_loss, timestamp=stamp, step=step)
            client.log_metric(run_id, "learning_rate", lr, timestamp=stamp, step=step)
            norm = float("nan") if (lr == 0.5 and step == 20) else grad_norm
            client.log_metric(run_id, "grad_norm", norm, timestamp=stamp, step=step)
        if lr == 2.0:
            resumed = _train(lr * 0.9)
            for step in range(30, STEPS):
                stamp = base + 1000 * (STEPS + step)
                client.log_metric(
                    run_id, "train/loss", resumed[step][0], timestamp=stamp, step=step
                )
            client.log_metric(run_id, "val_loss", history[5][1] * 1.01, timestamp=base, step=5)
        client.set_terminated(run_id)
    return store


def main() -> None:
    target = HERE / "mlruns"
    if target.exists():
        shutil.rmtree(target)
    write_store(HERE)
    print(f"wrote {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
