"""What the train loss did around a gradient-norm rise: a blow-up the rise announced (an
explosion is an error), or no reaction at all, or an LR rise that explains it (info)."""

from __future__ import annotations

import math

import numpy as np

from trainspotter import names
from trainspotter.detectors import loss_scale, stats
from trainspotter.detectors.grad_norm.params import GradNormParams
from trainspotter.model import Run, Series


def explanation(
    run: Run, loss: Series | None, start: int, end: int, params: GradNormParams, window: int
) -> str:
    """Why a norm rise with no loss blow-up is not an explosion (a sentence), or "".

    - The LR rose at least 2x from the baseline window to the rise (a warmup or a warm
      restart the log shows): larger steps give larger gradients, by design.
    - The train loss did not react: within the rise and the next `loss_window_points`
      points it never rose by an incident's size (`blowup_rise` of its level before, and
      a tenth of the progress it had made, `loss_scale.undoes_progress`), or it had
      memorised (below 5% of its highest level) and stayed below that level. A norm spike
      the loss shrugs off is one hard batch, or heavy-tailed per-step noise.
    """
    lr = run.metrics.get(names.LR)
    if lr is not None and len(lr):
        lx, ly = stats.finite_xy(lr.steps, lr.values)
        at = lx <= start
        if at.any() and np.count_nonzero(at) > 1:
            now = float(ly[at][-1])
            earlier = float(np.min(ly[at][-(window + 1) :]))
            if earlier > 0 and now >= 2.0 * earlier:
                return (
                    f"The LR rose from {earlier:.3g} to {now:.3g} by step {start} (a warmup or a "
                    "restart in the log): a larger step gives a larger gradient norm, by design."
                )
    if loss is None or len(loss) == 0:
        return ""
    horizon = stats.step_after(loss.steps, end, params.loss_window_points)
    found = stats.excursion(loss.steps, loss.values, start, horizon, 5)
    if found is None or found.nonfinite_step is not None or not math.isfinite(found.peak):
        return ""
    lo = int(np.searchsorted(loss.steps, start, side="left"))
    reference = loss_scale.reference_level(loss.values, lo)
    recent = loss.values[max(0, lo - window) : lo]
    recent = recent[np.isfinite(recent)]
    level, peak = found.baseline, found.peak
    small = peak - level < params.blowup_rise * abs(level) or not loss_scale.undoes_progress(
        peak, level, reference, 0.1
    )
    memorised = loss_scale.near_zero(level, reference, 0.05) and peak < reference
    usual = recent.size >= 3 and peak <= float(np.max(recent))
    if not (small or memorised or usual):
        return ""
    top = (
        f" (it reached {float(np.max(recent)):.4g} in the {recent.size} points before, "
        "with no gradient alarm)"
        if usual and not (small or memorised)
        else ""
    )
    return (
        f"{names.TRAIN_LOSS} did not react: {level:.4g} before (median of the 5 points before "
        f"step {start}), at most {peak:.4g} (step {found.peak_step}) during the rise and the "
        f"{params.loss_window_points} points after{top}. A gradient spike the loss shrugs off "
        "is one hard batch or heavy-tailed noise, not an explosion."
    )


def loss_blowup(loss: Series | None, start: int, end: int, params: GradNormParams) -> str:
    """A sentence describing the train-loss blow-up that follows an explosion, or "".

    The explosion must come *before* the blow-up: the loss turns non-finite, or first
    crosses the blow-up threshold after the explosion's first step, or is still up at the
    end of the window. A loss spike on the same logged step as a one-step norm spike that
    is gone by the next point (one corrupted batch) is not a blow-up the norm announced.
    """
    if loss is None or len(loss) == 0:
        return ""
    horizon = stats.step_after(loss.steps, end, params.loss_window_points)
    window = stats.window_points(len(loss), 0.05, 10, 200)
    found = stats.excursion(loss.steps, loss.values, start, horizon, window)
    if found is None:
        return ""
    if found.nonfinite_step is not None:
        return f"{names.TRAIN_LOSS} turned non-finite at step {found.nonfinite_step}."
    level = found.threshold(params.blowup_sigmas, params.blowup_rise)
    first_above = found.first_step_above(level)
    if first_above is None or (first_above <= start and not found.ends_above(level)):
        return ""
    # The absolute sense (`loss_scale`): a blow-up undoes a tenth of the progress made,
    # and at a memorised (near-zero) loss it climbs above the earlier level.
    lo = int(np.searchsorted(loss.steps, start, side="left"))
    reference = loss_scale.reference_level(loss.values, lo)
    if not loss_scale.undoes_progress(found.peak, found.baseline, reference, 0.1) or (
        loss_scale.near_zero(found.baseline, reference, 0.05) and found.peak < reference
    ):
        return ""
    return (
        f"{names.TRAIN_LOSS} then blew up from {found.baseline:.4g} to {found.peak:.4g} "
        f"at step {found.peak_step}."
    )
