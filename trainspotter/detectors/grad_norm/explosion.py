"""grad_norm's explosions: a gradient norm that jumps (against its trailing window, in
robust z) or climbs (against the lowest of its recent trailing medians), extended to its
onset and judged by what the train loss did (`loss_reaction`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from trainspotter import names
from trainspotter.detectors import idioms, stats
from trainspotter.detectors.grad_norm.loss_reaction import explanation, loss_blowup
from trainspotter.detectors.grad_norm.params import NAME, GradNormParams
from trainspotter.model import Evidence, Finding, Run, Series, Severity

MAX_GATHERED = 5_000_000
"""Above this many (candidate x window) values, the noise comes from a rolling MAD over
the whole series instead of one gathered window per candidate (40 MB at most)."""


def explosions(metric: str, series: Series, run: Run, params: GradNormParams) -> list[Finding]:
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
    blowup = loss_blowup(loss, start_step, end_step, params)
    explained = "" if blowup else explanation(run, loss, start_step, end_step, params, window)
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
