"""Acceptance property (issue 10): on noisy but healthy curves no detector warns.

Every detector runs (through `analyze`, as a user would) on SEEDS generated healthy runs:
several loss shapes (exponential decay, power law, a decay driven by a cosine LR schedule,
the same behind a warmup), logging intervals from 1 to 500 steps, heavy-tailed noise
(Student-t with 3-10 degrees of freedom on the log of the loss, as minibatch losses are
skewed and occasionally far off), logged per step or as interval means, with the companions
a real log carries: an LR schedule, a gradient norm (noisier than the loss, drifting), an
eval loss on its own coarser grid, step time and throughput with periodic slow steps, the
epoch. Nothing in them is a problem a practitioner would act on.

That eval loss is kind, though: Gaussian, independent, 0.25-1.5% jitter, following the train
curve exactly. Real eval curves are rougher, so every seed also runs a second time (family
"realistic_eval") with the same train side and eval metrics drawn from their own generator
(`realistic_eval_metrics`): an eval loss with 1-10% relative jitter that is i.i.d.
Gaussian, Student-t (3-10 df: a small eval set with a few hard examples) or AR(1) (phi
0.3-0.85: consecutive checkpoints share most of their errors), 6 to 60 evaluations,
following the train curve or flat at its floor from 30-70% of the run while the train loss
keeps falling (a widening gap with a flat eval loss is normal, not overfitting), and an
accuracy rising to its own plateau, a count of right answers out of 250-2000 samples.

The requirement: each detector gives a warning or error on under 1% of the seeds of each
family. The measured figures are printed (`pytest -s`, per eval variant for the realistic
family) and recorded below; a detector over the bar that belongs to another piece of work
is a strict xfail naming it.

Fixed seeds (numpy's default_rng(seed) for seed in range(SEEDS)): the figure is reproducible
and the test cannot flake.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt
import pytest
import synth

from trainspotter import names
from trainspotter.analysis import analyze
from trainspotter.detectors import DETECTORS
from trainspotter.model import FloatArray, Run, Severity

SEEDS = 300
MAX_ALARM_SHARE = 0.01
SHAPES = ("exponential", "power_law", "cosine_driven", "warmup_cosine_driven")
INTERVALS = (1, 2, 5, 10, 20, 50, 100, 200, 500)


def _schedule(rng: np.random.Generator, steps: npt.NDArray[np.int64], shape: str) -> FloatArray:
    """A healthy LR schedule; the cosine-driven shapes use a cosine decay (to ~0 at the end)."""
    total = float(steps[-1])
    peak = float(10 ** rng.uniform(-5, -2.5))
    if shape == "warmup_cosine_driven":
        return synth.warmup_cosine(steps, peak=peak, warmup=int(total * rng.uniform(0.01, 0.1)))
    if shape == "cosine_driven":
        return synth.warmup_cosine(steps, peak=peak, warmup=0)
    kind = int(rng.integers(0, 3))
    if kind == 0:
        return synth.linear_decay(steps, peak=peak, warmup=int(total * 0.05))
    if kind == 1:
        return np.minimum(steps / max(total * 0.03, 1.0), 1.0) * peak
    return synth.warmup_cosine(steps, peak=peak, warmup=int(total * 0.05))


def _shape(
    rng: np.random.Generator, steps: npt.NDArray[np.int64], shape: str, lr: FloatArray
) -> FloatArray:
    """The noiseless fraction of the initial excess loss left at each step: 1 -> ~0."""
    t = (steps - steps[0]).astype(np.float64)
    span = max(float(t[-1]), 1.0)
    if shape == "exponential":
        return np.exp(-t / (span * rng.uniform(0.08, 0.5)))
    if shape == "power_law":
        return (1.0 + t / (span * rng.uniform(0.005, 0.05))) ** -rng.uniform(0.3, 1.0)
    # Progress proportional to the LR summed so far: the curve flattens as the LR anneals.
    progress = np.cumsum(lr) / max(float(np.sum(lr)), 1e-30)
    return np.exp(-progress * rng.uniform(2.0, 6.0))


def _heavy_noise(rng: np.random.Generator, size: int, scale: float, average_of: int) -> FloatArray:
    """Student-t noise on a log scale; a logged interval mean averages `average_of` draws."""
    df = float(rng.choice([3.0, 5.0, 10.0]))
    draws = rng.standard_t(df, size=size) * scale
    return np.asarray(draws / math.sqrt(average_of), dtype=np.float64)


def healthy_run(seed: int, realistic_eval: bool = False) -> Run:
    """One healthy run, every choice drawn from `seed`; with `realistic_eval`, the same run
    with its eval loss replaced by `realistic_eval_metrics` (drawn from their own generator,
    so the train side is the same run either way)."""
    rng = np.random.default_rng(seed)
    shape = SHAPES[seed % len(SHAPES)]
    interval = int(rng.choice(INTERVALS))
    points = int(rng.integers(60, 1500))
    steps = synth.every(interval * points + 1, interval, start=interval)
    lr = _schedule(rng, steps, shape)
    start = float(rng.uniform(0.7, 11.0))
    floor = start * float(rng.uniform(0.02, 0.6))
    clean = floor + (start - floor) * _shape(rng, steps, shape, lr)
    averaged = bool(rng.integers(0, 2))
    average_of = interval if averaged else 1
    loss_scale = float(rng.uniform(0.01, 0.06))
    loss = clean * np.exp(_heavy_noise(rng, steps.size, loss_scale, average_of))

    eval_every = max(1, steps.size // int(rng.integers(8, 40)))
    eval_steps = steps[eval_every - 1 :: eval_every]
    eval_clean = np.interp(eval_steps, steps, clean) * float(rng.uniform(1.0, 1.3))
    eval_loss = eval_clean * np.exp(rng.normal(0.0, loss_scale / 4, eval_steps.size))

    # Gradient norm: falls from its start, then drifts slowly; noisier than the loss.
    drift = np.linspace(0.0, float(rng.uniform(-0.5, 0.5)), steps.size)
    grad_level = float(10 ** rng.uniform(-1, 1)) * (0.5 + 0.5 * _shape(rng, steps, shape, lr))
    grad_norm = grad_level * np.exp(
        drift + _heavy_noise(rng, steps.size, float(rng.uniform(0.05, 0.15)), average_of)
    )

    # Step time: a constant with 5% noise and a slow checkpoint or eval step now and then.
    base = float(rng.uniform(0.05, 2.0))
    step_time = base * np.exp(_heavy_noise(rng, steps.size, 0.05, 1))
    slow_every = int(rng.integers(20, 200))
    step_time[slow_every - 1 :: slow_every] *= float(rng.uniform(2.0, 10.0))
    throughput = float(rng.choice([32, 256, 4096])) / step_time

    steps_per_epoch = int(rng.choice([50, 500, 5000]))
    metrics = {
        names.TRAIN_LOSS: (steps, loss),
        names.EVAL_LOSS: (eval_steps, eval_loss),
        names.LR: (steps, lr),
        names.GRAD_NORM: (steps, grad_norm),
        names.STEP_TIME: (steps, step_time),
        names.THROUGHPUT: (steps, throughput),
        names.EPOCH: (steps, steps / steps_per_epoch),
    }
    if realistic_eval:
        metrics.update(realistic_eval_metrics(seed, steps, clean))
    return synth.make_run(metrics)


NOISE_KINDS = ("gaussian", "student_t", "ar1")
EVAL_SHAPES = ("tracks_train", "flattens")
ACCURACY_SAMPLES = (250, 500, 1000, 2000)


@dataclass(frozen=True)
class EvalVariant:
    """How one seed's realistic eval metrics were drawn."""

    noise: str
    """`NOISE_KINDS`: i.i.d. Gaussian, Student-t (3-10 df) or AR(1) (phi 0.3-0.85)."""
    shape: str
    """`EVAL_SHAPES`: follows the train curve (times a generalisation gap), or follows it
    until `flat_from` of the run and stays at that level (its floor) to the end."""
    relative_noise: float
    """Noise scale on the log of the eval loss: 1-10% of its level."""
    evaluations: int
    """6 to 60."""
    flat_from: float
    accuracy_samples: int
    """The eval set's size: the accuracy is a count of right answers out of it."""

    @property
    def name(self) -> str:
        return f"{self.noise}/{self.shape}"


