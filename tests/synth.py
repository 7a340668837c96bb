"""Synthetic curves for detector ground-truth tests: a pathology planted at a known step.

These are test inputs for the statistics, never example logs (those come from real
training in examples/). Every generator is seeded and returns plain numpy arrays.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from trainspotter.model import FloatArray, Run, Series


def make_run(
    metrics: dict[str, tuple[npt.ArrayLike, npt.ArrayLike]], fmt: str = "synthetic"
) -> Run:
    """A Run from {canonical_name: (steps, values)}."""
    built = {}
    for name, (steps, values) in metrics.items():
        built[name], _ = Series.build(steps, values)
    return Run(metrics=built, source_format=fmt, source_path=f"<{fmt}>")


def decaying_loss(
    steps: npt.ArrayLike,
    *,
    start: float = 2.5,
    floor: float = 0.3,
    tau: float | None = None,
    noise: float = 0.03,
    seed: int = 0,
    ar: float = 0.6,
) -> FloatArray:
    """A healthy loss: exponential decay to `floor`, multiplicative AR(1) noise (real
    minibatch noise is autocorrelated through the optimiser state)."""
    s = np.asarray(steps, dtype=np.float64)
    span = max(float(s[-1] - s[0]), 1.0)
    tau = tau or span / 4.0
    clean = floor + (start - floor) * np.exp(-(s - s[0]) / tau)
    rng = np.random.default_rng(seed)
    eps = rng.normal(0.0, noise, s.size)
    for i in range(1, s.size):
        eps[i] += ar * eps[i - 1] * 0.5
    return clean * np.exp(eps)


def warmup_cosine(
    steps: npt.ArrayLike, *, peak: float = 3e-4, warmup: int = 100, end: float = 0.0
) -> FloatArray:
    """Linear warmup to `peak`, then cosine decay to `end` at the last step."""
    s = np.asarray(steps, dtype=np.float64)
    total = float(s[-1])
    warm = np.clip(s / max(warmup, 1), 0.0, 1.0) * peak
    progress = np.clip((s - warmup) / max(total - warmup, 1.0), 0.0, 1.0)
    cos = end + 0.5 * (peak - end) * (1.0 + np.cos(math.pi * progress))
    return np.where(s < warmup, warm, cos)


def linear_decay(steps: npt.ArrayLike, *, peak: float = 1e-3, warmup: int = 0) -> FloatArray:
    """Optional linear warmup, then linear decay to zero at the last step."""
    s = np.asarray(steps, dtype=np.float64)
    total = float(s[-1])
    warm = np.clip(s / max(warmup, 1), 0.0, 1.0) * peak if warmup else np.full(s.shape, peak)
    decay = peak * np.clip((total - s) / max(total - warmup, 1.0), 0.0, 1.0)
    return np.where(s < warmup, warm, decay)


def step_decay(
    steps: npt.ArrayLike, *, peak: float = 0.1, every: int = 300, gamma: float = 0.1
) -> FloatArray:
    """Step schedule: multiply by `gamma` every `every` steps."""
    s = np.asarray(steps, dtype=np.float64)
    return peak * gamma ** np.floor(s / every)


def sgdr(
    steps: npt.ArrayLike, *, peak: float = 1e-3, period: int = 250, mult: int = 1
) -> FloatArray:
    """Cosine annealing with warm restarts (SGDR): LR jumps back to `peak` each period."""
    s = np.asarray(steps, dtype=np.int64)
    out = np.empty(s.shape, dtype=np.float64)
    start, length = 0, period
    boundaries = []
    while start <= (s[-1] if s.size else 0):
        boundaries.append((start, length))
        start += length
        length *= mult
    for b_start, b_len in boundaries:
        sel = (s >= b_start) & (s < b_start + b_len)
        t = (s[sel] - b_start) / b_len
        out[sel] = 0.5 * peak * (1 + np.cos(math.pi * t))
    return out


def every(n_steps: int, interval: int, start: int = 0) -> npt.NDArray[np.int64]:
    """Logged steps for a logging interval (1 = per-step logging, 50-500 = coarse)."""
    return np.arange(start, n_steps, interval, dtype=np.int64)


def healthy_noisy_run(seed: int) -> Run:
    """A healthy run with everything varied by `seed`: length (300-20,000 steps), logging
    interval (1-200), multiplicative noise (1-10%), start level and floor, decay speed and
    LR schedule (cosine, linear, step, warm restarts, constant), plus a coarse eval loss
    and a grad norm. For false-alarm rates: no detector should warn on it."""
    rng = np.random.default_rng(1000 + seed)
    n_steps = int(rng.choice([300, 1000, 5000, 20000]))
    interval = int(rng.choice([1, 5, 10, 50, 200]))
    steps = every(n_steps, interval, start=int(rng.integers(0, 2)))
    if steps.size < 15:
        steps = every(n_steps, max(1, n_steps // 60))
    noise = float(rng.choice([0.01, 0.03, 0.06, 0.1]))
    start = float(rng.uniform(1.0, 11.0))
    floor = start * float(rng.uniform(0.05, 0.6))
    tau = float(steps[-1] - steps[0]) * float(rng.uniform(0.1, 0.5))
    loss = decaying_loss(steps, start=start, floor=floor, tau=tau, noise=noise, seed=seed)
    schedule = str(rng.choice(["cosine", "linear", "step", "sgdr", "constant"]))
    if schedule == "cosine":
        lr = warmup_cosine(steps, warmup=max(1, n_steps // 20))
    elif schedule == "linear":
        lr = linear_decay(steps, warmup=n_steps // 20)
    elif schedule == "step":
        lr = step_decay(steps, every=max(1, n_steps // 3))
    elif schedule == "sgdr":
        lr = sgdr(steps, period=max(2, n_steps // 4))
    else:
        lr = np.full(steps.size, 1e-3)
    eval_steps = steps[:: max(1, steps.size // 20)]
    eval_loss = decaying_loss(
        eval_steps, start=start * 1.05, floor=floor * 1.2, tau=tau, noise=noise / 2, seed=seed + 7
    )
    grad_norm = np.exp(rng.normal(0.0, 0.2, steps.size))
    return make_run(
        {
            "train/loss": (steps, loss),
            "eval/loss": (eval_steps, eval_loss),
            "lr": (steps, lr),
            "grad_norm": (steps, grad_norm),
        }
    )


# Property-test input: logged (step, value) pairs in any order, with duplicate and negative
# steps and non-finite values, as a reader could hand them over before Series.build.
FINITE_OR_NOT = st.floats(allow_nan=True, allow_infinity=True, width=64)
LOGGED_POINTS = st.tuples(st.integers(-5, 10**9), FINITE_OR_NOT)


def columns(points: list[tuple[int, float]]) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """(steps, values) arrays from LOGGED_POINTS draws, in the order drawn."""
    steps = np.array([p[0] for p in points], dtype=np.int64)
    return steps, np.array([p[1] for p in points], dtype=np.float64)
