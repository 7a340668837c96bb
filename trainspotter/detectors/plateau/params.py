"""The plateau detector's id, constants and parameters (read by every part of the
subpackage)."""

from __future__ import annotations

from dataclasses import dataclass

from trainspotter.detectors import stats

NAME = "plateau"

SMOOTH_FRACTION = 0.1
"""The smoothing window, as a fraction of the points: wide enough to shed minibatch noise."""

MONOTONE_TAU = 0.6
"""A Kendall tau at or below -0.6 (80% of pairs in falling order) is a falling curve even
when the autocorrelation-corrected p-value is not small (as `stats.Change.falling`)."""

EVAL_SETTLED_FRACTION = 0.25
"""A converged run "could have stopped" only when the eval loss's minimum comes before the
flat stretch or within this first fraction of it (otherwise the eval loss was still
improving)."""


@dataclass(frozen=True)
class PlateauParams:
    """Parameters of the plateau detector (defaults explained in `PlateauDetector`)."""

    min_points: int = 12
    """Abstain on a loss with fewer finite points than this."""
    flat_tolerance: float = 0.1
    """"Flat": the loss improves by no more than this fraction of its total improvement."""
    min_flat_fraction: float = 0.25
    """Report a flat tail that covers at least this fraction of the run (else: nothing)."""
    stall_flat_fraction: float = 0.5
    """A stall far from convergence must have been flat for this fraction of the run..."""
    far_level_fraction: float = 0.75
    """...at a level of at least this fraction of the starting loss."""
    not_learning_drop: float = 0.1
    """A loss that improved by less than this fraction of its starting level never learned
    (unless it fell by a material, significant trend: the next two)."""
    min_learning_effect: float = 0.05
    """A fall under this fraction of the starting level is not learning, however
    significant its trend (85.093 -> 85.029 over 1,000 epochs is 0.08%)..."""
    min_learning_noise: float = 1.0
    """...and so is a fall smaller than this many sigmas of the point-to-point noise (a
    drift hidden inside the minibatch scatter)."""
    frozen_tolerance: float = 1e-4
    """A loss whose last points all stay within this fraction of its last value has stopped
    changing (constant to 4 significant digits: far below any minibatch noise)..."""
    min_frozen_points: int = 10
    """...over at least this many points and `min_flat_fraction` of the run..."""
    frozen_floor_fraction: float = 0.01
    """...at a level above this fraction of its starting level (below it, a memorised or
    converged loss near 0, not a collapse)."""
    lr_zero_fraction: float = stats.LR_ZERO_FRACTION
    """An LR below this fraction of its peak is ~0."""
    lr_early_fraction: float = 0.3
    """LR ~0 with at least this fraction of the run still to go is "too early"."""
    lr_annealed_fraction: float = 0.1
    """An LR below this fraction of its peak when the loss went flat was being annealed."""
    alpha: float = 0.05
    """Significance level of the "still falling" trend test on the flat stretch."""
    min_constant_points: int = 3
    """A loss or eval metric that repeats one exact value over at least this many points
    is stuck (a dead model or a metric not computed from the model)..."""
    min_constant_fraction: float = 0.5
    """...and, for a loss, over at least this fraction of its points (other eval metrics:
    all of them)."""
    constant_tolerance: float = 1e-6
    """"Exact": within this fraction of the value (float32 round-off, not a change)."""
