"""grad_norm's clipping saturation: a post-clip norm pinned at its maximum on most steps."""

from __future__ import annotations

import numpy as np

from trainspotter.detectors import stats
from trainspotter.detectors.grad_norm.params import NAME, GradNormParams
from trainspotter.model import Finding, Series, Severity


def saturation(metric: str, series: Series, params: GradNormParams) -> Finding | None:
    """The clipping-saturation finding for one gradient-norm metric, or None."""
    x, g = stats.finite_xy(series.steps, series.values)
    skip = int(g.size * params.skip_early_fraction)
    x, g = x[skip:], g[skip:]
    if g.size < params.saturation_min_points:
        return None
    top = float(g.max())
    if top <= 0:
        return None
    at_top = g >= top * (1.0 - 1e-6)
    fraction = float(np.mean(at_top))
    if fraction < params.saturation_fraction:
        return None
    pinned = np.flatnonzero(at_top)
    below = g[~at_top]
    typical_below = float(np.median(below)) if below.size else top
    message = (
        f"{metric} equals its maximum {top:.6g} in {fraction:.0%} of the {g.size} logged "
        f"steps from step {int(x[0])} on: the norm is logged after clipping, and the clip "
        f"at {top:.6g} is active on most steps (the other steps' median is "
        f"{typical_below:.3g}). Every clipped step is scaled down by norm/clip, an "
        "unplanned cut of the effective LR."
    )
    return Finding(
        detector=NAME,
        title=f"{metric} pinned at the clip value {top:.6g} ({fraction:.0%} of steps)",
        severity=Severity.WARNING,
        metric=metric,
        step_start=int(x[pinned[0]]),
        step_end=int(x[pinned[-1]]),
        message=message,
        evidence={
            "clip_value": top,
            "saturated_fraction": fraction,
            "points": int(g.size),
            "median_below_clip": typical_below,
        },
        fixes=(
            "log the pre-clip norm (transformers' Trainer does) to see how far above the "
            "clip the gradients are, then raise max_grad_norm towards their typical value",
            "Lower the LR or add warmup: gradients that always exceed the clip often come "
            "from an LR too high for the model",
            "check for a loss or input scale bug (a sum instead of a mean) that inflates "
            "every gradient",
        ),
    )
