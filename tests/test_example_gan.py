"""A GAN's player losses, pinned on real Lightning runs (examples/lightning_gan.py, CSVLogger):
a healthy GAN whose players' losses rise is not diverging or stalled, and a GAN whose losses
go non-finite is still an error. The dynamics are checked on the raw log (csv module) and
against the ground truth the training script measured (expected.json).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from pathlib import Path

import pytest
from test_example_train_side import EXPECTED, log_of

from trainspotter.analysis import analyze
from trainspotter.model import Severity
from trainspotter.names import TRAIN_LOSS, adversarial_losses
from trainspotter.readers import read_log

HEALTHY = "lightning_gan_healthy"
NAN = "lightning_gan_nan"
STEPS_PER_EPOCH = 80  # examples/lightning_gan.py: 20,480 points in batches of 256


def raw_columns(path: Path) -> dict[str, dict[int, float]]:
    """Every column of a Lightning metrics.csv as {step: value}, empty cells left out."""
    columns: dict[str, dict[int, float]] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for name, cell in row.items():
                if name != "step" and cell:
                    columns.setdefault(name, {})[int(row["step"])] = float(cell)
    return columns


def epoch_median(values: dict[int, float], epoch: int) -> float:
    first = epoch * STEPS_PER_EPOCH
    return statistics.median(values[s] for s in range(first, first + STEPS_PER_EPOCH))


def test_a_healthy_gans_rising_player_losses_get_no_verdict() -> None:
    """The generator gets better while both players' losses rise for long stretches: the
    game, not a divergence. No divergence or plateau finding on either player, at any
    severity, and nothing loud at all."""
    path = log_of(HEALTHY)
    facts = EXPECTED[HEALTHY]["facts"]
    raw = raw_columns(path)
    d_loss, g_loss, swd = raw["d_loss"], raw["g_loss"], raw["val_swd"]
    # The dynamics, on the raw log: the discriminator's loss rises towards chance over
    # most of the run, the generator's rises for ten epochs ...
    d_low, g_low, g_high = (
        facts["d_loss_low_epoch_steps"][0],
        facts["g_loss_low_epoch_steps"][0],
        facts["g_loss_high_epoch_steps"][0],
    )
    last_epoch = max(d_loss) // STEPS_PER_EPOCH
    d_start = epoch_median(d_loss, d_low // STEPS_PER_EPOCH)
    d_end = epoch_median(d_loss, last_epoch)
    assert d_start == pytest.approx(facts["d_loss_epoch_median_low"], rel=1e-5)
    assert d_end == pytest.approx(facts["d_loss_epoch_median_last"], rel=1e-5)
    assert d_end > 1.5 * d_start and last_epoch - d_low // STEPS_PER_EPOCH >= 20
    g_start = epoch_median(g_loss, g_low // STEPS_PER_EPOCH)
    g_peak = epoch_median(g_loss, g_high // STEPS_PER_EPOCH)
    assert g_start == pytest.approx(facts["g_loss_epoch_median_low"], rel=1e-5)
    assert g_peak > 1.4 * g_start and (g_high - g_low) // STEPS_PER_EPOCH >= 10
    # ... while the generator gets better: the held-out distance falls 14x, every mode found.
    evaluations = sorted(swd)
    assert swd[evaluations[-1]] < swd[evaluations[0]] / 10
    assert raw["val_modes"][evaluations[-1]] == 8
    run = read_log(path)
    assert adversarial_losses(run.metrics) == {"d_loss", "g_loss"}
    findings = analyze(run).findings
    assert not [f for f in findings if f.detector in ("divergence", "plateau")], findings
    assert not [f for f in findings if f.severity >= Severity.WARNING], findings
    # The exemption is what keeps it silent: the same d_loss values as a run's only loss
    # (no GAN) are a loss drifting upward and a loss stalled near its start.
    alone = dataclasses.replace(run, metrics={TRAIN_LOSS: run.metrics["d_loss"]})
    judged = {f.detector: f for f in analyze(alone).findings}
    assert judged["divergence"].severity is Severity.ERROR
    assert "drifting upward" in judged["divergence"].title
    assert judged["plateau"].severity is Severity.WARNING


def test_a_gan_whose_losses_go_non_finite_is_still_an_error() -> None:
    """The checks a GAN keeps still speak: d_loss +inf at the step the script measured,
    g_loss NaN with it, reported as one divergence error with the raw last finite value."""
    path = log_of(NAN)
    truth = EXPECTED[NAN]["pathologies"][0]
    onset = truth["first_step"]
    raw = raw_columns(path)
    assert raw["d_loss"][onset] == float("inf") and onset - 1 in raw["d_loss"]
    run = read_log(path)
    assert adversarial_losses(run.metrics) == {"d_loss", "g_loss"}
    errors = [f for f in analyze(run).findings if f.severity is Severity.ERROR]
    assert [(f.detector, f.metric) for f in errors] == [("divergence", "d_loss")]
    error = errors[0]
    assert error.evidence["first_nonfinite_step"] == onset
    assert error.evidence["first_value"] == "+Inf"
    # The held-out distance is NaN (raw value) from the first evaluation after the onset, so
    # it is named in the loss's incident rather than given a finding of its own.
    after = [step for step in sorted(raw["val_swd"]) if step >= onset]
    assert after and all(math.isnan(raw["val_swd"][step]) for step in after)
    assert error.evidence["also_nonfinite"] == "g_loss, val_swd"
    assert truth["g_loss_first_nonfinite_step"] == onset
    assert f"became +Inf at step {onset}" in error.title
    last = raw["d_loss"][onset - 1]
    assert f"The last finite value was {last:.4g} at step {onset - 1}." in error.message
