"""grad_norm: gradient-norm explosions, and a post-clip norm pinned at the clip value.

A subpackage: `explosion` finds jumps and climbs of the norm against its trailing window,
`loss_reaction` says what the train loss did around each (a blow-up makes it an error; no
reaction, or an LR rise, explains it away), `saturation` finds a post-clip norm pinned at
the clip value; this module declares the detector and runs both verdicts per metric.
"""

from __future__ import annotations

import numpy as np

from trainspotter import names
from trainspotter.detectors.base import Detector, Reads
from trainspotter.detectors.grad_norm.explosion import explosions
from trainspotter.detectors.grad_norm.params import NAME, GradNormParams
from trainspotter.detectors.grad_norm.saturation import saturation
from trainspotter.model import Finding, Run

__all__ = ["DETECTOR", "NAME", "GradNormDetector", "GradNormParams", "is_grad_norm_metric"]


def is_grad_norm_metric(metric: str) -> bool:
    """The canonical `grad_norm` and other metrics named like a gradient norm."""
    lowered = metric.lower()
    return metric == names.GRAD_NORM or ("grad" in lowered and "norm" in lowered)


class GradNormDetector(
    Detector,
    name=NAME,
    params=GradNormParams,
    # After the losses: one bad batch makes a loss spike and a gradient spike at the same
    # step, and the loss is the headline a person recognises. An explosion that starts
    # earlier still leads its incident by its step.
    causal_rank=5,
    reads=Reads(is_grad_norm_metric, "no gradient-norm metric"),
    summary="Gradient-norm explosions; a post-clip norm pinned at the clip value.",
):
    """Finds gradient-norm explosions and gradient clipping that is always active.

    **What it finds.** An *explosion*: the gradient norm jumps or climbs to several times
    its recent level; one finding per episode, dated from where the norm took off. Error
    when the explosion comes before a loss blow-up, otherwise warning: one corrupted batch
    gives a one-step norm spike and a one-step loss spike on the same step, a warning
    about that batch, not an error about the run. *Clipping saturation*: a norm logged
    after clipping pinned at the clip value on most steps, so the effective LR is scaled
    down by norm/clip (warning).

    **Algorithm.**
    *Explosions.* The norm is compared in log10 space (norms span decades and their noise
    is multiplicative) with a trailing robust baseline: the median and MAD of the `window`
    points *before* each point (`stats.trailing_median`, and `stats.trailing_mad_at` for
    the points at least 5x above it: one rolling median per series; the window is
    `window_fraction` of the logged points, clamped to `min_window`..`max_window`, so it
    adapts to the logging interval). The baseline sigma is floored at
    `sigma_floor_decades` (log10 units). A point explodes when its robust z is >=
    `z_threshold` AND it is >= `explosion_ratio` its trailing median. A norm that *climbs*
    steadily (gradients accumulating, an LR past the stability limit) drags its trailing
    median along, so a point also explodes when it is `explosion_ratio` the lowest
    trailing median of the last `growth_windows` windows and the norm has stayed that high
    for a quarter-window in a row (`stats.rolling_min`, `stats.held_for`). The first
    half-window of points (no trustworthy baseline yet) is never flagged. Flagged points
    are grouped into episodes (`stats.episodes`), and each episode's start and end are
    extended while the norm stays >= `onset_ratio` the baseline at its start, so a norm
    that grows exponentially is reported from where it took off. One finding per episode;
    one that only the climb test flagged reports its growth against that lowest median and
    no z (a climb has none).

    *Severity.* Error when, within the explosion and the next `loss_window_points` logged
    `train/loss` points, the loss turns non-finite, or it rises `blowup_sigmas` loss-noise
    sigmas and `blowup_rise` above its median before the explosion (`stats.excursion`)
    either after the explosion's first step or for good (still up at the window's end),
    and the rise is large in absolute terms too (`loss_scale`: it undoes a tenth of the
    progress the loss had made, and at a memorised, near-zero loss it climbs above the
    loss's earlier level). Otherwise *info*, with the reason, when the rise is explained:
    the LR at least doubled over the baseline window before it (a warmup or a warm
    restart the log shows: larger steps give larger gradients, by design), or the loss
    did not react (it never rose by `blowup_rise` and a tenth of its progress, or it sat
    near zero and stayed below its earlier level, or it went no higher than it had
    already been in the window before: the earlier spikes of the same size passed
    without harm). Early-training growth from a tiny initial norm while the loss falls
    is the last case. Otherwise (no loss logged, or the loss rose to an unusual level)
    warning. No point is judged before `min_window` points precede it, and the message
    states the real number of points behind the baseline when it is under a full window.

    *Clipping saturation.* A norm logged *after* clipping can never exceed the clip value,
    so when clipping is always active the logged norm is pinned at it. After skipping the
    first `skip_early_fraction` of the norms, if at least `saturation_fraction` of them
    equal their maximum (to 1e-6 relative) the clip is active on most steps.

    Minimum sample: `min_points` norms for explosions (a baseline of 5+ points);
    `saturation_min_points` for saturation.

    **Defaults and why.**
    - `z_threshold` 6 and `explosion_ratio` 5: healthy pre-clip norms (what transformers'
      Trainer logs) are heavy-tailed and routinely 2-3x their median, and exceed the clip
      value now and then: that is normal, so an explosion needs both 5x and z >= 6.
    - `window_fraction` 0.05 (5% of the logged points), `min_window` 10 .. `max_window`
      200; `growth_windows` 4; `onset_ratio` 2.
    - `sigma_floor_decades` 0.02 (about 5%): quantised norms are often flat, and a flat
      baseline must not turn a small step into an enormous z.
    - `loss_window_points` 10, `blowup_sigmas` 6, `blowup_rise` 0.5 (50% above the
      pre-explosion median).
    - `saturation_fraction` 0.5 after `skip_early_fraction` 0.1 (clipping early on is
      normal): half of the norms exactly at one value cannot happen by chance in a float
      series, even bf16-quantised (bf16 has 256 values per octave; `6.625, 3.8125` are
      single points, not a point mass at the max).
    - `min_points` 10, `saturation_min_points` 20.

    **False-positive modes.** A deliberate change that multiplies the norm (unfreezing
    layers, a new loss term) is reported as an explosion (warning when the loss rises to
    an unusual level with it, error only if the loss blows up too). Misses by design: a
    real explosion the loss has not (yet) reacted to within `loss_window_points` points,
    or one that coincides with an LR rise, is info; in a log without a train loss every
    explosion is a warning. fp16 runs that log the norm of *scaled* gradients show norms of
    1e4-1e6 whatever the loss: a constant offset is invisible to a ratio test, and the
    loss scaler's doubling and halving (2x steps) stays below the 5x threshold; such a log
    is not flagged unless the scaled norm itself jumps 5x (or climbs 5x within four
    windows: three doublings without an overflow, rare once the scaler has settled).
    Non-finite norms (an fp16 overflow step that the scaler skips) are left to the
    divergence detector. A norm constant at one value for most of the run (a logging
    placeholder) reads as saturation.

    **Example.** `examples/grad_explosion/trainer_state.json`: an error from step 304, where
    the norm took off after a refactor dropped zero_grad() at step 300, before train/loss
    blew up. Silent on `examples/clipping_healthy/trainer_state.json` (clipped at 0.25,
    norms logged before clipping).
    """

    def detect(self, run: Run, params: GradNormParams) -> list[Finding]:
        """Explosion episodes and clipping saturation for every gradient-norm metric."""
        findings: list[Finding] = []
        for metric in sorted(run.metrics):
            if not is_grad_norm_metric(metric):
                continue
            series = run.metrics[metric]
            with np.errstate(all="ignore"):  # huge logged values may overflow: harmless
                findings.extend(explosions(metric, series, run, params))
                pinned = saturation(metric, series, params)
            if pinned is not None:
                findings.append(pinned)
        return findings


DETECTOR = GradNormDetector()
