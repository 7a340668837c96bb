"""overfitting: an eval loss rising from its minimum while the train loss keeps falling."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.model import Finding, Run, Series, Severity

NAME = "overfitting"


@dataclass(frozen=True)
class OverfittingParams:
    """Parameters of the overfitting detector (see its docstring for each default's reason)."""

    min_eval_points: int = 4
    """Abstain below this many finite evaluations of a metric."""
    min_points_after_min: int = 2
    """Evaluations needed after the (smoothed) minimum before a rise can be claimed."""
    smoothing_fraction: float = 0.1
    """Centred rolling-median width as a fraction of the evaluations (3 to 51, odd)."""
    min_relative_rise: float = 0.05
    """The rise must be at least this fraction of the minimum's level..."""
    noise_multiple: float = 3.0
    """...and at least this many times the eval curve's point-to-point noise."""
    min_fraction_above: float = 0.6
    """Share of post-minimum evaluations that must sit a quarter of the rise above the
    minimum."""
    trend_alpha: float = 0.05
    """Significance of the Mann-Kendall tests (rise of eval, fall of train)."""


class OverfittingDetector:
    """Finds an eval loss that rose from its minimum while the train loss kept falling.

    **What it finds.** For every loss-like eval metric (`eval/loss` and any other eval metric
    whose name contains "loss"), the point where the eval loss bottomed out, how far it has
    risen since, and whether `train/loss` kept falling over the same steps. That
    combination is the textbook signature of overfitting; the fix names the best
    checkpoint (the step of the lowest logged eval value). Severity: warning.

    **Algorithm.** Eval curves are short (often 3-20 points), so every step is conservative:
    1. The robust minimum: a centred rolling median over `smoothing_fraction` of the
       evaluations (3 to 51 points; none below 7 evaluations, where a 3-point median is
       mostly edge effects) and its argmin. One lucky low evaluation therefore cannot
       become "the minimum" that everything after it rises from.
    2. The rise: the median of the later half of the post-minimum evaluations (all of them
       when fewer than 4) minus the smoothed minimum. It must be at least
       `min_relative_rise` (5%) of the minimum's level and `noise_multiple` (3) times the
       curve's point-to-point noise (`stats.noise_scale`: MAD of first differences, which
       a trend does not inflate much but a jittery eval set does).
    3. Consistency: at least `min_fraction_above` (60%) of the post-minimum evaluations
       lie a quarter of the rise above the minimum (a steady linear rise passes, a single
       high evaluation after a flat stretch does not), and with 8 or more points from the
       minimum on, `stats.trend_test` (Mann-Kendall, corrected for autocorrelation) must
       not find the eval loss falling again.
    4. The train loss over [minimum, last evaluation] must still be falling: the later half
       lower than the earlier half and, with 8+ points, a significant downward trend
       (`stats.change_over`: `trend_alpha`, or tau <= -0.6). Without `train/loss` the
       detector abstains:
       an eval loss rising together with the train loss is divergence, not overfitting.

    Minimum sample: `min_eval_points` = 4 evaluations with at least
    `min_points_after_min` = 2 after the minimum, and 3 train-loss points over that range.
    Four points is the least that can show "down, bottom, up, still up"; two points after
    the minimum keep one high evaluation from being called a trend.

    **Defaults and why.** 5% and 3 noise sigmas, because a converged eval loss jitters by a
    percent or two and a smoothed minimum of a flat noisy curve sits about 0.5-1.5 sigma
    below its level; a 5% rise that is also 3 sigma is a change a user would act on.
    60% tolerates one or two lucky evaluations after the minimum.

    **False-positive modes.** A converged run whose eval loss drifts up a few percent while the
    train loss keeps falling (mild overfitting: reported once it passes 5% and 3 sigma,
    which is intended); an eval set too small for its jitter estimate (few points make the
    noise estimate unreliable, hence the relative floor); a deliberate data or task switch
    mid-run that raises the eval loss. A transient eval bump that later recovers is not
    reported: the minimum then moves past it.

    **Example.** `examples/overfitting/trainer_state.json`: a warning from step 520, the
    eval loss's minimum (128 training digits, 500 epochs, no weight decay), rising to the
    end while train/loss keeps falling. Silent on `examples/healthy/trainer_state.json`.
    """

    name = NAME
    causal_rank = 6
    whole_run = True
    drives_same_step = False
    summary = "An eval loss rising from its minimum while the train loss keeps falling."
    Params = OverfittingParams

    def detect(self, run: Run, params: OverfittingParams) -> list[Finding]:
        """One finding per loss-like eval metric that overfits."""
        train = run.metrics.get(names.TRAIN_LOSS)
        if train is None:
            return []
        findings = []
        for metric in sorted(run.metrics):
            if metric == names.TRAIN_LOSS or not (
                names.is_eval(metric) and names.is_loss_like(metric)
            ):
                continue
            with np.errstate(all="ignore"):  # huge logged values may overflow: harmless
                finding = _check(metric, run.metrics[metric], train, params)
            if finding is not None:
                findings.append(finding)
        return findings


def _check(metric: str, evals: Series, train: Series, params: OverfittingParams) -> Finding | None:
    """The overfitting finding for one eval metric, or None."""
    x, y = stats.finite_xy(evals.steps, evals.values)
    n = int(y.size)
    if n < max(params.min_eval_points, 3):
        return None
    # Below 7 points a 3-point median mostly averages the two edge points: use the raw
    # values, and let the rise, noise and consistency checks carry the caution.
    width = stats.window_points(n, params.smoothing_fraction, 3, 51) | 1 if n >= 7 else 1
    smooth = stats.rolling_median(y, width, center=True)
    k = int(np.argmin(smooth))
    after = y[k + 1 :]
    if after.size < params.min_points_after_min:
        return None
    min_level = float(smooth[k])
    tail = after[after.size // 2 :] if after.size >= 4 else after
    end_level = float(np.median(tail))
    rise = end_level - min_level
    sigma = stats.noise_scale(y)
    level = abs(min_level) if min_level != 0 else stats.level_scale(y)
    if rise <= 0 or rise < max(params.min_relative_rise * level, params.noise_multiple * sigma):
        return None
    if float(np.mean(after > min_level + rise / 4)) < params.min_fraction_above:
        return None
    trend = stats.trend_test(x[k:], y[k:])
    if trend is not None and trend.tau < 0 and trend.p_value < params.trend_alpha:
        return None
    change = stats.change_over(train.steps, train.values, float(x[k]), float(x[-1]))
    if change is None or not change.falling(params.trend_alpha):
        return None

    best = int(np.argmin(y))
    best_step, best_value = int(x[best]), float(y[best])
    # The episode starts at the lowest raw evaluation of the smoothed valley: the
    # checkpoint a user would go back to.
    lo, hi = max(k - width // 2, 0), k + width // 2 + 1
    onset = lo + int(np.argmin(y[lo:hi]))
    rise_pct = 100.0 * rise / level if level > 0 else math.inf
    noise_text = (
        f"{rise / sigma:.1f}x its point-to-point noise {sigma:.3g}"
        if sigma > 0
        else "its evaluations show no jitter"
    )
    message = (
        f"{metric} bottomed out at {min_level:.4g} (smoothed) around step {int(x[k])} and "
        f"has since risen to {end_level:.4g} (+{rise_pct:.0f}%, {noise_text}) over "
        f"{after.size} evaluations, while {names.TRAIN_LOSS} kept falling from "
        f"{change.start_level:.4g} to {change.end_level:.4g} over the same steps. "
        f"The best evaluation was {best_value:.4g} at step {best_step}."
    )
    return Finding(
        detector=NAME,
        title=f"{metric} rising from its minimum while {names.TRAIN_LOSS} falls (overfitting)",
        severity=Severity.WARNING,
        metric=metric,
        step_start=int(x[onset]),
        step_end=int(x[-1]),
        message=message,
        evidence={
            "best_step": best_step,
            "best_value": best_value,
            "min_step": int(x[k]),
            "min_level": min_level,
            "end_level": end_level,
            "rise": rise,
            "rise_percent": rise_pct,
            "eval_noise": sigma,
            "evaluations": n,
            "evaluations_after_min": int(after.size),
            "train_start_level": change.start_level,
            "train_end_level": change.end_level,
            "train_trend_tau": change.tau,
            "train_trend_p": change.p_value,
        },
        fixes=(
            f"Load the checkpoint at step {best_step} (best {metric} {best_value:.4g}), or "
            "keep the best checkpoint automatically (transformers: load_best_model_at_end=True "
            "with metric_for_best_model)",
            f"Stop earlier: early stopping on {metric} with a patience of a few evaluations",
            "Regularise: weight decay (0.01-0.1), dropout, data augmentation, label smoothing",
            "Train on more data or use a smaller model",
        ),
    )


DETECTOR = OverfittingDetector()
