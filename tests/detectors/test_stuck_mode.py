"""The plateau detector's stuck-on-most-evaluations rule (`detectors/stuck_mode.py`).

Pinned on real Keras runs (`examples/keras_majority_then_learns` and
`examples/keras_seg_all_background`, their ground truth counted in a callback while
training) and checked for false alarms on generated healthy
small-eval-set accuracies: k/n of a model that improves, n = 20-500, with per-example
predictions that stay put between evaluations except near the decision boundary.

Measured (SEEDS = 2000 each, numpy default_rng(seed)): the rule fires on 0 of 2000
improving runs and on 0 of 2000 runs converged from their first evaluation (whose eval
loss only jitters or creeps); the same values read as a metric with no sample lattice
(`eval/mean_io_u`, judged by the relative margin alone): 3 (0.15%) and 4 (0.2%).
"""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import synth

from trainspotter import names
from trainspotter.analysis import Analysis, analyze
from trainspotter.detectors import stuck_mode
from trainspotter.detectors.eval_noise import bounded_top, higher_is_better, is_quality_metric
from trainspotter.model import Finding, FloatArray, Severity
from trainspotter.readers import read_log

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())
TOLERANCE = 1e-6  # the plateau's constant_tolerance
SEEDS = 2000
MAX_ALARM_SHARE = 0.01
ACCURACY = "eval/accuracy"


@cache
def _analysis(run: str) -> Analysis:
    return analyze(read_log(EXAMPLES / run / EXPECTED[run]["files"][0]))


def _column(run: str, column: str) -> list[float]:
    with (EXAMPLES / run / EXPECTED[run]["files"][0]).open(newline="", encoding="utf-8") as f:
        return [float(row[column]) for row in csv.DictReader(f)]


def _stuck_on_most(findings: list[Finding], metric: str) -> list[Finding]:
    return [
        f
        for f in findings
        if f.detector == "plateau" and f.metric == metric and "repeated_value" in f.evidence
    ]


@pytest.mark.parametrize(
    ("run", "column", "count_key", "value_key"),
    [
        (
            "keras_majority_then_learns",
            "val_accuracy",
            "epochs_without_a_positive_prediction",
            "majority_share",
        ),
        (
            "keras_seg_all_background",
            "val_mean_io_u",
            "epochs_without_a_foreground_pixel",
            "all_background_iou",
        ),
    ],
)
def test_one_class_predicted_at_most_epochs_is_reported_there(
    run: str, column: str, count_key: str, value_key: str
) -> None:
    """The model predicted no positive (digit, or foreground pixel) at most epochs, counted
    in a callback while training: the metric is exactly the one-class value there."""
    truth = EXPECTED[run]["pathologies"][0]
    (finding,) = _stuck_on_most(_analysis(run).findings, column)
    assert finding.severity is Severity.WARNING
    assert [finding.step_start, finding.step_end] == truth["step_range"]
    logged = _column(run, column)
    value = float(finding.evidence["repeated_value"])
    at_value = [epoch for epoch, v in enumerate(logged) if abs(v - value) <= TOLERANCE * value]
    assert len(at_value) == finding.evidence["repeated_points"] == truth[count_key]
    assert value == pytest.approx(truth[value_key], abs=1e-6)
    # The message's numbers are the log's: the value, the count, the loss at named steps.
    val_loss = _column(run, "val_loss")
    first, last = truth["step_range"]
    same = f"{value:.7g} (the same value to float32 round-off) at {len(at_value)} of its"
    assert f"{same} {len(logged)}" in finding.message
    # The title quotes the same digits, and neither calls a float32 value exact.
    assert f"sits at {value:.7g} on {len(at_value)} of {len(logged)}" in finding.title
    assert "exactly" not in finding.title + finding.message
    assert f"{val_loss[first]:.6g} at step {first}" in finding.message
    assert f"{val_loss[last]:.6g} at step {last}" in finding.message
    assert "class_weight" in " ".join(finding.fixes)


def test_keras_mean_io_u_is_a_bounded_accuracy_like_metric() -> None:
    """Keras names MeanIoU `mean_io_u` (its snake case of "MeanIoU")."""
    assert is_quality_metric("val_mean_io_u") and higher_is_better("val_mean_io_u")
    assert bounded_top("val_binary_io_u", np.array([0.3, 0.7])) == 1.0


