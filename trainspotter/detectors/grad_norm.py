"""grad_norm: gradient-norm explosions, and a post-clip norm pinned at the clip value.

One module over ~500 lines on purpose: the explosion and pinned-at-clip verdicts share
one baseline window and the loss-reaction checks that explain a rise away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import numpy.typing as npt

from trainspotter import names
from trainspotter.detectors import idioms, loss_scale, stats
from trainspotter.detectors.base import Above, Detector, Reads
from trainspotter.model import Evidence, Finding, Run, Series, Severity

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


MAX_GATHERED = 5_000_000
"""Above this many (candidate x window) values, the noise comes from a rolling MAD over
the whole series instead of one gathered window per candidate (40 MB at most)."""


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
                findings.extend(_explosions(metric, series, run, params))
                saturation = _saturation(metric, series, params)
            if saturation is not None:
                findings.append(saturation)
        return findings


def _explosions(metric: str, series: Series, run: Run, params: GradNormParams) -> list[Finding]:
    """One finding per explosion episode of one gradient-norm metric."""
    x, g = stats.finite_xy(series.steps, series.values)
    positive = g > 0
    x, g = x[positive], g[positive]
    n = int(g.size)
    if n < params.min_points:
        return []
    window = stats.window_points(n, params.window_fraction, params.min_window, params.max_window)
    log_g = np.log10(g)
    # A jump: far above the trailing median as a ratio, and in noise units. The ratio is a
    # cheap screen; the noise (MAD of the trailing window) is computed only for the few
    # points it leaves, so a million-point log costs one rolling median.
    median_log = stats.trailing_median(log_g, window)
    excess = log_g - median_log
    candidates = np.flatnonzero(excess >= np.log10(params.explosion_ratio))
    z = np.full(n, np.nan)
    if candidates.size * window <= MAX_GATHERED:
        mad = stats.trailing_mad_at(log_g, window, candidates, median_log[candidates])
        sigma = np.maximum(stats.MAD_TO_SIGMA * mad, params.sigma_floor_decades)
        z[candidates] = excess[candidates] / sigma
    else:  # a long explosion: one rolling MAD costs less than gathering every window
        full_z, _, _ = stats.trailing_robust_z(log_g, window, floor=params.sigma_floor_decades)
        z[candidates] = full_z[candidates]
    jump = np.zeros(n, dtype=bool)
    jump[candidates] = z[candidates] >= params.z_threshold
    # A climb: a norm that grows steadily drags its trailing median along, so it is also
    # measured against the lowest trailing median of the last `growth_windows` windows,
    # and must stay that far up for a quarter-window in a row (one outlier cannot).
    base_log = stats.rolling_min(median_log, params.growth_windows * window)
    high = log_g - base_log >= np.log10(params.explosion_ratio)
    climb = stats.held_for(high, max(3, window // 4))
    flagged = jump | climb
    # No verdict before a baseline of `min_window` points exists (a full window when the
    # window is at its minimum); the message states the real count below a full window.
    flagged[: max(params.min_window, window // 2)] = False
    baseline_log = np.where(climb & ~jump, base_log, median_log)
    extended: list[_Episode] = []
    for first, last in stats.episodes(flagged, max_gap=max(3, window // 5)):
        episode = _extend(
            g, baseline_log, np.where(jump, z, np.nan), first, last, params.onset_ratio
        )
        if extended and episode.start <= extended[-1].end + 1:
            extended[-1] = extended[-1].merge(episode)  # two flags of one extended episode
        else:
            extended.append(episode)
    return [_explosion_finding(metric, x, g, episode, run, params, window) for episode in extended]


@dataclass(frozen=True)
class _Episode:
    """An explosion: points start..end (extended to its onset), against `baseline`."""

    start: int
    end: int
    baseline: float
    z: float | None
    """The largest robust z of its jump points; None when only the steady-climb test
    flagged it (no point was a jump against its own trailing window)."""
    climb_baseline: bool
    """The baseline is the lowest trailing median of `growth_windows` windows (the climb
    test's), not the trailing median just before the episode."""

    def merge(self, other: _Episode) -> _Episode:
        zs = [z for z in (self.z, other.z) if z is not None]
        return _Episode(
            self.start,
            max(self.end, other.end),
            self.baseline,
            max(zs) if zs else None,
            self.climb_baseline,
        )


def _extend(
    g: npt.NDArray[np.float64],
    baseline_log: npt.NDArray[np.float64],
    jump_z: npt.NDArray[np.float64],
    first: int,
    last: int,
    onset_ratio: float,
) -> _Episode:
    """Points first..last, extended while the norm stays `onset_ratio` x the baseline
    (taken where the flags start), so a climb is dated from where it took off. `jump_z`:
    the robust z of the points flagged as jumps, NaN elsewhere."""
    baseline = float(10.0 ** baseline_log[first])
    elevated = g >= onset_ratio * baseline
    calm_before = np.flatnonzero(~elevated[:first])
    start = int(calm_before[-1]) + 1 if calm_before.size else 0
    calm_after = np.flatnonzero(~elevated[last:])
    end = max(last, last + int(calm_after[0]) - 1) if calm_after.size else g.size - 1
    flagged_z = jump_z[first : last + 1]
    z_max = float(np.nanmax(flagged_z)) if np.any(np.isfinite(flagged_z)) else None
    # No jump at the first flag: the steady-climb test flagged it, against its baseline.
    climb_baseline = not np.isfinite(jump_z[first])
    return _Episode(start, end, baseline, z_max, climb_baseline)


def _explosion_finding(
    metric: str,
    x: npt.NDArray[np.float64],
    g: npt.NDArray[np.float64],
    episode: _Episode,
    run: Run,
    params: GradNormParams,
    window: int,
) -> Finding:
    """The finding for one extended explosion episode."""
    start, end, baseline = episode.start, episode.end, episode.baseline
    peak = start + int(np.argmax(g[start : end + 1]))
    start_step, end_step, peak_step = int(x[start]), int(x[end]), int(x[peak])
    peak_ratio = float(g[peak] / baseline)

    loss = run.metrics.get(names.TRAIN_LOSS)
    blowup = _loss_blowup(loss, start_step, end_step, params)
    explained = "" if blowup else _explanation(run, loss, start_step, end_step, params, window)
    severity = Severity.ERROR if blowup else Severity.INFO if explained else Severity.WARNING
    points = end - start + 1
    before = min(start, window)
    if episode.climb_baseline:
        # The steady-climb test: the ratio is against the lowest trailing median.
        source = (
            f"the lowest of its {window}-point trailing medians over the last "
            f"{params.growth_windows * window} points"
        )
    else:
        source = f"the median of the {before} points before"
    if episode.z is None:
        how = f"{peak_ratio:.3g}x; a steady climb rather than one jump"
    else:
        how = (
            f"{peak_ratio:.3g}x; robust z {episode.z:.1f} in log space against the trailing window"
        )
    above = f"above {params.onset_ratio:g}x the baseline"
    held = (
        f"staying {above} from step {start_step} to {end_step} ({points} logged points)"
        if points > 1
        else f"{above} for that one logged point only"
    )
    message = (
        f"{metric} rose from a baseline of {baseline:.3g} ({source}) to {g[peak]:.3g} at step "
        f"{peak_step} ({how}), {held}."
    )
    if blowup:
        message += f" {blowup}"
    if explained:
        message += f" {explained}"
    evidence: Evidence = {
        "baseline_median": baseline,
        "peak_value": float(g[peak]),
        "peak_step": peak_step,
        "ratio": peak_ratio,
        "points": points,
    }
    if episode.z is None:
        evidence["flagged_by"] = (
            f"steady climb: >= {params.explosion_ratio:g}x the lowest trailing median of "
            f"{params.growth_windows} windows, held for {max(3, window // 4)} points"
        )
    else:
        evidence["z"] = episode.z
    if blowup:
        evidence["loss_blowup"] = blowup
    fixes = (
        idioms.clipping_fix(run),
        "Lower the peak LR by 3-10x, and add or lengthen the warmup",
        f"Inspect the batches around step {start_step}: a corrupted or extreme batch "
        "(inputs or labels out of range) gives one huge gradient",
        "In mixed precision, prefer bf16, or check that the loss scaler is working",
    )
    return Finding(
        detector=NAME,
        title=(
            f"{metric} rose {peak_ratio:.3g}x (explained, no loss incident)"
            if explained
            else f"{metric} exploded {peak_ratio:.3g}x"
            + (" before a loss blow-up" if blowup else "")
        ),
        severity=severity,
        metric=metric,
        step_start=start_step,
        step_end=end_step,
        message=message,
        evidence=evidence,
        fixes=fixes,
    )


def _explanation(
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


def _loss_blowup(loss: Series | None, start: int, end: int, params: GradNormParams) -> str:
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


def _saturation(metric: str, series: Series, params: GradNormParams) -> Finding | None:
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


DETECTOR = GradNormDetector()
