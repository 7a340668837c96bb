"""The detector registry. One module per detector; adding one is a module and one line.

Detector ids are a public contract (config keys, JSON `detector` field): never rename one.
"""

from __future__ import annotations

from trainspotter.detectors import (
    divergence,
    eval_noise,
    grad_norm,
    loss_floor,
    lr_schedule,
    overfitting,
    plateau,
    regression,
    spikes,
    throughput,
)
from trainspotter.detectors.base import Detector

DETECTORS: dict[str, Detector] = {
    spikes.DETECTOR.name: spikes.DETECTOR,
    divergence.DETECTOR.name: divergence.DETECTOR,
    plateau.DETECTOR.name: plateau.DETECTOR,
    overfitting.DETECTOR.name: overfitting.DETECTOR,
    lr_schedule.DETECTOR.name: lr_schedule.DETECTOR,
    grad_norm.DETECTOR.name: grad_norm.DETECTOR,
    throughput.DETECTOR.name: throughput.DETECTOR,
    eval_noise.DETECTOR.name: eval_noise.DETECTOR,
    loss_floor.DETECTOR.name: loss_floor.DETECTOR,
    regression.DETECTOR.name: regression.DETECTOR,
}

__all__ = ["DETECTORS", "Detector"]