def eval_variant(seed: int) -> EvalVariant:
    """The seed's eval variant: its own generator, so `healthy_run`'s draws are unchanged."""
    rng = np.random.default_rng([seed, 1])
    return EvalVariant(
        noise=NOISE_KINDS[int(rng.integers(0, len(NOISE_KINDS)))],
        shape=EVAL_SHAPES[int(rng.integers(0, len(EVAL_SHAPES)))],
        relative_noise=float(rng.uniform(0.01, 0.10)),
        evaluations=int(rng.integers(6, 61)),
        flat_from=float(rng.uniform(0.3, 0.7)),
        accuracy_samples=int(rng.choice(ACCURACY_SAMPLES)),
    )


def _eval_noise(rng: np.random.Generator, variant: EvalVariant) -> FloatArray:
    """Unit-scale noise of one kind: a small eval set's jitter, heavy-tailed for a set
    with a few hard examples, autocorrelated when consecutive checkpoints share most of
    their errors (AR(1), stationary variance 1)."""
    n = variant.evaluations
    if variant.noise == "gaussian":
        return rng.normal(0.0, 1.0, n)
    if variant.noise == "student_t":
        return rng.standard_t(float(rng.uniform(3.0, 10.0)), n)
    phi = float(rng.uniform(0.3, 0.85))
    noise = np.empty(n)
    noise[0] = rng.normal()
    for i in range(1, n):
        noise[i] = phi * noise[i - 1] + rng.normal() * math.sqrt(1.0 - phi * phi)
    return noise