def test_a_short_majority_start_then_learning_is_silent() -> None:
    """keras_imbalanced_healthy: the majority share at the first 8 of 30 epochs only."""
    findings = _analysis("keras_imbalanced_healthy").findings
    loud = [f for f in findings if f.severity >= Severity.WARNING]
    assert not _stuck_on_most(loud, "val_accuracy")


def _run(x: FloatArray, accuracy: FloatArray, loss: FloatArray) -> Any:
    return synth.make_run({ACCURACY: (x, accuracy), names.EVAL_LOSS: (x, loss)})


def _finding(accuracy: list[float], loss: list[float] | None = None) -> Finding | None:
    y = np.asarray(accuracy, dtype=np.float64)
    x = np.arange(y.size, dtype=np.float64)
    falling = np.linspace(0.7, 0.3, y.size) if loss is None else np.asarray(loss)
    return stuck_mode.mode_finding("plateau", _run(x, y, falling), ACCURACY, x, y, TOLERANCE)


STUCK = [0.5531915] * 10 + [0.5744681, 0.5957447, 0.6170213, 0.6382979]


def test_float32_neighbours_count_as_one_value() -> None:
    """Keras' reductions differ in the 7th digit between epochs (0.3754674792, 0.3754675388,
    0.3754674494): one value, as `stuck` counts it."""
    jittered = [v * (1 + 2e-7 * ((i % 3) - 1)) if v == STUCK[0] else v for i, v in enumerate(STUCK)]
    finding = _finding(jittered)
    assert finding is not None and finding.evidence["repeated_points"] == 10


@pytest.mark.parametrize(
    ("why", "accuracy", "loss"),
    [
        ("converged at its best", [0.5, 0.55, 0.6] + [0.6382979] * 11, None),
        ("a loss that does not fall there", STUCK, [0.5, 0.51, 0.49] * 4 + [0.5, 0.5]),
        ("under half of the evaluations", STUCK[:6] + [0.5744681] * 2 + STUCK[10:] * 2, None),
        ("2 significant digits repeat by rounding", [0.86] * 10 + [0.88, 0.9, 0.92], None),
        ("values below it: not its low end", [0.4, 0.42, 0.45, *STUCK], None),
        ("one example above it, a borderline flip", [0.5531915] * 10 + [0.5744681] * 3, None),
        # 26 of 47 right, at most 29: three borderline examples, not a model that changed.
        ("3 samples above it", [0.5531915] * 10 + [0.5744681, 0.5957447, 0.6170213], None),
    ],
)
def test_not_stuck(why: str, accuracy: list[float], loss: list[float] | None) -> None:
    assert _finding(accuracy, loss) is None, why


def test_stuck_when_the_loss_falls() -> None:
    assert _finding(STUCK) is not None


def test_a_unit_fraction_counts_despite_its_few_digits() -> None:
    """0.5 is one class of a balanced binary set: no rounding artefact (as `stuck` reads
    1/k), while 0.86 (2 digits) is left alone."""
    assert _finding([0.5] * 10 + [0.55, 0.6, 0.65, 0.7]) is not None
    assert _finding([0.86] * 10 + [0.88, 0.9, 0.92, 0.94]) is None


