"""The spikes detector's id and parameters (read by every part of the subpackage)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from trainspotter.detectors.base import Above

NAME = "spikes"


@dataclass(frozen=True)
class SpikesParams:
    """Parameters of the spikes detector (defaults explained in `SpikesDetector`)."""

    z_threshold: float = 8.0
    """Minimum modified z-score of the jump (noise from the trailing window)."""
    min_ratio: Annotated[
        float,
        Above(
            1,
            True,
            "the smallest jump that counts is log10(min_ratio): undefined at <= 0, and at <= 1 "
            "no rise is needed and the noise floor (1% of that jump) is gone",
        ),
    ] = 1.5
    """Minimum size of the jump relative to the level just before it (a ratio)."""
    window_fraction: float = 0.05
    """Trailing baseline window as a fraction of the metric's logged points..."""
    min_window: int = 20
    """...but at least this many points..."""
    max_window: int = 100
    """...and at most this many."""
    sustained_z: float = 4.0
    """Consecutive points that each reach this modified z-score (and `min_ratio`)... (at or
    above `z_threshold` the run rule adds nothing: each such point is a spike alone)"""
    sustained_points: Annotated[
        int,
        Above(
            2,
            False,
            "one point at sustained_z would be a spike on its own: z_threshold silently "
            "lowered to sustained_z",
        ),
    ] = 3
    """...at least this many in a row, are a spike though none reaches `z_threshold`."""
    min_points: int = 12
    """Abstain on a metric with fewer finite points than this."""
    min_baseline: int = 8
    """A point needs this many finite points before it to be judged at all."""
    merge_gap: int = 2
    """Flagged points separated by at most this many unflagged points are one episode."""
    recovery_points: int = 5
    """The level after an episode is the median of this many points after it."""
    max_findings_per_metric: int = 5
    """Report at most this many episodes per metric (the largest); the rest are counted."""
    min_progress_share: float = 0.1
    """A spike must undo at least this share of the progress the curve had made (from
    the highest level it held before down to the pre-spike level), in raw units."""
    near_zero_fraction: float = 0.05
    """Below this fraction of its highest earlier level a positive curve has memorised:
    a jump that comes back within `recovery_points` points there is not an incident
    unless it climbs above that earlier level."""
    neighbour_ratio: Annotated[
        float,
        Above(
            1,
            True,
            "at <= 1 a point no higher than its neighbours counts as a spike",
        ),
    ] = 10.0
    """A point this many times both of its neighbours is a spike without a noise baseline
    (only where the trailing-window rule cannot judge: `neighbours`)..."""
    neighbour_agreement: Annotated[
        float,
        Above(
            1,
            True,
            "at <= 1 only exactly equal neighbours (or none) agree: the rule is silently off",
        ),
    ] = 2.0
    """...when the two neighbours are within this factor of each other."""
    startup_fall: float = 10.0
    """A fall of at least this ratio between two consecutive logs among a log's first
    points ends a start-up transient, which the progress and memorised tests then skip."""
    end_z: float = 4.0
    """The last logged points (the end-of-log rule, `end`) must stand at least this many
    noise sigmas (and `min_ratio`) above the median of the points before them..."""
    end_history_multiple: Annotated[
        float,
        Above(
            1,
            False,
            "below 1 a last point smaller than a jump the curve already made and came back "
            "from would count",
        ),
    ] = 2.0
    """...and at least this many times as far (in log units for a positive loss: the ratio
    squared) above it as any earlier point rose above the median of the points before it."""
