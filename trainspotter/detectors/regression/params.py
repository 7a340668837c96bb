"""The regression detector's id and parameters (read by every part of the subpackage)."""

from __future__ import annotations

from dataclasses import dataclass

NAME = "regression"


@dataclass(frozen=True)
class RegressionParams:
    """Parameters of the regression detector (defaults explained in `RegressionDetector`)."""

    noise_z: float = 3.0
    """A difference counts when it exceeds this many sigmas of the runs' own noise (the
    eval jitter, the loss curves' point-to-point noise, the timing's drift)."""
    margin: float = 1.0
    """The smallest worsening of a final or best eval value that counts, relative to the
    baseline's value (its error, 1 - value, for a higher-is-better metric in [0, 1]):
    1.0 = twice the baseline's loss or error; a team's "main + 5%" is 0.05. The tolerance
    is the larger of this and `noise_z` x the eval jitter."""
    min_eval_points: int = 5
    """Compare an eval metric only when both runs have this many finite evaluations."""
    curve_min_ratio: float = 1.5
    """A training loss is worse at a matched step when its smoothed ratio to the
    baseline's exceeds this (and the noise)..."""
    curve_min_fraction: float = 0.25
    """...over one stretch of at least this share of the matched steps."""
    curve_window_fraction: float = 0.05
    """The rolling median that smooths the ratio spans this share of the matched steps."""
    min_curve_points: int = 20
    """Compare loss curves only with this many matched steps."""
    min_slowdown: float = 0.25
    """Median step time at least this much longer (0.25: 25%) than the baseline's..."""
    min_timing_points: int = 20
    """...over at least this many timing points in each run."""
