"""spikes, runs of raised points: several consecutive points that are each a few noise
sigmas up (none alone at the single-point threshold) are one spike; fewer are not."""

from __future__ import annotations

import numpy as np
import pytest
from synth import make_run

from trainspotter.detectors.spikes import DETECTOR, SpikesParams
from trainspotter.detectors.spikes.scoring import flagged_points
from trainspotter.model import Finding, Severity

PARAMS = SpikesParams()


def _noisy_loss(seed: int, n: int = 400) -> np.ndarray:
    """A per-batch loss at a level of 0.3 with log-normal noise of 0.35 (natural log): a
    small batch's loss, which moves by a factor of 1.5-2 between batches."""
    rng = np.random.default_rng(seed)
    return 0.3 * np.exp(rng.normal(0.0, 0.35, n))


def _spikes(values: np.ndarray) -> list[Finding]:
    steps = np.arange(values.size)
    return [
        f
        for f in DETECTOR.detect(make_run({"train/loss": (steps, values)}), PARAMS)
        if f.severity >= Severity.WARNING
    ]


# Seeds whose noise leaves the burst's first three points at robust z 4.4-6.3 (measured):
# each under the single-point threshold, all of them over `sustained_z`.
@pytest.mark.parametrize("seed", [2, 3])
def test_five_raised_batches_are_one_spike_though_none_is_an_outlier_alone(seed: int) -> None:
    loss = _noisy_loss(seed)
    loss[250:255] = 0.3 * 8.0  # 8x the level
    found = _spikes(loss)
    assert [(f.step_start, f.step_end) for f in found] == [(250, 254)], found
    assert float(found[0].evidence["robust_z"]) < PARAMS.z_threshold
    assert "No single point reaches robust z 8" in found[0].message


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_raised_batches_are_not_enough(seed: int) -> None:
    loss = _noisy_loss(seed)
    loss[250:252] = 0.3 * 8.0
    assert not _spikes(loss)


def test_a_run_that_holds_an_outlier_is_dated_from_the_outlier() -> None:
    """The run rule only adds bursts the single-point rule misses; a run holding a point at
    the threshold stays that point's episode."""
    z = np.array([np.nan, 5.0, 9.0, 5.0, 5.0, np.nan, 4.5, 4.5, 4.5, np.nan, 4.5, 4.5])
    flagged = flagged_points(z, PARAMS)
    assert (
        flagged.tolist()
        == [False, False, True, False, False, False, True, True, True] + [False] * 3
    )