def healthy_accuracy(seed: int, converged: bool) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A healthy k/n eval accuracy and eval loss: n in 20-500 examples, 6-60 evaluations.
    Example i is right when its fixed difficulty u_i plus a fresh N(0, sigma) draw is under
    the model's skill p_t (sigma 0.002-0.1, log-uniform: a few borderline examples flip
    between evaluations); p_t rises from a chance or majority level to 0.1-0.99 with the
    eval loss falling alongside, or (`converged`) is flat from the first evaluation, its
    loss jittering and creeping by -5%..+10%. Values are float32, as frameworks log them."""
    rng = np.random.default_rng(seed)
    n, evaluations = int(rng.integers(20, 501)), int(rng.integers(6, 61))
    start = rng.uniform(0.3, 0.7)
    end = rng.uniform(min(start + 0.1, 0.98), 0.99)
    loss_start = rng.uniform(0.6, 2.5)
    loss_end = loss_start * rng.uniform(0.05, 0.7)
    if converged:
        start, loss_start = end, loss_end
    t = np.arange(evaluations, dtype=np.float64)
    decay = np.exp(-(t + 1) / (rng.uniform(0.05, 0.6) * evaluations))
    skill = end - (end - start) * decay
    creep = np.linspace(0.0, rng.uniform(-0.05, 0.1), evaluations)
    jitter = rng.normal(0.0, rng.uniform(0.005, 0.05), evaluations)
    loss = (loss_end + (loss_start - loss_end) * decay) * np.exp(creep + jitter)
    sigma = 10 ** rng.uniform(np.log10(0.002), -1.0)
    difficulty = rng.uniform(0.0, 1.0, n)
    right = difficulty[None, :] + rng.normal(0.0, sigma, (evaluations, n)) < skill[:, None]
    accuracy = right.mean(axis=1).astype(np.float32).astype(np.float64)
    steps = (t + 1) * int(rng.choice([1, 50, 500]))
    return steps, accuracy, loss


@pytest.mark.parametrize("metric", [ACCURACY, "eval/mean_io_u"], ids=["lattice", "no-lattice"])
@pytest.mark.parametrize("converged", [False, True], ids=["improving", "converged"])
def test_healthy_small_eval_set_accuracies_are_silent(converged: bool, metric: str) -> None:
    """The same k/n values as an accuracy (judged on its sample lattice) and read as a
    metric with no lattice (an IoU: judged by the relative margin alone)."""
    alarms = 0
    for seed in range(SEEDS):
        x, y, loss = healthy_accuracy(seed, converged)
        run = synth.make_run({metric: (x, y), names.EVAL_LOSS: (x, loss)})
        alarms += stuck_mode.mode_finding("plateau", run, metric, x, y, TOLERANCE) is not None
    print(f"\nstuck on most evaluations: {alarms}/{SEEDS} healthy {metric} ({converged=})")
    assert alarms / SEEDS < MAX_ALARM_SHARE


def test_a_low_lr_fine_tune_wobbling_by_two_examples_is_silent() -> None:
    """Converged, evaluated on 300 examples: 277 right at 14 of 20 evaluations, the others
    276, 278 or 279, while the eval loss creeps from 0.259 to 0.191. Two examples above
    the repeated count is a converged model's wobble, not a model that stopped predicting
    one class (the smallest gap between its values, one example, used to count as the
    metric's resolution)."""
    counts = [276, 277, 277, 278, 277, 277, 277, 279, 277, 277]
    counts += [278, 277, 277, 277, 279, 277, 277, 278, 277, 277]
    accuracy = np.array(counts) / 300
    steps = np.arange(1, accuracy.size + 1, dtype=np.float64) * 100
    t = np.arange(accuracy.size)
    noise = np.random.default_rng(1).normal(0.0, 0.004, accuracy.size)
    eval_loss = 0.262 * np.exp(-t / 60) * np.exp(noise)
    train_loss = 0.20 * np.exp(-t / 30)
    run = synth.make_run(
        {
            names.TRAIN_LOSS: (steps, train_loss),
            names.EVAL_LOSS: (steps, eval_loss),
            ACCURACY: (steps, accuracy),
        }
    )
    assert not _stuck_on_most(analyze(run).findings, ACCURACY)


MAJORITY_THEN_LEARNED = [74 / 90] * 40 + [81 / 90] * 20


@pytest.mark.parametrize(
    "accuracy",
    [MAJORITY_THEN_LEARNED, [*MAJORITY_THEN_LEARNED[:45], 80 / 90, *MAJORITY_THEN_LEARNED[46:]]],
    ids=["two-values", "three-values"],
)
def test_the_majority_share_then_one_learned_value_is_reported(accuracy: list[float]) -> None:
    """74 of 90 right at 40 evaluations, then 81 of 90 at 20, while the eval loss falls:
    two distinct values are enough to read the lattice 1/90, so the 7 examples between
    them count as 7 samples (the smallest gap between the values, the gap itself, used to
    count as one step, and only a third value made the rule fire)."""
    finding = _finding(accuracy, list(np.linspace(0.5, 0.3, len(accuracy))))
    assert finding is not None
    assert finding.evidence["repeated_points"] == 40
    assert "at least 7 more eval samples right" in finding.message
    assert "multiples of 1/90" in finding.message


def test_the_message_says_what_the_value_means_only_conditionally() -> None:
    """The rule sees the metric, not the labels: whether 0.8222222 is the majority share
    is the reader's to check, so the message says what follows if it is."""
    finding = _finding(MAJORITY_THEN_LEARNED)
    assert finding is not None
    assert "If 0.8222222 is the share of the eval set's most frequent class" in finding.message
    assert "That is what a model predicting" not in finding.message
