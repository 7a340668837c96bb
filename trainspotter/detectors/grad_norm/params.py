"""grad_norm's id and parameters (the defaults' reasons are in the detector's docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from trainspotter.detectors.base import Above

NAME = "grad_norm"


@dataclass(frozen=True)
class GradNormParams:
    """Parameters of the grad_norm detector (see its docstring for each default's reason)."""

    min_points: int = 10
    """Abstain below this many finite, positive norms."""
    window_fraction: float = 0.05
    """Trailing baseline window as a fraction of the logged points..."""
    min_window: int = 10
    """...at least this many points..."""
    max_window: int = 200
    """...and at most this many."""
    z_threshold: float = 6.0
    """Robust z (log10 norm against the trailing window) an explosion must reach..."""
    explosion_ratio: Annotated[
        float,
        Above(
            1,
            True,
            "an explosion is log10(explosion_ratio) above the trailing median: undefined at "
            "<= 0, and at <= 1 ordinary norms qualify (a stretch at the median reads as a climb)",
        ),
    ] = 5.0
    """...and the ratio to the trailing median it must reach."""
    onset_ratio: float = 2.0
    """An explosion's start and end extend while the norm stays this far above baseline."""
    growth_windows: int = 4
    """A steady climb is measured against the lowest trailing median of this many windows."""
    sigma_floor_decades: float = 0.02
    """Minimum baseline sigma in log10 units (about 5%): quantised norms are often flat."""
    loss_window_points: int = 10
    """Train-loss points after an explosion searched for a blow-up (error escalation)."""
    blowup_sigmas: float = 6.0
    """A loss blow-up rises this many loss-noise sigmas above its pre-explosion median..."""
    blowup_rise: float = 0.5
    """...and by at least this fraction of that median (or the loss turns non-finite)."""
    saturation_fraction: float = 0.5
    """Clipping saturation: at least this share of the norms equals their maximum."""
    saturation_min_points: int = 20
    """Abstain from the saturation check below this many norms."""
    skip_early_fraction: float = 0.1
    """Saturation ignores the first 10% of the norms (clipping early on is normal)."""
