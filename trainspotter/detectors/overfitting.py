"""overfitting: an eval loss rising from its minimum while the train loss keeps falling, or
ending well above its best evaluation whatever the train loss did."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import eval_stall, stats
from trainspotter.detectors.base import Abstain, Detector, Scope, scope_or_abstain
from trainspotter.detectors.eval_jitter import curve_noise, eval_jitter
from trainspotter.detectors.eval_pairs import judged_eval_metrics, other_best_texts, train_partner
from trainspotter.detectors.eval_rise import (
    Rise,
    TrainTrend,
    degrading_title,
    keep_best_fix,
    onset_index,
    percent,
    short_rise,
    short_run_text,
    smoothing_width,
    sustained_rise,
    sustained_text,
    train_trend,
)
from trainspotter.detectors.eval_trend import trend_rise, trend_text
from trainspotter.model import Finding, FloatArray, Run, Series, Severity

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
    few_points_rise: float = 0.25
    """Below `short_run_evals`, a rise of at least this fraction of the best evaluation,
    growing at every evaluation after it, is reported (a large effect needs fewer points)."""
    short_run_evals: int = 8
    """Below this many evaluations no jitter estimate is trusted: the short-run rule (the
    order of the evaluations after the best, and the effect size) decides instead."""
    large_rise: float = 0.5
    """A rise of at least this fraction of the minimum is reported whatever the train loss
    did (or without one): the run ends on a much worse model than its best."""
    sustained_rise: float = 0.2
    """The run's last evaluations sit at least this fraction above its best evaluation (and
    beyond the noise, see `sustained_evals`): reported whatever the train loss did."""
    sustained_evals: int = 3
    """Evaluations after the best that the sustained rise needs; each of the last this many
    must sit at least half the rise above the best (one bad evaluation is not a rise)."""


class OverfittingDetector(
    Detector,
    name=NAME,
    params=OverfittingParams,
    causal_rank=6,
    whole_run=True,
    summary="An eval loss rising from its minimum while the train loss keeps falling, or ending "
    "well above its best evaluation whatever the train loss did.",
):
    """Finds an eval loss that rose from its minimum while the train loss kept falling.

    **What it finds.** For every loss-like eval metric (`eval/loss` and any other eval metric
    whose name contains "loss"), the point where the eval loss bottomed out, how far it has
    risen since, and whether its train loss kept falling over the same steps. That
    combination is the textbook signature of overfitting. Each eval loss is judged against
    its own train loss (`eval_pairs.train_partner`): the same name after the train/eval
    prefix (`train/box_loss` for `val/box_loss`, Keras's `box_loss` for `val_box_loss`),
    else the total `train/loss`; title, message and evidence (`train_metric`) name the pair,
    so each head of a multi-task or YOLO run is judged on its own. An eval loss that rose by
    `large_rise` (50%) or more above its minimum is reported whatever the train loss did
    (or without one), titled as a rise, not as overfitting: the run ends on a much worse
    model than its best. So is an eval loss whose last evaluations all stay well above its
    best evaluation (step 5: `sustained_rise`, 20%, beyond the noise of a best-of-n pick),
    titled "overfitting" when the train loss kept falling and "degrading while <its train loss>
    is flat" (or "rises", or "not logged") otherwise. A noisy eval loss (a small validation
    set, many evaluations) whose single points never clear those noise tests is reported
    when its evaluations after the minimum trend upward significantly (step 6). The fix
    names the best checkpoint (the step of the lowest logged eval value) in the words of
    the log's framework, the message the best of up to 3 other quality metrics (accuracy,
    F1, mAP, WER; not a one-sided precision or recall: `eval_pairs.other_bests`), eval-named
    or bounded, logged only at the eval loss's steps and said eval by a word or a namespace
    (`ValAcc`, YOLO's `metrics/mAP50-95(B)`); a best at another step is in the fix too, one
    at the same step is said so (a worse model by it too). Step 8 also reads eval error
    rates (WER, CER). Severity: warning.

    **Algorithm.** Eval curves are short (often 3-20 points), so every step is conservative:
    1. The robust minimum: a centred rolling median over `smoothing_fraction` of the
       evaluations (3 to 51 points; none below 7 evaluations, where a 3-point median is
       mostly edge effects) and its argmin. One lucky low evaluation therefore cannot
       become "the minimum" that everything after it rises from.
    2. The rise: the median of the later half of the post-minimum evaluations (all of them
       when fewer than 4) minus the smoothed minimum; when every evaluation after the
       minimum is higher than the one before (3 or more), the last one (a monotone rise has
       no noise to shed). It must be at least `min_relative_rise` (5%) of the minimum's
       level, `noise_multiple` (3) times the point-to-point noise (`eval_jitter.curve_noise`:
       the smaller of the MADs of first and of second differences, since a steep descent
       inflates the first and sharp bends the second), and beyond what a FLAT noisy curve
       gives at 95% (`EvalJitter.flat_bound`, as step 5(b), autocorrelation allowed for:
       see Noise below): the smoothed minimum was picked as the least of n values.
    3. Consistency: at least `min_fraction_above` (60%) of the post-minimum evaluations
       lie a quarter of the rise above the minimum (a steady linear rise passes, a single
       high evaluation after a flat stretch does not), and with 8 or more points from the
       minimum on, `stats.trend_test` (Mann-Kendall, corrected for autocorrelation) must
       not find the eval loss falling again.
    4. The train loss over [minimum, last evaluation] must still be falling: the later half
       lower than the earlier half and, with 8+ points, a significant downward trend
       (`stats.change_over`: `trend_alpha`, or tau <= -0.6), and the train loss over the
       last evaluation interval (the median of its logged points; the raw value when one)
       below its level over the interval that ends at the minimum: a train loss that jumped
       at the minimum and is coming back down falls inside the range without ever getting
       better than it was. The message quotes those two levels, so its numbers and its
       words agree. Otherwise (or without a train loss) only a rise of `large_rise` (50%)
       is reported, as "did not keep falling": a moderate eval rise together with a rising
       train loss is divergence, not overfitting.
    5. Otherwise, with `min_eval_points` or more evaluations, the sustained rise
       (`eval_rise.sustained_rise`), whatever the train loss did. Baselines: the lowest raw
       evaluation (a best evaluation at the very start, before the eval got worse, is
       invisible to a centred rolling median) and the smoothed minimum of step 1, each
       tested on its own; not the raw one when it lies further below the median of its
       neighbours (step 1's window) than the Gaussian best-of-n bound: one wild evaluation
       of a heavy-tailed eval set, not a level the model held. End level: the median of the
       later half of the evaluations after the baseline (at least `sustained_evals` = 3). It
       is reported when (a) the rise is `sustained_rise` (20%) of the baseline's level; (b)
       it exceeds what a flat noisy curve gives at 95%: the baseline is the least of n
       values, so it sits up to Phi^-1(1 - 0.05 / n) sd below the level (Bonferroni, valid
       under any dependence: 2.8 for 20 evaluations, 3.8 for 700), the sd of one evaluation
       or of a rolling median, and the median of the m recent values up to 1.645 of its sd
       above it (Noise below); (c) it persists: each of the last `sustained_evals`
       evaluations lies half the rise or more above the baseline (one bad last evaluation is
       not a rise: spikes reports it). Not when the train loss blew up meanwhile (its level
       over the last evaluation interval 10x or more its level at the eval minimum): the
       model diverged, the divergence detector reports that, the rise is its echo. The message
       names what the train loss did: kept falling (then the title says overfitting), rose
       (its later half's median 10% over its earlier half's), or is flat (no significant
       downward trend; Kendall's tau and the Mann-Kendall p are quoted, since a noisy train
       loss's single points can end lower without a fall).
    6. Otherwise, the trend over many noisy evaluations (`eval_trend.trend_rise`): steps 2
       and 5 compare one rise with the single-point noise, which a noisy curve never passes,
       though a drift over many points is established even when each point is noisy. The
       evaluations after the smoothed minimum's window (its own values are low because they
       were picked as the lowest), at least `short_run_evals` (8, the least
       `stats.trend_test` judges), must trend upward at `trend_alpha` (Mann-Kendall,
       autocorrelation-corrected), and the median of their last third must exceed the median
       of their first third by `min_relative_rise` (5%) of it and by more than the standard
       error of the difference (per median: its third's own MAD spread or the level sigma,
       the larger, over the third's effective size, Noise below): the test carries the
       significance, the standard error keeps the quoted effect from being one third's
       spikes. Overfitting when the train loss kept falling (step 4's check); otherwise
       (flat, rising or absent) "degrading" with step 5's floor, `sustained_rise` (20%):
       without a falling train loss there is no second signal; never when the train loss
       blew up. The message quotes both medians ("median of the last m"), their steps, the
       standard error, tau and p.
    7. Short runs (fewer than `short_run_evals` = 8 evaluations, the shape of most Keras
       logs, where a jitter sigma from 3-7 points is a guess within a factor of 2-3): when
       steps 1-5 find nothing, the order of the evaluations decides instead of their
       jitter. The lowest raw evaluation must be followed by m >= `min_points_after_min`
       (2) evaluations, each higher than the one before. Exchangeable noise (a flat curve)
       puts the lowest of n evaluations m from the end with every later one higher with
       probability 1 / (n m!): 1/6 for 3 evaluations and m = 2, 1/24 for 4 and m = 3. When
       that is under `trend_alpha` (5%) the order itself is the evidence and the rise to
       the last evaluation needs only `min_relative_rise` (5%) of the lowest; otherwise
       the effect size carries it: `few_points_rise` (25%). As in step 4, overfitting
       needs the train loss falling over the same evaluations (else only `large_rise`).
       The message says it rests on n evaluations and gives that probability.
    8. Otherwise, an eval loss that never improved on its first evaluation (`eval_stall`)
       while the train loss fell 5%+: no generalisation from the start, when it sits at a
       cross-entropy's chance level (ln C) or no later evaluation is below the first and
       it worsens significantly; a flat eval alone is not (a model that learned within
       its first epoch looks the same); an error rate (WER, CER) only at half its 0-1 or
       0-100% scale or more throughout (the labels first in the fixes). Flat train: plateau's.

    Noise (steps 2, 5, 6; `eval_jitter.EvalJitter`): checkpoints evaluated on one eval set
    share most of their errors, so an eval level wanders more than neighbours differ. The
    lag-1 autocorrelation r of the evaluations from the minimum on (the last 8 at least;
    ranks about a fitted parabola, bias-corrected, at most 0.9; 0 below 8) turns the
    point-to-point sigma s into the level sigma s / sqrt(1 - r); a median of m has sd
    1.2533 x that / sqrt(m (1 - r) / (1 + r)), at most one evaluation's.

    Minimum sample: 3 evaluations, at least `min_points_after_min` = 2 of them after the
    lowest (one high evaluation after the best is a bump, not a trend), and 3 train-loss
    points over that range; the noise-based steps 1-5 need `min_eval_points` = 4, the
    least that can show "down, bottom, up, still up". A large effect needs fewer points
    (step 7: 25% on 3 evaluations), a small one more (5% needs an order that chance gives
    under 5%: 3 rises after the best, 4 evaluations or more).

    **Defaults and why.** 5% and 3 noise sigmas, because a converged eval loss jitters by a
    percent or two and a smoothed minimum of a flat noisy curve sits about 0.5-1.5 sigma
    below its level; a 5% rise that is also 3 sigma is a change a user would act on.
    60% tolerates one or two lucky evaluations after the minimum. 25% on 3 evaluations:
    epoch-to-epoch eval jitter of a converged model is a few percent, so a quarter more,
    still growing, is not jitter. 50% whatever the train loss does: a model half again
    worse than its best checkpoint is worth a warning whatever the cause.
    Sustained rise: 20% (four times the 5% floor of overfitting) because without a falling
    train loss there is no second signal that the model changed, and a fine-tune's eval
    loss often settles 5-15% above an early minimum without the model getting worse at its
    task; a fifth worse than the best checkpoint is worth loading the best one. The
    Bonferroni bound makes the noise test stricter the more evaluations there are to pick
    a lucky best from; three last evaluations because two can both be unlucky by chance.
    Trend (step 6): the detector's own `trend_alpha` and `min_relative_rise`, no new number;
    thirds, because a median of a third of the points is robust to the spikes of a noisy
    eval set and still far apart in time (the first third, not the minimum, is the
    baseline: the minimum is low because it was picked as the lowest).

    **False-positive modes.** A converged run whose eval loss drifts up a few percent while the
    train loss keeps falling (mild overfitting: reported once it passes 5% and 3 sigma,
    which is intended); an eval set too small for its jitter estimate (few points make the
    noise estimate unreliable, hence the relative floor); a deliberate data or task switch
    mid-run that raises the eval loss. A transient eval bump that later recovers is not
    reported: the minimum then moves past it. On 3 evaluations the last one may be such a
    bump (the message says so). An eval loss rising while a task metric (WER, F1) keeps
    improving is over-confidence, not a worse model by that metric: the message names the
    other metric's best step so the user can choose. A train loss that jumps at the eval
    minimum (a data or label change) and is still coming down at the end is not "kept
    falling" (step 4), so a moderate eval rise then stays silent; the eval rise shows as
    a spike or divergence of the train loss instead.
    Short runs (step 7): a 4-epoch run whose eval loss drifts up 5-7% in order while the
    train loss falls is reported, as intended, but the same order also comes from a slow
    drift of a converged eval (BatchNorm statistics, a learning-rate warmup on a
    fine-tune) that a longer run would show settling; an eval loss measured before any
    training (a sanity evaluation at step 0) is the lowest only if training made it
    worse, which is then true. A first evaluation after most of the learning (an epoch
    aggregate) makes "best at the first evaluation" common: only a rise in order or a
    large one is reported, never a flat eval.
    The sustained rise (step 5): a fine-tune whose eval loss settles slightly above an early
    lucky minimum stays silent below 20% or within the noise bound (an eval loss 15% above
    its minimum while WER keeps improving is not reported); a noisy eval set whose best is
    a lucky draw needs a rise of 3-4 noise sigmas, so a very noisy eval set can hide a
    real rise (eval_noise reports the noise instead); short runs: below 4 evaluations, or
    with fewer than 3 after the best, it is not judged.
    Correlated or heavy-tailed eval noise (steps 2, 5, 6): r from 10-20 evaluations is
    uncertain (sd ~0.25) and biased low, and a parabola absorbs part of a slow wander, so a
    strongly correlated eval (phi ~0.8, 5-10% jitter) wandering 15-30% after its minimum can
    read as a rise (healthy property test, realistic eval curves: 12 of 1000 seeds, 39
    before; a flat eval with 10% jitter, phi 0.8, 12-60 evaluations: 20-28%, from 34-70%); a
    raw best within the Gaussian bound of its neighbours stays a baseline. The price: a slow
    real rise on a correlated-looking eval is missed more often. A WER going the wrong way
    is not judged (error rates: step 8 only), but its best step is named. A component with
    no train twin is judged against the total `train/loss`. A bare name (`acc` beside
    `val_loss`, no `val_acc`) says no side: its best is never named, even when it was an
    evaluation's (a train accuracy's best is usually the last, most overfit checkpoint); a
    train metric under an eval namespace (`metrics/`) would be.
    The trend (step 6): about 5% of flat curves trend "significantly" at alpha 5% (more on
    slowly wandering ones: Mann-Kendall's correction, uncorrected for its small-sample bias,
    only partly covers them); the 5% effect floor and the standard error of the medians
    remove most, a falling train loss most of the rest, but a converged eval that drifts up
    a few percent (BatchNorm statistics, a slowly growing over-confidence) is reported as
    overfitting, which it mostly is. A learning-rate restart or a data switch after the
    minimum raises the eval loss too.

    **Example.** `examples/overfitting/trainer_state.json`: a warning from step 520, the
    eval loss's minimum (128 training digits, 500 epochs, no weight decay), rising to the
    end while train/loss keeps falling. Short runs: `examples/keras_short_overfit/` (3
    epochs, +31% from step 0) and `examples/keras_finetune_overfit_4_epochs/` (4 epochs,
    val_loss higher at each epoch after step 0, +8% at step 3). Never improved:
    `examples/keras_shuffled_train_labels/` (from step 0); a CER, 0.885 at step 62 and
    0.8758 at step 1889, `examples/lightning_cer_shuffled_labels/`. Components (YOLO's
    layout): `examples/torch_box_head_overfit/results.csv`, `val/box_loss` from step 13
    while `train/box_loss` falls. Silent on `examples/healthy/trainer_state.json`,
    `examples/torch_multihead_healthy/` and `examples/lightning_cer_healthy/`.
    """

    def scope(self, run: Run, params: OverfittingParams) -> Scope | Abstain:
        """The metrics `detect` reads, or why there are none (cheap: names only)."""
        evals = judged_eval_metrics(run)
        train = sorted({t for m in evals if (t := train_partner(run, m)) is not None})
        return scope_or_abstain([*train, *evals], "no eval loss metric")

    def detect(self, run: Run, params: OverfittingParams) -> list[Finding]:
        """One finding per loss-like eval metric that overfits or got much worse, each
        judged against its own train counterpart (`train_partner`)."""
        findings = []
        for metric in judged_eval_metrics(run):
            partner = train_partner(run, metric)
            train = (partner, run.metrics[partner]) if partner is not None else None
            with np.errstate(all="ignore"):  # huge logged values may overflow: harmless
                finding = _check(run, metric, train, params)
            if finding is not None:
                findings.append(finding)
        return findings


def _rise(x: FloatArray, y: FloatArray, params: OverfittingParams) -> Rise | None:
    """The rise an eval loss made from its minimum, if it is consistent and not falling
    again; None otherwise."""
    n, p = int(y.size), params
    width = smoothing_width(n, params.smoothing_fraction)  # 1 (raw values) below 7
    smooth = stats.rolling_median(y, width, center=True)
    k = int(np.argmin(smooth))
    after = y[k + 1 :]
    if after.size < params.min_points_after_min:
        return None
    min_level = float(smooth[k])
    level = abs(min_level) if min_level != 0 else stats.level_scale(y)
    sigma = curve_noise(y)  # the whole curve's: after the minimum alone, small by chance
    rising_every_time = bool(np.all(np.diff(y[k:]) > 0))
    if n < params.min_eval_points:
        return None  # the short-run rule's (`_short_rise`)
    # Rising at every evaluation after the minimum: no noise to shed, the end is the last
    # value, once the run is too long to be chance (k exchangeable noisy values come out
    # strictly increasing with probability 1/k!, under `trend_alpha` from k = 4). Otherwise
    # the median of the later half of the post-minimum evaluations.
    recent = after[after.size // 2 :] if after.size >= 4 else after
    if rising_every_time and 1.0 / math.factorial(after.size) < params.trend_alpha:
        recent = y[-1:]
    end_level = float(np.median(recent))
    rise = end_level - min_level
    # Beyond a FLAT curve's best-of-n pick and end median too, autocorrelation allowed for
    # (a wandering eval level passes a point-to-point noise test easily).
    flat = eval_jitter(y, k).flat_bound(n, width, int(recent.size), params.trend_alpha)
    if rise <= 0 or rise < max(p.min_relative_rise * level, p.noise_multiple * sigma, flat):
        return None
    if float(np.mean(after > min_level + rise / 4)) < params.min_fraction_above:
        return None
    trend = stats.trend_test(x[k:], y[k:])
    if trend is not None and trend.tau < 0 and trend.p_value < params.trend_alpha:
        return None
    return Rise(k, width, min_level, end_level, sigma, level, int(after.size), few=False)


def _check(
    run: Run, metric: str, partner: tuple[str, Series] | None, params: OverfittingParams
) -> Finding | None:
    """The finding for one eval loss: overfitting (rising while its train loss `partner`,
    (name, series), falls), a large rise whatever the train loss did, or a sustained rise
    above its best evaluation whatever the train loss did; None otherwise. An error rate
    gets step 8 only."""
    name, train = partner if partner is not None else (names.TRAIN_LOSS, None)
    if not names.is_loss_like(metric):
        return eval_stall.no_generalisation(run, NAME, metric, train, name)
    x, y = stats.finite_xy(run.metrics[metric].steps, run.metrics[metric].values)
    if y.size < 3:
        return None
    shape = _rise(x, y, params)
    if shape is None and y.size < params.short_run_evals:
        shape = short_rise(
            y,
            min_after=params.min_points_after_min,
            min_rise=params.min_relative_rise,
            few_points_rise=params.few_points_rise,
            alpha=params.trend_alpha,
        )
    if shape is not None:
        trend = train_trend(train, x, shape.k, params.trend_alpha, name)
        large = shape.level > 0 and shape.rise >= params.large_rise * shape.level
        if trend.falls or large:
            return _rise_finding(run, metric, x, y, shape, trend, params.trend_alpha)
    if y.size >= params.min_eval_points:
        sustained = sustained_rise(
            y,
            fraction=params.sustained_rise,
            evals=params.sustained_evals,
            alpha=params.trend_alpha,
            smoothing_fraction=params.smoothing_fraction,
        )
        if sustained is not None:
            trend = train_trend(train, x, sustained.k, params.trend_alpha, name)
            if not trend.blew_up():
                title, message, evidence = sustained_text(metric, x, y, sustained, trend)
                onset = int(x[onset_index(y, sustained.k, sustained.width)])
                return _finding(run, metric, x, y, title, message, "", onset, evidence, trend)
    # At least `short_run_evals` (8) judged: the least `stats.trend_test` judges.
    p = params
    drift = trend_rise(
        x, y, p.short_run_evals, p.trend_alpha, p.min_relative_rise, p.smoothing_fraction
    )
    if drift is not None:
        trend = train_trend(train, x, drift.k, params.trend_alpha, name)
        floor = params.min_relative_rise if trend.falls else params.sustained_rise
        if drift.rise >= floor * drift.level and not trend.blew_up():
            title, message, evidence = trend_text(metric, x, drift, trend)
            onset = int(x[onset_index(y, drift.k, drift.width)])
            return _finding(run, metric, x, y, title, message, "", onset, evidence, trend)
    return eval_stall.no_generalisation(run, NAME, metric, train, name)  # step 8


def _rise_finding(
    run: Run,
    metric: str,
    x: FloatArray,
    y: FloatArray,
    shape: Rise,
    trend: TrainTrend,
    alpha: float,
) -> Finding:
    """The finding of a rise from the smoothed minimum (`_rise`, `_short_rise`)."""
    k = shape.k
    onset = onset_index(y, k, shape.width)
    rise_pct = percent(shape.rise, shape.level)
    sigma = shape.sigma
    if shape.few:
        noise_text = "too few evaluations to estimate their jitter"
    elif sigma > 0:
        noise_text = f"{shape.rise / sigma:.1f}x its point-to-point noise {sigma:.3g}"
    else:
        noise_text = "its evaluations show no jitter"
    smoothed = " (smoothed)" if shape.width > 1 else ""
    last = shape.few or shape.end_level == float(y[-1])
    end_word = "the last evaluation" if last else "the median of the later evaluations"
    message = (
        f"{metric} bottomed out at {shape.min_level:.4g}{smoothed} at step {int(x[k])} and "
        f"has since risen to {shape.end_level:.4g} ({end_word}; +{rise_pct:.0f}%, "
        f"{noise_text}) over {shape.after} evaluations"
    )
    levels = f"({trend.start.text}, then {trend.end.text})" if trend.start and trend.end else ""
    if trend.falls:
        message += f", while {trend.name} kept falling {levels}."
        title = f"{metric} rising from its minimum while {trend.name} falls (overfitting)"
    else:
        did = f"did not keep falling {levels}" if levels else "is not logged"
        message += (
            f", while {trend.name} {did}: not the textbook overfitting signature, but "
            f"the model the run ends with is much worse on the eval set than its best."
        )
        title = degrading_title(metric, trend, rise_pct)
    extra = short_run_text(y.size, shape, alpha) if shape.few else ""
    evidence = {
        "min_step": int(x[k]),
        "min_level": shape.min_level,
        "end_level": shape.end_level,
        "rise": shape.rise,
        "rise_percent": rise_pct,
        "eval_noise": sigma,
        "evaluations": int(y.size),
        "evaluations_after_min": shape.after,
    }
    return _finding(run, metric, x, y, title, message, extra, int(x[onset]), evidence, trend)


def _finding(
    run: Run,
    metric: str,
    x: FloatArray,
    y: FloatArray,
    title: str,
    message: str,
    extra: str,
    onset: int,
    evidence: Mapping[str, float | int | str],
    trend: TrainTrend,
) -> Finding:
    """The finding both rules share: best evaluation, another metric's best, fixes."""
    best = int(np.argmin(y))
    best_step, best_value = int(x[best]), float(y[best])
    message += f" The best evaluation was {best_value:.4g} at step {best_step}." + extra
    said, best_fixes = other_best_texts(run, metric, best_step)
    message += said
    keep = keep_best_fix(run, metric, best_step, best_value) + best_fixes
    change = trend.change
    return Finding(
        detector=NAME,
        title=title,
        severity=Severity.WARNING,
        metric=metric,
        step_start=onset,
        step_end=int(x[-1]),
        message=message,
        evidence={
            "best_step": best_step,
            "best_value": best_value,
            **evidence,
            "train_metric": trend.name,
            "train_falling": "yes" if trend.falls else "no",
            "train_start_level": change.start_level if change else math.nan,
            "train_end_level": change.end_level if change else math.nan,
            "train_trend_tau": change.tau if change else math.nan,
            "train_trend_p": change.p_value if change else math.nan,
        },
        fixes=(
            keep,
            f"Stop earlier: early stopping on {metric} with a patience of a few evaluations",
            "Regularise: weight decay (0.01-0.1), dropout, data augmentation, label smoothing",
            "Train on more data or use a smaller model",
        ),
    )


DETECTOR = OverfittingDetector()
