"""divergence, sustained rises: a loss rising to the end of the log (error) or a climb
that held and came back (warning), tested on ranks with effect-size checks.

The levels a rise is measured between are points of the smoothed curve
(`stats.smooth_curve`: a centred rolling median over 5% of the points, after a
block-median decimation to 400), so every message calls them smoothed and says which
logged steps the rolling median spans (`smoothed_span`); a raw value is quoted only at a
logged step (the last one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import idioms, loss_scale, stats
from trainspotter.detectors.base import fmt
from trainspotter.detectors.divergence.params import NAME, DivergenceParams
from trainspotter.model import Evidence, Finding, FloatArray, Run, Severity
from trainspotter.names import LR, is_eval


@dataclass(frozen=True)
class Rise:
    """A sustained rise of one loss: from where, how far, and whether it came back."""

    min_step: int
    """The lowest (smoothed) point before the rise."""
    min_level: float
    """The smoothed value there (not a logged value: a rolling median)."""
    onset_step: int
    """The first step at which the rise is already as large as the test requires."""
    peak_step: int
    peak_level: float
    end_step: int
    """The last step still risen (the last logged step for an ongoing rise)."""
    end_level: float
    evidence: Evidence
    detail: str
    """One sentence with the test's numbers."""
    in_log: bool = True
    """The rise was measured in log space (a positive loss): its size is a ratio."""
    scale: float = 1.0
    """The loss's robust level (`stats.level_scale`), for a linear rise's size."""
    min_span: str = ""
    """Which logged points the smoothed minimum is a rolling median over
    (`smoothed_span`)."""
    end_span: str = ""
    """What `end_level` is a median of: for a tail rise, the last tenth of the smoothed
    curve over named steps; for a transient one, the smoothed value after the climb."""
    last_value: float = math.nan
    """The last logged (raw) value, at `end_step`, for a tail rise."""

    def growth(self, to_level: float) -> str:
        """The observed rise from the minimum to `to_level`: "x65.5" for a positive loss,
        "+0.3 (12% of the level)" otherwise."""
        if self.in_log and self.min_level > 0:
            return f"x{fmt(to_level / self.min_level)}"
        diff = to_level - self.min_level
        share = f" ({fmt(100 * diff / self.scale)}% of the level)" if self.scale > 0 else ""
        return f"{diff:+.4g}{share}"

    def finding(
        self, name: str, title: str, severity: Severity, message: str, fixes: tuple[str, ...]
    ) -> Finding:
        """The finding for this rise of `name`: from its onset to its last risen step."""
        return Finding(
            detector=NAME,
            title=title,
            severity=severity,
            metric=name,
            step_start=self.onset_step,
            step_end=self.end_step,
            message=message,
            evidence=self.evidence,
            fixes=fixes,
        )


def _rising(trend: stats.Trend, alpha: float, params: DivergenceParams) -> bool:
    """A significant rise: Mann-Kendall p < `alpha`, or a Kendall tau of at least
    `monotone_tau` (80% of all pairs of points in rising order).

    The second clause is there because the autocorrelation correction in
    `stats.trend_test` measures autocorrelation around a straight line: a smooth, curved
    climb (exponential, or up-and-over) leaves curved residuals that read as strong
    autocorrelation, and the corrected p-value loses its power exactly when the climb is
    cleanest. Noise does not put 80% of pairs in order over `monotone_min_points` (20)
    points, and the effect-size tests still apply.
    """
    monotone = trend.n >= params.monotone_min_points and trend.tau >= params.monotone_tau
    return trend.z > 0 and (trend.p_value < alpha or monotone)


def smoothed_span(x: FloatArray, size: int, i: int) -> str:
    """The logged points the smoothed value `i` of `stats.smooth_curve(x, ...)` (`size`
    smoothed points, default window) is a rolling median over, in words: "a rolling median
    over the 8 points logged at steps 0-70". `x` holds the finite points' steps.

    It mirrors `smooth_curve`: blocks of ceil(n / `stats.MAX_TREND_POINTS`) points when
    decimated (the last block keeps the remainder), a centred window of
    max(3, round(5% of the smoothed points)) | 1 of them, cut short at both ends of the log."""
    n = int(x.size)
    block = 1 if n <= stats.MAX_TREND_POINTS else math.ceil(n / stats.MAX_TREND_POINTS)
    width = max(3, round(size * 0.05)) | 1
    half = (width - 1) // 2
    lo, hi = max(0, i - half), min(size - 1, i + half)
    first, last = lo * block, min(n, (hi + 1) * block) - 1
    return (
        f"a rolling median over the {last - first + 1} points logged at steps "
        f"{int(x[first])}-{int(x[last])}"
    )


