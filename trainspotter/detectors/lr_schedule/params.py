"""lr_schedule's id and parameters (the defaults' reasons are in the detector's docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from trainspotter.detectors import stats
from trainspotter.detectors.base import Above

NAME = "lr_schedule"


@dataclass(frozen=True)
class LrScheduleParams:
    """Parameters of the lr_schedule detector (see its docstring for each default's reason)."""

    min_points: int = 5
    """Abstain below this many finite, non-negative LR points."""
    jump_factor: float = 3.0
    """A single logged interval that multiplies (or divides) the LR by this is a jump."""
    min_rise_factor: float = 1.25
    """A rise after the peak smaller than this ratio is jitter, not a re-rise."""
    restart_trough_fraction: float = 0.25
    """A warm restart starts from <= this fraction of the previous cycle's peak..."""
    restart_peak_fraction: float = 0.4
    """...and climbs back to >= this fraction of it."""
    period_tolerance: float = 0.15
    """Cyclic schedules: periods (or their growth ratio) agree within this fraction."""
    warmup_start_fraction: float = 0.1
    """The first rise is a warmup only if it starts in the first 10% of the run."""
    endless_warmup_fraction: float = 0.9
    """A warmup still rising after 90% of the run never ended."""
    near_zero_fraction: float = stats.LR_ZERO_FRACTION
    """An LR below this fraction of its peak is ~0."""
    min_zero_fraction: float = 0.3
    """Warn when the LR is ~0 for at least this share of the run's steps."""
    no_warmup_fraction: float = 0.9
    """No warmup: the first logged LR is at least this fraction of the peak."""
    large_lr: float = 1e-3
    """Missing warmup: only an LR at least this large counts as "a large LR from step 0"."""
    early_fraction: float = 0.1
    """Missing warmup: the early window searched for loss instability (share of steps)..."""
    early_max_steps: int = 1000
    """...at most this many steps (Adam's second-moment estimate settles in ~1/(1-beta2))."""
    min_early_points: Annotated[
        int,
        Above(
            2,
            False,
            "the early-instability check compares the loss points after the first with it, "
            "and at 1 can be left with none",
        ),
    ] = 5
    """...and at least this many loss points."""
    instability_rise: float = 1.0
    """Early instability: the loss climbs this fraction above its first logged value
    (1.0: to twice the initial loss), or turns non-finite..."""
    sustained_rise: float = 0.25
    """...or its 3-point rolling median (two of three consecutive points: not one batch)
    climbs this fraction above its first logged value (0.25: to 1.25x)..."""
    sustained_noise_factor: float = 6.0
    """...by at least this many times the loss's relative point-to-point noise."""
    cliff_ratio: float = 5.0
    """A drop in a smooth schedule is a jump when it is this many times its neighbours."""
    retrace_tolerance: float = 0.1
    """A climb back from ~0 retraces the decay before it (a schedule stepped past its
    end) when every point is within this fraction of the peak of the decay's mirror image."""