def realistic_eval_metrics(
    seed: int, steps: npt.NDArray[np.int64], clean: FloatArray
) -> dict[str, tuple[npt.ArrayLike, npt.ArrayLike]]:
    """An eval loss and accuracy as small eval sets give them: 1-10% relative jitter
    (i.i.d., heavy-tailed or autocorrelated), 6-60 evaluations, following the train curve
    or flat at their floor from 30-70% of the run (the eval loss stops improving well
    before the train loss does: a widening gap with a flat eval loss is not overfitting).
    The accuracy rises from near chance to 0.6-0.9 along the same progress and is a count
    of right answers out of 250-2000 samples (values k/n): sets large enough that one
    evaluation tells a checkpoint from one with 1.5x its error rate, so eval_noise's
    warning would be untrue of them."""
    variant = eval_variant(seed)
    rng = np.random.default_rng([seed, 2])
    index = np.linspace(0, steps.size - 1, variant.evaluations + 1)[1:].round().astype(int)
    eval_steps = steps[index]
    progress = clean[index]
    if variant.shape == "flattens":
        flat = round(variant.flat_from * (steps.size - 1))
        progress = np.where(index > flat, clean[flat], progress)
    gap = float(rng.uniform(1.0, 1.3))
    eval_loss = progress * gap * np.exp(variant.relative_noise * _eval_noise(rng, variant))
    # Accuracy: progress from the start level (chance) to the floor (the best accuracy).
    start, floor = float(clean[0]), float(np.min(clean))
    learned = (start - progress) / max(start - floor, 1e-12)
    chance, best = float(rng.uniform(0.1, 0.5)), float(rng.uniform(0.6, 0.9))
    true_accuracy = np.clip(chance + (best - chance) * learned, 0.0, 1.0)
    n = variant.accuracy_samples
    accuracy = rng.binomial(n, true_accuracy) / n
    return {names.EVAL_LOSS: (eval_steps, eval_loss), "eval/accuracy": (eval_steps, accuracy)}


FAMILIES = ("as_train", "realistic_eval")


@cache
def alarms_by_seed(family: str) -> dict[int, tuple[str, ...]]:
    """For each seed, the detectors that gave a warning or an error (computed once)."""
    found: dict[int, tuple[str, ...]] = {}
    for seed in range(SEEDS):
        findings = analyze(healthy_run(seed, realistic_eval=family == "realistic_eval")).findings
        found[seed] = tuple(
            sorted({f.detector for f in findings if f.severity >= Severity.WARNING})
        )
    return found