def tail_rise(x: FloatArray, y: FloatArray, params: DivergenceParams) -> Rise | None:
    """An upward drift from the loss's smoothed minimum to the end of the log.

    In log space for positive losses (a blow-up is exponential: straight in log space,
    and "10% above the level" is a fixed distance there), linear otherwise."""
    if y.size < params.drift_min_points:
        return None
    t, in_log = stats.log_if_positive(y)
    xs, ts = stats.smooth_curve(x, t)
    i_min = int(np.argmin(ts))
    min_step = float(xs[i_min])
    tail = x >= min_step
    n_tail = int(np.count_nonzero(tail))
    if (
        n_tail < params.drift_min_tail_points
        or 1.0 - stats.span_fraction(x, min_step) < params.drift_min_tail_fraction
    ):
        return None
    xt, tt = x[tail], t[tail]
    trend = stats.trend_test(xt, tt)
    if trend is None or not _rising(trend, params.drift_alpha, params):
        return None
    rise = trend.slope * float(xt[-1] - xt[0])
    if in_log:
        by_level = math.log10(1.0 + params.drift_min_rise)
    else:
        by_level = params.drift_min_rise * stats.level_scale(y)
    noise = stats.noise_scale(tt)
    needed = max(by_level, params.drift_noise_multiple * noise)
    tail_smooth = ts[i_min:]
    end_points = max(1, tail_smooth.size // 10)
    end_t = float(np.median(tail_smooth[-end_points:]))
    if rise < needed or end_t - float(ts[i_min]) < needed:
        return None
    half = xt >= xt[0] + 0.5 * float(xt[-1] - xt[0])
    late = stats.trend_test(xt[half], tt[half])
    if late is not None and late.z < 0 and late.p_value < params.drift_alpha:
        return None  # rose, and is coming back down: not diverging
    # Onset: the first smoothed point that is already `by_level` (and clear of the noise
    # before the climb) above the minimum.
    before = t[x < min_step][-max(params.drift_min_tail_points, 3) :]
    onset_needed = max(by_level, params.drift_noise_multiple * stats.noise_scale(before))
    onset = i_min + int(np.argmax(tail_smooth - float(ts[i_min]) >= onset_needed))
    i_peak = i_min + int(np.argmax(tail_smooth))

    min_level, end_level = _to_units(float(ts[i_min]), in_log), _to_units(end_t, in_log)
    sigmas = rise / noise if noise > 0 else float("inf")
    evidence: Evidence = {
        "min_level": min_level,
        "min_step": int(min_step),
        "end_level": end_level,
        "theil_sen_rise": f"x{10.0**rise:.4g}" if in_log else rise,
        "rise_in_noise_sigmas": sigmas if math.isfinite(sigmas) else "inf",
        "mann_kendall_p": trend.p_value,
        "kendall_tau": trend.tau,
        "points": n_tail,
    }
    if in_log and min_level > 0:
        evidence["rise_factor"] = end_level / min_level
    detail = (
        f"Over the {n_tail} points from step {int(min_step)} on, the rank trend test gives "
        f"p={trend.p_value:.2g} (Kendall tau {trend.tau:.2f}, autocorrelation-corrected)."
    )
    return Rise(
        min_step=int(min_step),
        min_level=min_level,
        onset_step=int(xs[onset]),
        peak_step=int(xs[i_peak]),
        peak_level=_to_units(float(ts[i_peak]), in_log),
        end_step=int(x[-1]),
        end_level=end_level,
        evidence=evidence,
        detail=detail,
        in_log=in_log,
        scale=stats.level_scale(y),
        min_span=smoothed_span(x, ts.size, i_min),
        end_span=(
            f"the median of the smoothed curve over steps {int(xs[-end_points])}-{int(xs[-1])}"
        ),
        last_value=float(y[-1]),
    )


def transient_rises(x: FloatArray, y: FloatArray, run: Run, params: DivergenceParams) -> list[Rise]:
    """Excursions where the smoothed loss rose to `transient_factor` x its lowest level so
    far, held there (the smoothing sheds anything shorter than half a window) and came back.
    Abrupt one-step jumps are the spikes detector's; this is the slow climb."""
    t, in_log = stats.log_if_positive(y)
    xs, ts = stats.smooth_curve(x, t)
    if ts.size < 3:
        return []
    if in_log:
        threshold = math.log10(params.transient_factor)
    else:
        threshold = (params.transient_factor - 1.0) * stats.level_scale(y)
    # The lowest point of a noisy smoothed curve sits a few smoothing errors below its
    # level and its highest a few above, so noise alone spans ~5 of them: ask for 6.
    threshold = max(threshold, params.transient_noise_multiple * stats.smoothing_error(t))
    running_min = np.minimum.accumulate(ts)
    risen = ts - running_min >= threshold
    rises: list[Rise] = []
    for start, end in stats.episodes(risen, max_gap=1):
        if end == ts.size - 1:
            continue  # still risen at the end: the tail test's case
        i_min = int(np.flatnonzero(ts[: start + 1] == running_min[start])[-1])
        i_peak = start + int(np.argmax(ts[start : end + 1]))
        if not _large_enough(x, y, float(xs[i_min]), ts[i_min], ts[i_peak], in_log, params):
            continue
        climb = (x >= xs[i_min]) & (x <= xs[i_peak])
        trend = stats.trend_test(x[climb], y[climb])
        if trend is None or not _rising(trend, params.transient_alpha, params):
            continue
        if _lr_restarted(run, float(xs[i_min]), float(xs[i_peak])):
            continue
        min_level = _to_units(float(ts[i_min]), in_log)
        peak_level = _to_units(float(ts[i_peak]), in_log)
        after = _to_units(float(ts[min(end + 1, ts.size - 1)]), in_log)
        evidence: Evidence = {
            "min_level": min_level,
            "min_step": int(xs[i_min]),
            "peak_level_smoothed": peak_level,
            "peak_step": int(xs[i_peak]),
            "recovered_by_step": int(xs[min(end + 1, ts.size - 1)]),
            "level_after": after,
            "mann_kendall_p": trend.p_value,
            "kendall_tau": trend.tau,
        }
        factor = peak_level / min_level if in_log and min_level > 0 else float("nan")
        if math.isfinite(factor):
            evidence["rise_factor"] = factor
        detail = (
            f"The climb from step {int(xs[i_min])} to {int(xs[i_peak])} is a significant "
            f"rank trend (p={trend.p_value:.2g}, Kendall tau {trend.tau:.2f}, autocorrelation-"
            "corrected)."
        )
        rises.append(
            Rise(
                min_step=int(xs[i_min]),
                min_level=min_level,
                onset_step=int(xs[start]),
                peak_step=int(xs[i_peak]),
                peak_level=peak_level,
                end_step=int(xs[end]),
                end_level=after,
                evidence=evidence,
                detail=detail,
                min_span=smoothed_span(x, ts.size, i_min),
            )
        )
    return rises


def _large_enough(
    x: FloatArray,
    y: FloatArray,
    min_step: float,
    min_t: float,
    peak_t: float,
    in_log: bool,
    params: DivergenceParams,
) -> bool:
    """The absolute sense of a climb (`loss_scale`): it undoes at least
    `min_progress_share` of the progress the loss had made before it (from its highest
    5-point median down to the climb's minimum). (No near-zero clause: a climb that held
    for half a smoothing window is not one hard batch.)"""
    level, peak = _to_units(min_t, in_log), _to_units(peak_t, in_log)
    reference = loss_scale.reference_level(y, int(np.searchsorted(x, min_step, side="right")))
    return loss_scale.undoes_progress(peak, level, reference, params.min_progress_share)


def _to_units(value: float, in_log: bool) -> float:
    """A (possibly log10) smoothed value back in the loss's own units."""
    return float(10.0**value) if in_log else value


def _lr_restarted(run: Run, start: float, end: float) -> bool:
    """Did the LR jump back up between `start` and `end` after having decayed: at least
    doubling from a value below half of its earlier peak (a warm restart or a cyclic
    schedule, which explains a loss that climbs for a while)? A warmup is no restart."""
    lr = run.metrics.get(LR)
    if lr is None:
        return False
    lx, ly = stats.finite_xy(lr.steps, lr.values)
    if ly.size < 2:
        return False
    decayed = ly < 0.5 * np.maximum.accumulate(ly)
    inside = (lx >= start) & (lx <= end)
    # The lowest decayed LR seen so far (inf before any), compared with each later value.
    low = np.minimum.accumulate(np.where(decayed, ly, np.inf))
    jumped = ly[1:] >= 2.0 * low[:-1]
    return bool(np.any(jumped & inside[1:]))


def _drift_fixes(name: str, rise: Rise, run: Run) -> tuple[str, ...]:
    return (
        f"Resume from the checkpoint nearest step {rise.min_step} (lowest smoothed {name}, "
        f"{fmt(rise.min_level)}) with a 2-10x lower learning rate.",
        f"{idioms.clipping_fix(run)}; and check the warmup length.",
        "If the data changed partway (a new shard, a curriculum stage), check that stage for "
        "corrupt or mislabelled samples.",
        "With Adam, weight decay that is too strong or beta2 too high can also make the loss "
        "creep up late in training.",
    )


def _lr_rise_note(run: Run, rise: Rise) -> str:
    lr = run.metrics.get(LR)
    if lr is None or len(lr) == 0:
        return ""
    lx, ly = stats.finite_xy(lr.steps, lr.values)
    inside = (lx >= rise.min_step) & (lx <= rise.end_step)
    if not np.any(inside):
        return ""
    first, last = float(ly[inside][0]), float(ly[inside][-1])
    if last <= first * 1.05:
        return ""
    rise.evidence["lr_at_min"] = first
    rise.evidence["lr_at_end"] = last
    first_step, last_step = int(lx[inside][0]), int(lx[inside][-1])
    return (
        f" The LR rose over the same stretch ({fmt(first)} at step {first_step} -> "
        f"{fmt(last)} at step {last_step})."
    )


def drift_finding(name: str, rise: Rise, run: Run) -> Finding:
    message = (
        f"{name} has been rising since step {rise.onset_step}, up from its smoothed minimum "
        f"{fmt(rise.min_level)} at step {rise.min_step} ({rise.min_span}): it ends at a "
        f"smoothed {fmt(rise.end_level)} ({rise.end_span}; "
        f"{rise.growth(rise.end_level)} from the smoothed minimum), its last logged value "
        f"{fmt(rise.last_value)} at step {rise.end_step}. {rise.detail}" + _lr_rise_note(run, rise)
    )
    rise.evidence["onset_step"] = rise.onset_step
    title = f"{name} is drifting upward (diverging) from step {rise.onset_step}"
    return rise.finding(name, title, Severity.ERROR, message, _drift_fixes(name, rise, run))


def transient_finding(name: str, rise: Rise, run: Run) -> Finding:
    factor = rise.evidence.get("rise_factor")
    how_far = f" ({fmt(float(factor))}x)" if isinstance(factor, float) else ""
    back_at = int(rise.evidence["recovered_by_step"])
    rise.evidence["recovered_at_step"] = back_at
    # "The run recovered" only when the eval loss did too (a train loss can come back by
    # memorising while eval stays worse); otherwise say what eval did.
    eval_note = None if is_eval(name) else loss_scale.eval_after(run, rise.onset_step, back_at)
    if eval_note:
        rise.evidence["eval_recovered"] = "no"
        outcome = (
            f"{name} came back, but the run did not recover: {eval_note} A loss that "
            "diverges for a while is one LR setting away from not coming back."
        )
    else:
        outcome = (
            f"{name} came back, but a loss that diverges for a while is one LR setting away "
            "from not coming back."
        )
    message = (
        f"{name} (smoothed) climbed from {fmt(rise.min_level)} at step {rise.min_step} "
        f"({rise.min_span}) to {fmt(rise.peak_level)} at step {rise.peak_step}{how_far}, "
        f"stayed up until step {rise.end_step} and came back to {fmt(rise.end_level)} by "
        f"step {back_at}. {rise.detail} {outcome}"
    )
    title_end = "came back (eval/loss did not)" if eval_note else "came back"
    title = f"{name} diverged at steps {rise.onset_step}-{rise.end_step} and {title_end}"
    fixes = (
        f"Lower the learning rate (2-3x) or add/lengthen warmup: the climb started at "
        f"step {rise.min_step}.",
        f"{idioms.clipping_fix(run)}.",
        f"Inspect the data around steps {rise.min_step}-{rise.peak_step} for a bad shard.",
    )
    return rise.finding(name, title, Severity.WARNING, message, fixes)
