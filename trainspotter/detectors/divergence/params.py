"""The divergence detector's id and parameters (read by every part of the subpackage)."""

from __future__ import annotations

from dataclasses import dataclass

NAME = "divergence"


@dataclass(frozen=True)
class DivergenceParams:
    """Parameters of the divergence detector (defaults explained in `DivergenceDetector`)."""

    merge_gap: int = 3
    """Non-finite points separated by at most this many finite points are one episode."""
    max_skip_points: int = 16
    """A gradient-only non-finite episode of at most this many logged points, with the loss
    finite, is a mixed-precision overflow skip (info), not a divergence."""
    frequent_skip_fraction: float = 0.1
    """Overflow skips on more than this fraction of the logged gradient points: warning."""
    metric_min_nonfinite_points: int = 2
    """A metric other than a loss or gradient is reported when it is non-finite, after its
    first finite value, at this many consecutive logged points (or, for an evaluation
    between NaN placeholder rows, this many scheduled evaluations in a row): isolated NaNs
    are not, however many."""
    drift_min_points: int = 20
    """Abstain from the drift test on a loss with fewer finite points than this."""
    drift_min_tail_points: int = 10
    """The rising stretch (after the loss's smoothed minimum) needs this many points..."""
    drift_min_tail_fraction: float = 0.1
    """...and must cover at least this fraction of the logged span."""
    drift_alpha: float = 0.01
    """Mann-Kendall significance level for a rise to the end of the log."""
    monotone_tau: float = 0.6
    """A climb whose Kendall tau reaches this counts as a trend whatever its p-value (see
    `_rising`)..."""
    monotone_min_points: int = 20
    """...when it has at least this many points (on fewer, the minimum it starts from is
    itself a noise dip often enough to fake order)."""
    drift_min_rise: float = 0.1
    """The Theil-Sen rise must be at least this fraction of the loss's level..."""
    drift_noise_multiple: float = 3.0
    """...and at least this many point-to-point noise sigmas."""
    transient_factor: float = 2.0
    """A climb that came back counts when the smoothed loss reached this multiple of its
    lowest level so far..."""
    transient_noise_multiple: float = 6.0
    """...and this many smoothing errors above it..."""
    transient_alpha: float = 0.01
    """...and the climb is a rank trend at this significance level."""
    min_progress_share: float = 0.1
    """A climb that came back must undo at least this share of the progress the loss had
    made (from its highest earlier level down to the climb's minimum), in raw units."""