def alarm_share(detector: str, family: str) -> float:
    seeds = [s for s, loud in alarms_by_seed(family).items() if detector in loud]
    share = len(seeds) / SEEDS
    shapes = Counter(SHAPES[s % len(SHAPES)] for s in seeds)
    variants = Counter(eval_variant(s).name for s in seeds)
    print(
        f"\n{detector} ({family}): warnings on {len(seeds)}/{SEEDS} seeds ({share:.1%}); "
        f"{dict(shapes)}" + (f"; eval variants {dict(variants)}" if family != "as_train" else "")
    )
    return share


# Measured (300 seeds each), family as_train: every detector 0/300, any detector 0/300.
# (When this test was added, spikes warned on 23/300 seeds: one-point heavy-tailed batch
# outliers back at the next logged point; such a point is now info. grad_norm was 8/300 at
# 5d0a93d.) Family realistic_eval: overfitting 2/300 (seeds 10 and 58: AR(1) eval losses
# tracking the train loss whose wander after the minimum rose 25-31%), every other detector
# 0/300. When the family was added (f655701) overfitting warned on 12/300: ar1 5/101,
# student_t 5/110, gaussian 2/89 (a flat, autocorrelated or heavy-tailed eval read as a
# rise). Over seeds 0-999 (not run here): overfitting 39/1000 then, 12/1000 now (ar1 10,
# student_t 1, gaussian 1); eval_noise 1, spikes 2, plateau 1 of 1000 both times. A
# detector over the bar that belongs to work in progress goes here as a strict xfail.
OVER_THE_BAR: dict[str, str] = {}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "detector",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=OVER_THE_BAR[name]))
        if name in OVER_THE_BAR
        else name
        for name in DETECTORS
    ],
)
def test_no_detector_warns_on_healthy_noisy_curves(detector: str, family: str) -> None:
    assert alarm_share(detector, family) < MAX_ALARM_SHARE


def test_the_generated_runs_cover_every_shape_and_interval() -> None:
    """The property is only as good as its inputs: every shape, the whole range of logging
    intervals, logged values that are per-step and interval means."""
    shapes, intervals = set(), set()
    for seed in range(SEEDS):
        run = healthy_run(seed)
        steps = run.metrics[names.TRAIN_LOSS].steps
        intervals.add(int(steps[1] - steps[0]))
        shapes.add(SHAPES[seed % len(SHAPES)])
    assert shapes == set(SHAPES)
    assert {1, 500} <= intervals and len(intervals) >= 7
    for family in FAMILIES:
        share = sum(bool(loud) for loud in alarms_by_seed(family).values()) / SEEDS
        print(f"\nany detector ({family}): warnings on {share:.1%} of {SEEDS} seeds")


def test_the_realistic_eval_variants_cover_their_ranges() -> None:
    """Every noise kind and shape, 6 to 60 evaluations, 1-10% jitter; a flattening eval loss
    really stops improving (its late median within its jitter of its middle one); the
    accuracy is on a k/n lattice and rises."""
    variants = [eval_variant(seed) for seed in range(SEEDS)]
    assert {(v.noise, v.shape) for v in variants} == {
        (noise, shape) for noise in NOISE_KINDS for shape in EVAL_SHAPES
    }
    assert min(v.evaluations for v in variants) <= 8 and max(v.evaluations for v in variants) >= 55
    jitter = [v.relative_noise for v in variants]
    assert min(jitter) < 0.015 and max(jitter) > 0.095
    seed = next(s for s, v in enumerate(variants) if v.shape == "flattens" and v.flat_from < 0.4)
    run = healthy_run(seed, realistic_eval=True)
    steps = run.metrics[names.TRAIN_LOSS].steps
    eval_loss = run.metrics[names.EVAL_LOSS].values
    eval_steps = run.metrics[names.EVAL_LOSS].steps
    late = eval_steps > steps[-1] * 0.75
    middle = (eval_steps > steps[-1] * 0.45) & ~late
    assert abs(np.median(eval_loss[late]) / np.median(eval_loss[middle]) - 1) < 0.1
    accuracy = run.metrics["eval/accuracy"]
    samples = variants[seed].accuracy_samples
    counts = accuracy.values * samples
    assert np.allclose(counts, np.round(counts))
    assert np.median(accuracy.values[late]) > accuracy.values[0]
