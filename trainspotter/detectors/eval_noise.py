"""eval_noise: an eval metric too jittery, for its total improvement, to rank checkpoints."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.base import Detector, Reads
from trainspotter.detectors.eval_lattice import SampleLattice, sample_lattice
from trainspotter.model import Finding, FloatArray, Run, Series, Severity

NAME = "eval_noise"

MIN_TREND_POINTS = 8
"""The judged half needs this many evaluations: the trend test's minimum, and six second
differences for the jitter (a sigma from fewer is a guess within a factor of two)."""

SIGMA_LOG_SPREAD = 1.3
"""sqrt(n) x the standard deviation of log(sigma_hat / sigma) for the second-difference
sigma of n Gaussian white-noise points (simulated, 4,000 draws for each n = 8-100: 1.27-1.32)."""

CONFIDENCE_Z = 1.645
"""One-sided 95%: the jitter used for a verdict is its lower confidence bound."""

PAIR_RESOLUTION = CONFIDENCE_Z * math.sqrt(2.0)
"""Two checkpoints evaluated once each, with jitter sigma, are ordered right at one-sided
95% only when their true values differ by this many sigma or more (2.33)."""

MONOTONE_TAU = 0.6
"""|Kendall tau| >= 0.6 (80% of pairs in order) is a trend even when the
autocorrelation-corrected p-value is not small (as `stats.Change.falling`)."""

# Eval metrics that measure model quality (what checkpoints are ranked by). Speed and
# bookkeeping metrics that readers pass through with an eval prefix (eval_runtime,
# eval_samples_per_second: `names.is_timing`; a logged learning rate) are noisy by nature
# and rank nothing. Error rates (WER, CER, `top1_err`) are `names.is_error_rate`'s.
_QUALITY = re.compile(
    r"loss|acc|f1|precision|recall|bleu|rouge|perplexity|ppl|auc|mcc|exact|match|"
    r"score|iou|io_u|dice|map|mae|mse|rmse|error|top1|top5|meteor|chrf|reward"
)
_LEARNING_RATE = re.compile(r"learning_rate")


@dataclass(frozen=True)
class EvalNoiseParams:
    """Parameters of the eval_noise detector (see its docstring for each default's reason)."""

    min_points: int = 16
    """Abstain below this many finite evaluations (eight in the judged second half)."""
    snr_threshold: float = 2.0
    """Report when the second half's improvement is below this many jitter sigmas."""
    min_relative_jitter: float = 0.01
    """Ignore jitter below this fraction of the metric's level (info from here)..."""
    warn_relative_jitter: float = 0.215
    """...and make it a warning when the jitter is this fraction of the metric's distance
    to its ideal (the loss itself; 1 - accuracy): 2.33 x 0.215 = 0.5, one evaluation per
    checkpoint then cannot tell a checkpoint from one with 1.5x its loss or error rate."""
    trend_alpha: float = 0.05
    """Stand down when the judged half has a trend significant at this level."""
    min_lattice_points: int = 8
    """An accuracy on a coarse sample lattice (`eval_lattice`) needs only this many
    evaluations (four judged): its noise floor comes from the eval set's size, not from
    the jitter of its points."""


_HIGHER_IS_BETTER = re.compile(
    r"acc|f1|precision|recall|bleu|rouge|auc|mcc|exact|match|score|iou|io_u|dice|map|meteor|chrf|"
    r"reward|top1|top5"
)
# Word and character error rates are `names.is_error_rate` (whole words: a substring "wer"
# is in "answer").
_LOWER_IS_BETTER = re.compile(r"loss|perplexity|ppl|error|mae|mse|rmse")


def higher_is_better(metric: str) -> bool | None:
    """True for an accuracy-like metric, False for a loss- or error-like one (an error rate
    by `names.is_error_rate`: WER, CER, `top1_err`), None when the name does not say (the
    lower-is-better words win: `error_rate_score` is an error)."""
    lowered = metric.lower()
    if (
        names.is_loss_like(metric)
        or names.is_error_rate(metric)
        or _LOWER_IS_BETTER.search(lowered)
    ):
        return False
    if _HIGHER_IS_BETTER.search(lowered):
        return True
    return None


# Quality metrics with a known perfect score: a fraction (<= 1) or a percentage (<= 100).
_BOUNDED = re.compile(
    r"acc|f1|precision|recall|auc|iou|io_u|dice|top1|top5|exact|match|bleu|rouge|meteor|chrf|map"
)


def floor_percent(fraction: float) -> str:
    """`fraction` as a percentage to 2 significant digits, rounded down: it is quoted as a
    lower bound ("at least 1.5%"), which rounding up (":.0%" gave "2%") made untrue."""
    value = 100.0 * fraction
    if not math.isfinite(value) or value <= 0:
        return f"{value:g}%"
    decimals = max(0, 1 - math.floor(math.log10(value)))
    scale = 10.0**decimals
    # + 1e-9: 100 * 0.29 is 28.999999999999996 in binary floating point, not under 29.
    return f"{math.floor(value * scale + 1e-9) / scale:.{decimals}f}%"


def bounded_top(metric: str, values: FloatArray) -> float | None:
    """1 or 100, the best value of a bounded higher-is-better metric (by its name) whose
    finite values all lie within [0, 1] or [0, 100]; None otherwise."""
    finite = values[np.isfinite(values)]
    if not finite.size or not higher_is_better(metric) or not _BOUNDED.search(metric.lower()):
        return None
    low, high = float(finite.min()), float(finite.max())
    return 1.0 if low >= 0 and high <= 1 else 100.0 if low >= 0 and high <= 100 else None


def error_rate_bound(metric: str, values: FloatArray) -> float | None:
    """1 or 100, the scale of an error rate (`names.is_error_rate`: 0 perfect, 1 or 100%
    every unit wrong) whose finite values all lie within [0, 1] or [0, 100]; None
    otherwise. A fraction WER above 1 (a model that inserts words) reads as a percentage
    of at most a few percent: the reading that claims nothing about a model doing badly."""
    finite = values[np.isfinite(values)]
    if not finite.size or not names.is_error_rate(metric):
        return None
    low, high = float(finite.min()), float(finite.max())
    return 1.0 if low >= 0 and high <= 1 else 100.0 if low >= 0 and high <= 100 else None


def distance_to_ideal(metric: str, values: FloatArray) -> tuple[float, str]:
    """How far the metric is from perfect, in its own units, and how that was measured:
    1 (or 100) minus the median for a bounded higher-is-better metric (the error rate is
    what tells two classifiers apart: 0.90 vs 0.95 accuracy is twice the errors); the
    level (`stats.level_scale`) for a loss, an error rate or an unbounded score."""
    top = bounded_top(metric, values)
    if top is not None:
        median = float(np.median(values[np.isfinite(values)]))
        if top - median > 0:
            return top - median, f"{top:g} minus its median {median:.3g}"
    level = stats.level_scale(values)
    return level, f"its median level {level:.3g}"


def is_quality_metric(metric: str) -> bool:
    """An eval metric that measures model quality (loss, accuracy, F1, WER, BLEU, ...)."""
    lowered = metric.lower()
    if not names.is_eval(metric) or names.is_timing(metric) or _LEARNING_RATE.search(lowered):
        return False
    return (
        names.is_loss_like(metric)
        or names.is_error_rate(metric)
        or _QUALITY.search(lowered) is not None
    )


class EvalNoiseDetector(
    Detector,
    name=NAME,
    params=EvalNoiseParams,
    causal_rank=7,
    whole_run=True,
    reads=Reads(is_quality_metric, "no evaluation metric"),
    summary="An eval metric whose jitter is large compared with its improvement.",
):
    """Finds an eval metric whose evaluation-to-evaluation jitter is large compared with
    its improvement, so checkpoints cannot be ranked by it.

    **What it finds.** For every eval metric that measures quality (`eval/loss`, and eval
    metrics named like accuracy, F1, precision/recall, WER/CER, BLEU/ROUGE, perplexity,
    AUC, MCC, exact match, score, reward, ...; runtime and throughput metrics are skipped),
    whether its jitter drowns the differences between the checkpoints a user would choose
    from. The question it answers is "can I trust the best-epoch pick?": a warning when
    one evaluation per checkpoint cannot even tell a checkpoint from one with 1.5x its loss
    (or error rate): then "the best checkpoint" by that metric is a draw from the noise,
    the eval set is too small, or evaluation is not deterministic (a fresh random subset
    each time, dropout left on). When the late checkpoints merely cannot be ranked among
    themselves but the eval resolves differences that size, they are equal within the
    jitter (the ordinary late jitter of a converged run): an info note.

    **Algorithm.** The candidates for "best checkpoint" are the evaluations of the second half
    of the run. The improvement the jitter is compared with is the one made over that
    half, not the run's total: the steep early descent dwarfs any jitter (an eval loss
    from 2.4 to 0.03 measured on 16 random examples per evaluation still "improves" by 60
    sigma) and any metric ranks it correctly, so it says nothing about the noise that
    matters when choosing among late checkpoints.
    - Stand down when that half still trends: Mann-Kendall (`stats.trend_test`) significant
      at `trend_alpha` or |tau| >= 0.6, with a fitted (Theil-Sen) change over the half of
      at least `snr_threshold` jitter sigmas: its checkpoints are ranked by the trend (an
      eval loss falling 4x while it jitters ranks fine by any metric).
    - Jitter sigma: the median absolute second difference of the second half x 1.4826 /
      sqrt(6). Second differences cancel a linear trend and most of a smooth one (first
      differences read a steep trend as jitter); a smooth curve (a deterministic eval of a
      slowly changing model) has near-zero jitter however slowly it improves; one outlier
      evaluation cannot inflate it.
    - Improvement: the difference between the medians of the two halves of the second
      half (how far the metric really moved while those checkpoints were written); medians
      shed single bad evaluations and the comparison is direction-agnostic (a loss falls,
      an accuracy rises, an overfitting eval loss rises: all are rankable signals).
    - Confidence: sigma from 8-20 evaluations is uncertain by a factor of 1.5-2, so every
      verdict uses its one-sided 95% lower bound, sigma x exp(-1.645 x 1.3 / sqrt(n)) for
      the n judged points (sqrt(n) x sd of log(sigma_hat / sigma) is 1.27-1.32 for
      Gaussian white noise, simulated for n = 8-100): a short run is called noisy only when
      even the least jitter its points allow is too large. The message gives both.
    - Signal-to-noise = improvement / that bound. Below `snr_threshold` (2) the late
      checkpoints cannot be ranked among themselves; nothing is reported when the bound is
      under `min_relative_jitter` (1%) of the metric's level (an accuracy at 0.99 wobbling
      by 0.002 misleads no one).
    - Trust in the pick: two checkpoints evaluated once each are ordered right at
      one-sided 95% only when they differ by 1.645 x sqrt(2) = 2.33 bound-sigmas (the
      resolution). The resolution is compared with the metric's distance to perfect
      (`distance_to_ideal`): the level of a loss, an error rate or an unbounded score; 1
      (or 100) minus the median for a bounded higher-is-better metric (accuracy, F1, AUC,
      ROUGE, ...: the error rate is what separates two classifiers, and an F1 of 0.875
      jittering by 0.1 is noisy however small 0.1 is next to 0.875). Warning when the
      bound is at least `warn_relative_jitter` (0.215) of that distance: the resolution is
      then half the distance or more, and the eval cannot tell a checkpoint from one with
      1.5x its loss or error. Info otherwise: the late checkpoints are equal within a
      resolution that still separates clearly different models.

    - Small eval sets (`eval_lattice`): an accuracy-type metric (accuracy, exact match,
      top-k: right answers over all eval samples) measured on n samples only takes values
      k/n. The smallest n whose lattice holds every logged value (4+ distinct values,
      float32 or six-decimal precision, n up to 2,000) is the eval set's size or a divisor
      of it. Each evaluation is then a binomial proportion with standard error
      sqrt(p(1-p)/n) about the checkpoint's true accuracy (p: the judged half's median).
      When the lattice step 1/n is at least the second-difference sigma (a median of
      second differences of values on so coarse a lattice is mostly exact zeros, so it
      understates), that standard error replaces the 95% bound above when larger, and
      the metric is judged from `min_lattice_points` (8) evaluations: the floor comes from
      the eval set's size, not from the jitter of a few points. The message names the
      lattice, n and the standard error. Not when the judged half repeats one value (a
      stuck metric is plateau's, not noise).

    Minimum sample: `min_points` = 16 evaluations, so the judged half has eight points:
    the trend test's minimum, six second differences for the jitter (from fewer, a robust
    sigma is a guess within a factor of two) and four per median. The message states the
    real count ("9 of its 17 evaluations").

    **Defaults and why.** With pure noise the two medians of three or more points differ by
    about 0.5-1 sigma, so an SNR below 2 is indistinguishable from no improvement; a
    healthy run's late evaluations are smooth (SNR in the tens). 1.5x: a checkpoint with
    half again the loss or error of another is clearly worse, the smallest difference a
    user choosing a checkpoint must be able to see; a threshold on the jitter relative to
    the metric's level alone could not separate a converged Keras val loss jittering 10%
    (ordinary) from an F1 of 0.875 jittering 0.1 on 24 samples (noise), since the F1's
    jitter is the smaller fraction of its level.

    **False-positive modes.** A run that converged early and evaluates a slightly noisy metric
    on a small fixed eval set is reported (info below 5% jitter): true, but harmless when
    every late checkpoint is equally good; a deliberately sampled eval subset (noisy by
    design, which is exactly what this reports); short runs of coarse evaluations are
    skipped below 16 points rather than guessed at; a curve that bends sharply inside the
    judged half (a cliff, a restart) inflates second differences at the bend (the median
    sheds one bend, not several). Ordinary epoch-to-epoch jitter of a short Keras run on a
    few thousand validation images (a val loss wobbling 10-20% of its level around a
    converged value) is an info note, not a warning: one evaluation still resolves a 1.5x
    difference. Runs under 16 evaluations are not judged, however wild their jitter,
    unless they are an accuracy on a coarse sample lattice (8 evaluations suffice). The
    binomial floor: the true eval set can be a multiple of the lattice's n (every count
    even by chance: unlikely over 4+ distinct values, and the standard error is then
    overstated by sqrt(2) per doubling); a fixed eval set evaluated on checkpoints that
    agree on most samples orders them better than two independent binomial draws would
    (the floor applies only where the lattice step, one sample, is at least the observed
    jitter, so a 500-sample set at 97% keeps its own jitter estimate); a mean of
    per-batch accuracies, a weighted or a rounded accuracy has no lattice and gets no
    floor (a miss, never a false alarm). The error scale makes a near-perfect accuracy
    sensitive: 0.99 jittering by 0.005 (half its error) is a warning if it does not
    improve; true, since that eval set cannot rank such models, but a user may not care.
    A loss near zero or negative uses its spread as its level (`stats.level_scale`),
    where "1.5x its loss" is approximate.

    **Example.** `examples/noisy_eval/trainer_state.json`: a warning from step 525, the
    second half of the run, where every evaluation used a fresh random 16 eval samples.
    The binomial floor: `examples/keras_eight_val_samples/training.log`, a warning from
    step 7 on val_accuracy (14 epochs validated on 8 digits: values k/8). Silent on
    `examples/healthy/trainer_state.json`.
    """

    def detect(self, run: Run, params: EvalNoiseParams) -> list[Finding]:
        """One finding per quality eval metric too noisy to rank checkpoints by."""
        findings = []
        for metric in sorted(run.metrics):
            if is_quality_metric(metric):
                with np.errstate(all="ignore"):  # huge values may overflow: harmless
                    finding = _check(metric, run.metrics[metric], params)
                if finding is not None:
                    findings.append(finding)
        return findings


def _binomial_floor(
    metric: str, y: FloatArray, late: FloatArray, sigma: float
) -> tuple[SampleLattice, float] | None:
    """The lattice of an accuracy-type metric and the binomial standard error at its late
    median, when the lattice step (one eval sample) is at least the jitter the points show:
    a robust jitter estimate of values on so coarse a lattice is mostly exact zeros. Not
    for a judged half that repeats one value: that metric did not move (stuck, not noisy)."""
    lattice = sample_lattice(metric, y)
    if lattice is None or lattice.step < sigma or np.unique(late).size < 2:
        return None
    se = lattice.standard_error(float(np.median(late)))
    return (lattice, se) if se > 0 else None


def _check(metric: str, series: Series, params: EvalNoiseParams) -> Finding | None:
    """The eval_noise finding for one metric, or None."""
    x, y = stats.finite_xy(series.steps, series.values)
    if y.size < params.min_lattice_points:
        return None
    late_x, late = x[y.size // 2 :], y[y.size // 2 :]
    sigma = stats.second_difference_sigma(late)
    floor = _binomial_floor(metric, y, late, sigma) if late.size >= 3 else None
    if floor is None and y.size < max(params.min_points, 2 * MIN_TREND_POINTS):
        return None
    # The verdict rests on the least jitter the points allow (one-sided 95% bound): from
    # 8-20 evaluations the point estimate is uncertain by a factor of about 1.5-2. A
    # coarse sample lattice puts the binomial standard error under it as a floor.
    sigma_low = sigma * math.exp(-CONFIDENCE_Z * SIGMA_LOG_SPREAD / math.sqrt(late.size))
    if floor is not None and floor[1] > sigma_low:
        sigma_low = floor[1]
    else:
        floor = None
    # A stretch that still trends (up or down) by more than its jitter ranks its
    # checkpoints by the trend itself: significant, and a fitted change of at least
    # `snr_threshold` sigma (the p-value alone is never a verdict).
    trend = stats.trend_test(late_x, late)
    if trend is not None and (trend.p_value < params.trend_alpha or abs(trend.tau) >= MONOTONE_TAU):
        fitted = abs(trend.slope) * float(late_x[-1] - late_x[0])
        if fitted >= params.snr_threshold * max(sigma, sigma_low):
            return None
    level = stats.level_scale(late)
    relative = sigma_low / level if level > 0 else float("inf")
    if sigma_low <= 0 or relative < params.min_relative_jitter:
        return None
    earlier, later = np.array_split(late, 2)
    improvement = abs(float(np.median(later)) - float(np.median(earlier)))
    snr = improvement / sigma_low
    if snr >= params.snr_threshold:
        return None
    # Can one evaluation per checkpoint tell a good checkpoint from a clearly worse one?
    # Its resolution (2.33 sigma) against the metric's distance to perfect.
    distance, distance_text = distance_to_ideal(metric, late)
    resolution = PAIR_RESOLUTION * sigma_low
    to_ideal = sigma_low / distance if distance > 0 else float("inf")
    unresolved = to_ideal >= params.warn_relative_jitter
    severity = Severity.WARNING if unresolved else Severity.INFO
    worse = "loss" if names.is_loss_like(metric) else "error"
    total = abs(float(np.median(y[-late.size // 2 :])) - float(np.median(y[: late.size // 2])))
    if floor is None:
        jitter = (
            f"jitters by about {sigma:.3g} (robust sigma of second differences; at least "
            f"{sigma_low:.3g} at 95% confidence, {floor_percent(relative)} of its median level "
            f"{level:.3g}) from one evaluation to the next"
        )
    else:
        jitter = _lattice_text(metric, floor[0], float(np.median(late)), sigma, sigma_low)
    message = (
        f"Over the second half of the run (steps {int(late_x[0])}-{int(late_x[-1])}, "
        f"{late.size} of its {y.size} evaluations) {metric} {jitter}, "
        f"while the medians of the two halves of that stretch differ by {improvement:.3g} "
        f"({snr:.1f} times that least jitter): the "
        "checkpoints of that stretch cannot be ranked by it. (Over the whole run the median "
        f"moved by {total:.3g}.) One evaluation per checkpoint resolves only differences of "
        f"{resolution:.3g} or more (2.33 x that least jitter, one-sided 95%), "
        f"{resolution / distance if distance > 0 else float('inf'):.0%} of its distance to "
        f"perfect ({distance:.3g}: {distance_text})"
    )
    if unresolved:
        message += (
            f": it cannot tell a checkpoint from one with 1.5x its {worse}, so the best "
            "checkpoint by it is largely a draw from the noise."
        )
        title = (
            f"{metric} too noisy to rank checkpoints by (cannot resolve a 1.5x difference "
            f"in {worse})"
        )
    else:
        message += (
            f": it does tell apart checkpoints whose {worse} differs by more than that, and "
            "the late ones are equal within it: the ordinary jitter of a converged run "
            "(pick any of them, or by a smoothed curve)."
        )
        title = (
            f"{metric}: late checkpoints equal within its jitter "
            f"(at least {floor_percent(relative)} of its level)"
        )
    return Finding(
        detector=NAME,
        title=title,
        severity=severity,
        metric=metric,
        step_start=int(late_x[0]),
        step_end=int(late_x[-1]),
        message=message,
        evidence={
            "jitter_sigma": sigma,
            "jitter_sigma_lower_bound": sigma_low,
            "relative_jitter": relative,
            "late_improvement": improvement,
            "signal_to_noise": snr,
            "total_change": total,
            "evaluations": int(y.size),
            "resolution": resolution,
            "distance_to_ideal": distance,
            "jitter_to_distance": to_ideal,
            "eval_samples_from_lattice": floor[0].samples if floor is not None else 0,
        },
        fixes=(
            "Evaluate on a larger eval set: the jitter shrinks as 1/sqrt(number of examples)",
            "Make evaluation deterministic: model.eval() (no dropout), one fixed eval subset "
            "in a fixed order, no sampling",
            "Pick checkpoints by a smoothed eval curve (median of 3-5 evaluations) or average "
            "the weights of the last checkpoints",
        ),
    )


def _lattice_text(
    metric: str, lattice: SampleLattice, median: float, sigma: float, se: float
) -> str:
    """The binomial floor in words: the lattice seen, the eval size, the standard error."""
    return (
        f"takes only values on a lattice of step {lattice.step:.4g} ({lattice.distinct} "
        f"distinct values, every one a multiple of 1/{lattice.samples}"
        f"{' %' if lattice.scale == 100 else ''}): an eval set of about {lattice.samples} "
        f"samples (or a multiple of {lattice.samples}). One evaluation of {metric} at its "
        f"late median {median:.3g} then has a binomial standard error of {se:.3g} "
        f"(sqrt(p(1-p)/{lattice.samples})) about the checkpoint's true value, more than "
        f"the {sigma:.3g} its evaluations' robust sigma of second differences shows on so "
        "coarse a lattice"
    )


DETECTOR = EvalNoiseDetector()
