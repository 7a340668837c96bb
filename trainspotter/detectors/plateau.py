"""plateau: a training loss that stopped improving while far from converged.

One module over ~500 lines on purpose: the flat-tail, stall, not-learning and converged
verdicts are one decision over one smoothed curve and its trend test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import eval_stall, stats, stuck
from trainspotter.detectors.base import Abstain, Detector, Scope, fmt, scope_or_abstain
from trainspotter.detectors.eval_noise import is_quality_metric
from trainspotter.model import Evidence, Finding, FloatArray, Run, Severity
from trainspotter.names import EVAL_LOSS, LR, TRAIN_LOSS, is_eval, is_loss_like

NAME = "plateau"

SMOOTH_FRACTION = 0.1
"""The smoothing window, as a fraction of the points: wide enough to shed minibatch noise."""

MONOTONE_TAU = 0.6
"""A Kendall tau at or below -0.6 (80% of pairs in falling order) is a falling curve even
when the autocorrelation-corrected p-value is not small (as `stats.Change.falling`)."""

EVAL_SETTLED_FRACTION = 0.25
"""A converged run "could have stopped" only when the eval loss's minimum comes before the
flat stretch or within this first fraction of it (otherwise the eval loss was still
improving)."""


@dataclass(frozen=True)
class PlateauParams:
    """Parameters of the plateau detector (defaults explained in `PlateauDetector`)."""

    min_points: int = 12
    """Abstain on a loss with fewer finite points than this."""
    flat_tolerance: float = 0.1
    """"Flat": the loss improves by no more than this fraction of its total improvement."""
    min_flat_fraction: float = 0.25
    """Report a flat tail that covers at least this fraction of the run (else: nothing)."""
    stall_flat_fraction: float = 0.5
    """A stall far from convergence must have been flat for this fraction of the run..."""
    far_level_fraction: float = 0.75
    """...at a level of at least this fraction of the starting loss."""
    not_learning_drop: float = 0.1
    """A loss that improved by less than this fraction of its starting level never learned
    (unless it fell by a material, significant trend: the next two)."""
    min_learning_effect: float = 0.05
    """A fall under this fraction of the starting level is not learning, however
    significant its trend (85.093 -> 85.029 over 1,000 epochs is 0.08%)..."""
    min_learning_noise: float = 1.0
    """...and so is a fall smaller than this many sigmas of the point-to-point noise (a
    drift hidden inside the minibatch scatter)."""
    frozen_tolerance: float = 1e-4
    """A loss whose last points all stay within this fraction of its last value has stopped
    changing (constant to 4 significant digits: far below any minibatch noise)..."""
    min_frozen_points: int = 10
    """...over at least this many points and `min_flat_fraction` of the run..."""
    frozen_floor_fraction: float = 0.01
    """...at a level above this fraction of its starting level (below it, a memorised or
    converged loss near 0, not a collapse)."""
    lr_zero_fraction: float = stats.LR_ZERO_FRACTION
    """An LR below this fraction of its peak is ~0."""
    lr_early_fraction: float = 0.3
    """LR ~0 with at least this fraction of the run still to go is "too early"."""
    lr_annealed_fraction: float = 0.1
    """An LR below this fraction of its peak when the loss went flat was being annealed."""
    alpha: float = 0.05
    """Significance level of the "still falling" trend test on the flat stretch."""
    min_constant_points: int = 3
    """A loss or eval metric that repeats one exact value over at least this many points
    is stuck (a dead model or a metric not computed from the model)..."""
    min_constant_fraction: float = 0.5
    """...and, for a loss, over at least this fraction of its points (other eval metrics:
    all of them)."""
    constant_tolerance: float = 1e-6
    """"Exact": within this fraction of the value (float32 round-off, not a change)."""


@dataclass(frozen=True)
class _Plateau:
    start_step: int
    flat_fraction: float
    start_level: float
    flat_level: float
    improvement: float
    best_level: float
    """The lowest smoothed level anywhere in the run."""
    still_falling: bool


class PlateauDetector(
    Detector,
    name=NAME,
    params=PlateauParams,
    causal_rank=6,
    whole_run=True,
    summary="A loss that stopped improving far from convergence (warning) or converged (info).",
):
    """Finds a training loss that stopped improving while far from converged.

    **What it finds.** At most one finding per watched loss, its flat tail judged: *not
    learning*, *LR decayed to ~0 too early* or *stalled* (warnings), otherwise *converged*
    (info). The curve is the run's `train/loss` (or, without it, each other
    non-eval loss; or, without any, each eval loss). Component losses next to a
    `train/loss` are left alone: a regulariser that settles is not a stalled run.

    **Algorithm.**
    1. Smooth (`stats.smooth_curve`: block medians, centred rolling median over 10% of
       the points) so one batch or spike does not decide anything, in log10 space when
       the loss is positive: a loss still going from 0.2 to 0.02 is improving tenfold,
       however flat that looks next to a start at 2.5. Start level = highest smoothed
       value in the first 10% of the points (a warmup bump counts); flat level = median
       of the last 10%; improvement = start - flat (in log space: the ratio).
    2. The flat tail starts at the first point after which the smoothed loss never again
       exceeds the flat level by more than `flat_tolerance` (10%) of the improvement (or
       twice the smoothed curve's residual wiggle, `stats.smoothing_error`, whichever is
       larger): "from here on, less than a tenth of the total gain was still to come". A
       reverse cumulative max makes this O(m). Its share of the logged span is the flat
       fraction.
    3. A flat tail shorter than `min_flat_fraction` (25%) of the run is not reported.
    4. Far from converged, the cause, and the severity:
       - *Not learning* (warning): never got `not_learning_drop` (10%) below its starting
         level anywhere in the run, and no *material* falling trend over the whole log,
         and no significant rising trend (that is the divergence detector's). A falling
         trend is the same Mann-Kendall test as the stall verdict (p < `alpha`, or a
         near-monotone fall, tau <= -0.6, because the autocorrelation correction loses
         power on smooth curves: a loss falling 0.00208 -> 0.00184 at every epoch is
         learning slowly, not "not learning"). Material is its effect size, the fall
         from the start level to the lowest smoothed level, on two scales: at least
         `min_learning_effect` (5%) of the starting level, and at least
         `min_learning_noise` (1) sigma of the point-to-point noise (`stats.noise_scale`).
         Significance only says the fall is not chance; with hundreds of smooth points a
         fall of 0.08% (85.093 -> 85.029 over 1,000 epochs: an LR far too small for the
         loss's scale) is as significant as a real one. The message quotes the raw first
         and last values and, for a tiny trend, the fall against both scales; when the log
         starts after step 0 (an epoch aggregate, a resumed run) it says the early drop is
         not in the log.
       - *LR decayed to ~0 too early* (warning): the LR (if logged) fell below
         `lr_zero_fraction` (1%) of its peak with at least `lr_early_fraction` (30%) of
         the run left, and the loss has been flat since about then. This is the classic
         cause (a scheduler sized for fewer steps than the run) and the message says so.
       - *Collapsed to a constant* (warning): after its drop, the loss's last
         `min_frozen_points` (10) or more points, over at least `min_flat_fraction` (25%)
         of the run, all stay within `frozen_tolerance` (0.01%) of its last value, a value
         above `frozen_floor_fraction` (1%) of the starting level and shown with 3 or more
         significant digits, while the LR (if logged) was not annealed (at least
         `lr_annealed_fraction` of its peak when the freeze began). Minibatch noise moves a
         training loss by percents, a full-batch loss still descending moves it in its
         3rd-4th digit; a loss that holds 4-7 digits for a quarter of the run comes from a
         model that stopped changing: all units dead, or an output that collapsed to a
         constant (the mean of the targets: MSE equal to their variance; the class
         frequencies). It is judged before "stuck" (exact repeats, step 5) for a loss
         that fell first, and its fix says to compare the level with the loss of a
         constant prediction.
       - *Stalled* (warning): flat for at least `stall_flat_fraction` (50%) of the run, at
         a level still at least `far_level_fraction` (75%) of where it started, with no
         significant downward trend left (Mann-Kendall, `stats.trend_test`, p <
         `alpha`; with under 8 flat points the whole log's trend decides, a stall is not
         claimed on a handful of points while the log as a whole falls), while the LR
         (if logged) was still above `lr_annealed_fraction` (10%) of its peak when the
         loss went flat.
       - Otherwise *converged* (info): the flat end of the run ("nearly flat, still
         falling slowly" when the flat stretch still has a significant downward trend);
         when the LR was annealed on purpose (cosine/linear/step down to the end), the
         message says the plateau is that schedule's doing. The flat tail of a healthy
         cosine run is at most this. It suggests stopping early only when `eval/loss` (if
         logged) stopped improving too (its minimum before the flat stretch or in its first
         `EVAL_SETTLED_FRACTION`, 25%), and then names the best evaluation's step. It never
         says "nothing is wrong": it sees one loss, and the same report may warn about
         another metric.
    5. *Stuck* (warning, `stuck.py`, before all of the above and on 3 points, not 12): a
       watched loss or an eval quality metric (`eval_noise.is_quality_metric`) whose last
       `min_constant_points` (3) or more points, and at least `min_constant_fraction` (50%)
       of its points, repeat one value exactly (within `constant_tolerance`, 1e-6 of it:
       float32 round-off). The value must show at least 3 significant digits as logged
       (0.72414, 0.4874342; not 0.0, 1.0, 0.95 or a loss rounded to 0.0001, which repeat by
       rounding or saturation), except an accuracy-like metric at exactly 0 at every
       point: not one example was ever right by it (`lightning_majority_class`: a classifier
       that never predicts the minority class has val_f1 0.0 at all 30 evaluations).
       An accuracy-like metric must repeat over all its points or at a value worse than
       its best (an accuracy that settled at its best converged).
       A loss that never changes is a dead model (zero gradients, LR 0, a stale logged
       value); an eval metric that never moves did not measure a changing model (the
       majority-class share). A large effect needs few points: 3 exact repeats of a
       7-digit value do not happen by chance, and the message says how many points it
       rests on.
    6. *Eval never improved* (warning, `eval_stall.py`, whose docstring gives the rule and
       its false-positive modes): an eval quality metric with no improving trend and no
       evaluation materially better than its first, while the train loss did not fall
       5%; only at a cross-entropy's chance level (ln C), or when the train loss, logged
       from the first evaluation on, is flat too and not already reported here.
    "Far from converged" is therefore defined by the curve itself (it kept three quarters
    of its starting loss, or never lost 10% of it) or by a cause that stops learning (the LR at
    ~0 long before the end): the detector cannot know the best achievable loss.

    **Defaults and why.** 10% of the improvement is what an exponential approach has left
    after 2.3 time constants: the loss is "done" by the curve's own scale, and a long
    creep that adds a few percent (a physics-informed loss crawling from 0.321 to 0.317
    over 85% of its run) still counts as flat. 25% of the run flat is a quarter of the
    compute spent without progress, worth an info line; 50% flat at 75% of the starting
    level for a warning keeps slow, healthy convergence out (noisy synthetic curves with
    floors up to 60% of the start: 1 warning in 500 runs). 1% of the peak LR and 30% of
    the run left match the lr_schedule detector's "~0 long before the end" (a step schedule's
    last tenfold drop, or a cosine tail, stays out). 10% for "not learning": minibatch
    noise of a flat loss is rarely smaller than that in start/end medians. 5% of the level
    for a material fall: half that band, so a slow but steady learner (a LoRA fine-tune
    falling 3.26 -> ~2.97, 9%, AUDIT #4; an autoencoder 0.00208 -> 0.00184, 11%) stays
    learning, while a fall of 1-2% over a whole run is not; one noise sigma because a
    fall smaller than one point's scatter is invisible on a plot of the points. 0.01% for
    frozen: 4 significant digits, 100x below the ~1% jitter of the quietest minibatch
    losses and 10x below a float32 loss still moving in its 3rd-4th digit; 10 points so a
    handful of round-off repeats is not enough (exact repeats have their own rule).
    Abstains below `min_points` (12) points (the stuck check: below 3).

    **False-positive modes.** A pretrained model fine-tuned on easy data converges within
    the first part of the run and then stays flat well above zero: "stalled" by this
    definition (the message states the numbers so you can judge; silence it in the config
    if it is expected). A loss whose floor is high by nature (noisy labels, a very hard
    task, a contrastive loss with many negatives) has the same shape. A log that starts
    mid-run (resumed from a checkpoint) has no early drop to compare with and can look
    like "not learning" (the message then says the log starts after step 0). A fine-tune
    of a pretrained model on data close to its pre-training can fall under 5% over a
    short run and be called not learning (its floor is near its start; the message gives
    the numbers). Collapsed: a full-batch run that truly reached a minimum above 0 (a
    convex model on noisy targets), or a run whose LR was annealed to ~0 without the LR
    being logged, freezes the same way. Stuck: a
    metric computed on a tiny eval set by a model that has truly converged can repeat one
    value (only a value worse than its best, or over the whole log, is reported); a logger
    that re-logs a cached value between real evaluations looks stuck. An accuracy-like
    metric at 0 throughout can be true of a hard task early on (exact match of generated
    text in a short run): the warning is still true of the data, and says what 0 means.

    **Example.** `examples/plateau/trainer_state.json`: a warning from step 100, where a
    step schedule meant for a longer run dropped the LR to ~0 (the lr_schedule finding at
    the same step). On `examples/healthy/trainer_state.json` only info: converged, flat
    since step 491. Stuck: keras/002 in ../shared/wild (loss 0.4874342 and val_loss
    0.1613598 at all 5 epochs) and csv/004 (val_acc 0.72414 at all 31 epochs). Not
    learning on a tiny but significant fall: `examples/lightning_lr_too_small/` (29065 ->
    28986 over 150 epochs, 0.27%). Collapsed: `examples/lightning_collapse_to_mean/`
    (every unit of the last hidden layer dead from step 9, the loss at the targets'
    variance 0.0575488 from step 134).
    """

    def scope(self, run: Run, params: PlateauParams) -> Scope | Abstain:
        """The metrics `detect` reads, or why there are none (cheap: names only)."""
        quality = filter(is_quality_metric, run.metrics)
        return scope_or_abstain([*_watched_losses(run), *quality], "no loss or evaluation metric")

    def detect(self, run: Run, params: PlateauParams) -> list[Finding]:
        """At most one finding per watched loss: the run's flat tail, judged."""
        findings: list[Finding] = []
        watched = _watched_losses(run)
        for name in [*watched, *(m for m in sorted(run.metrics) if m not in watched)]:
            if name not in watched and not is_quality_metric(name):
                continue
            x, y = stats.finite_xy(run.metrics[name].steps, run.metrics[name].values)
            judged = _judge(run, name, params) if name in watched else None
            if judged is not None and "frozen_since_step" in judged.evidence:
                # Fell, then froze (exactly or nearly): a collapse says more than "stuck".
                findings.append(judged)
                continue
            finding = stuck.stuck_finding(
                NAME,
                name,
                x,
                y,
                min_points=params.min_constant_points,
                min_fraction=params.min_constant_fraction,
                tolerance=params.constant_tolerance,
            )
            if finding is None:
                finding = judged
            if finding is not None:
                findings.append(finding)
        # An eval metric that never improved on its first evaluation (eval_stall.py).
        reported = {f.metric for f in findings}
        loud = any(f.metric in watched and f.severity >= Severity.WARNING for f in findings)
        return findings + eval_stall.not_learning_findings(run, NAME, reported, loud)


def _watched_losses(run: Run) -> list[str]:
    if TRAIN_LOSS in run.metrics:
        return [TRAIN_LOSS]
    losses = [n for n in run.metrics if is_loss_like(n)]
    train = [n for n in losses if not is_eval(n)]
    return train or losses


def _units(value: float, in_log: bool) -> float:
    if not in_log:
        return value
    try:
        return float(10.0**value)
    except OverflowError:  # a loss near the float limit (1.8e308): its log rounds above
        return math.inf


def _find_plateau(x: FloatArray, y: FloatArray, params: PlateauParams) -> _Plateau | None:
    # In log space for positive losses: a loss still falling from 0.2 to 0.02 is improving
    # (tenfold), however flat that looks next to a start at 2.5.
    t, in_log = stats.log_if_positive(y)
    xs, ts = stats.smooth_curve(x, t, window_fraction=SMOOTH_FRACTION)
    m = ts.size
    if m < 3:
        return None
    head = max(1, m // 10)
    # The raw first points too: a wide smoothing window would blur a drop that happens
    # within the first few percent of the run.
    start_t = max(float(np.max(ts[:head])), float(np.median(t[:5])))
    flat_t = float(np.median(ts[-head:]))
    gain = start_t - flat_t
    tolerance = max(
        params.flat_tolerance * max(gain, 0.0), 2.0 * stats.smoothing_error(t, SMOOTH_FRACTION)
    )
    suffix_max = np.maximum.accumulate(ts[::-1])[::-1]
    within = suffix_max - flat_t <= tolerance
    # No flat stretch at all (the smoothed end itself is off the final level): length 0.
    start_step = int(xs[int(np.argmax(within))]) if bool(within[-1]) else int(x[-1])
    flat = x >= start_step
    flat_trend = stats.trend_test(x[flat], y[flat])
    if flat_trend is not None:
        still_falling = flat_trend.z < 0 and flat_trend.p_value < params.alpha
    else:  # too few flat points to test (under 8): the whole log's trend decides
        still_falling = _falling(stats.trend_test(x, y), params.alpha)
    start_level, flat_level = _units(start_t, in_log), _units(flat_t, in_log)
    return _Plateau(
        start_step=start_step,
        flat_fraction=1.0 - stats.span_fraction(x, start_step),
        start_level=start_level,
        flat_level=flat_level,
        improvement=start_level - flat_level,
        best_level=_units(float(np.min(ts)), in_log),
        still_falling=still_falling,
    )


@dataclass(frozen=True)
class _Context:
    """What the verdicts need about one loss and the run's LR."""

    name: str
    first: int
    last: int
    plateau: _Plateau
    start_abs: float
    lr_x: FloatArray
    lr_y: FloatArray
    eval_x: FloatArray
    """The eval loss next to a train loss (empty when there is none)."""
    eval_y: FloatArray
    per_epoch: bool
    """The log's step is an epoch count (each point aggregates a whole epoch)."""

    @property
    def has_lr(self) -> bool:
        return self.lr_y.size >= 2 and float(self.lr_y.max()) > 0

    @property
    def peak_lr(self) -> float:
        return float(self.lr_y.max()) if self.has_lr else float("nan")

    def lr_at(self, step: float) -> float:
        """The last logged LR at or before `step` (the first one before any is logged)."""
        i = int(np.searchsorted(self.lr_x, step, side="right")) - 1
        return float(self.lr_y[max(i, 0)])

    @property
    def flat_text(self) -> str:
        p = self.plateau
        return (
            f"{self.name} has been flat at about {fmt(p.flat_level)} since step "
            f"{p.start_step}, the last {fmt(100 * p.flat_fraction)}% of the run (steps "
            f"{p.start_step}-{self.last})"
        )


_Verdict = tuple[Severity, str, str, tuple[str, ...], int]
"""severity, title, message, fixes, first step of the finding."""


def _judge(run: Run, name: str, params: PlateauParams) -> Finding | None:
    series = run.metrics[name]
    x, y = stats.finite_xy(series.steps, series.values)
    if y.size < params.min_points:
        return None
    plateau = _find_plateau(x, y, params)
    if plateau is None:
        return None
    lr = run.metrics.get(LR)
    lr_x, lr_y = stats.finite_xy(lr.steps, lr.values) if lr is not None else (x[:0], y[:0])
    val = run.metrics.get(EVAL_LOSS) if not is_eval(name) else None
    eval_x, eval_y = stats.finite_xy(val.steps, val.values) if val is not None else (x[:0], y[:0])
    ctx = _Context(
        name=name,
        first=int(x[0]),
        last=int(x[-1]),
        plateau=plateau,
        start_abs=abs(plateau.start_level) or stats.level_scale(y),
        lr_x=lr_x,
        lr_y=lr_y,
        eval_x=eval_x,
        eval_y=eval_y,
        per_epoch=str(run.meta.get("step_column", "")).lower() == "epoch",
    )
    evidence: Evidence = {
        "start_level": plateau.start_level,
        "flat_level": plateau.flat_level,
        "flat_since_step": plateau.start_step,
        "flat_fraction_of_run": round(plateau.flat_fraction, 4),
        "improvement_fraction": plateau.improvement / ctx.start_abs if ctx.start_abs else 0.0,
        "still_falling_slightly": "yes" if plateau.still_falling else "no",
    }
    if ctx.has_lr:
        evidence["peak_lr"] = ctx.peak_lr
        evidence["lr_when_flat"] = ctx.lr_at(plateau.start_step)
        evidence["lr_at_end"] = float(lr_y[-1])
    verdict: _Verdict | None
    drop = plateau.start_level - plateau.best_level
    never_learned = drop < params.not_learning_drop * ctx.start_abs
    whole = stats.trend_test(x, y)
    rising = whole is not None and whole.z > 0 and whole.p_value < params.alpha
    small_change = plateau.improvement < params.not_learning_drop * ctx.start_abs
    falling = _falling(whole, params.alpha)
    # Effect size: a significant fall still has to be material, against the loss's level
    # and against its point-to-point noise.
    noise = stats.noise_scale(y)
    material = drop >= params.min_learning_effect * ctx.start_abs and (
        drop >= params.min_learning_noise * noise
    )
    if small_change and never_learned and not (falling and material):
        evidence["drop_fraction_of_start"] = drop / ctx.start_abs if ctx.start_abs else 0.0
        evidence["noise_sigma"] = noise
        # Rising: divergence's.
        verdict = None if rising else _not_learning(ctx, params, x, y, falling, noise)
    elif plateau.flat_fraction < params.min_flat_fraction or plateau.improvement <= 0:
        verdict = None  # too short to matter, or ended above its start (divergence's)
    else:
        verdict = (
            _lr_died(ctx, params, evidence)
            or _collapsed(ctx, params, x, y, evidence)
            or _stalled(ctx, params)
            or _converged(ctx, params, evidence)
        )
    if verdict is None:
        return None
    severity, title, message, fixes, start = verdict
    return Finding(
        detector=NAME,
        title=title,
        severity=severity,
        metric=name,
        step_start=start,
        step_end=ctx.last,
        message=message,
        evidence=evidence,
        fixes=fixes,
    )


def _falling(trend: stats.Trend | None, alpha: float) -> bool:
    """A significant downward trend, or a near-monotone one: the autocorrelation correction
    blunts the p-value of a curve so smooth that its detrended ranks look correlated."""
    if trend is None or trend.tau >= 0:
        return False
    return trend.p_value < alpha or trend.tau <= -MONOTONE_TAU


def _change_words(first: float, last: float) -> str:
    """Says "ended 3.7% higher" or "ended 4.2% lower": the sign lives in the word."""
    if first == 0:
        return f"ended at {fmt(last)}"
    pct = 100 * (last - first) / abs(first)
    return f"ended {abs(pct):.1f}% {'higher' if pct > 0 else 'lower'}"


def _not_learning(
    ctx: _Context,
    params: PlateauParams,
    x: FloatArray,
    y: FloatArray,
    falling: bool,
    noise: float,
) -> _Verdict:
    p = ctx.plateau
    message = (
        f"{ctx.name} was {fmt(float(y[0]))} at step {ctx.first} and {fmt(float(y[-1]))} at "
        f"step {ctx.last} (smoothed: {fmt(p.start_level)} -> {fmt(p.flat_level)}, "
        f"{_change_words(p.start_level, p.flat_level)})"
    )
    if falling:
        drop = p.start_level - p.best_level
        message += (
            f". It does trend down, but by too little to be learning: its lowest smoothed "
            f"level {fmt(p.best_level)} is {fmt(100 * drop / ctx.start_abs)}% below where it "
            f"started (learning needs {fmt(100 * params.min_learning_effect)}%"
        )
        if params.min_learning_noise > 0 and noise > 0:
            message += (
                f" and a fall of at least {fmt(params.min_learning_noise)}x the "
                f"point-to-point noise, {fmt(noise)} here"
            )
        message += f"), over {y.size} logged points."
    else:
        message += (
            f", with no significant downward trend over its {y.size} logged points: never "
            f"{fmt(100 * params.not_learning_drop)}% below where it started."
        )
    if ctx.per_epoch:
        message += (
            " Each logged point is an epoch: the drop within the first epoch is not in this "
            f"log, so this says the loss did not improve after it (steps {ctx.first}-{ctx.last})."
        )
    elif ctx.first > 1:
        message += (
            f" The log starts at step {ctx.first}: any drop before that is not in this log, so "
            f"this says the loss did not improve over steps {ctx.first}-{ctx.last}."
        )
    if ctx.has_lr:
        message += f" The peak LR was {fmt(ctx.peak_lr)}."
    fixes = (
        "Check that the optimiser is given the model's parameters and that they require "
        "gradients (frozen layers, a detached loss, a LoRA adapter not attached).",
        "Raise the learning rate (try 3-10x) or check the warmup reaches its peak.",
        "Check that labels match inputs (a shuffled label column gives chance-level loss "
        "forever) and that inputs are normalised.",
        "Overfit a single small batch first: if even that loss does not fall, the bug is in "
        "the model or loss code.",
    )
    return (
        Severity.WARNING,
        f"{ctx.name} is not decreasing (not learning)",
        message,
        fixes,
        ctx.first,
    )


def _lr_died(ctx: _Context, params: PlateauParams, evidence: Evidence) -> _Verdict | None:
    """LR ~0 long before the end and the loss flat since about then: the classic cause."""
    if not ctx.has_lr:
        return None
    zero_step = stats.lr_zero_step(ctx.lr_x, ctx.lr_y, params.lr_zero_fraction)
    if zero_step is None:
        return None
    left = 1.0 - stats.span_fraction(np.array([ctx.first, ctx.last]), zero_step)
    slack = 0.1 * (ctx.last - ctx.first)
    if left < params.lr_early_fraction or ctx.plateau.start_step < zero_step - slack:
        return None
    evidence["lr_zero_step"] = zero_step
    message = (
        f"{ctx.flat_text}. The LR fell below {fmt(100 * params.lr_zero_fraction)}% of its "
        f"peak {fmt(ctx.peak_lr)} at step {zero_step}, with {fmt(100 * left)}% of the run "
        "still to go: the optimiser has effectively stopped, the classic cause of a stall "
        "like this."
    )
    fixes = (
        "Size the LR schedule to the run: set the scheduler's total steps "
        "(num_training_steps / T_max) to the real number of optimiser steps.",
        f"Resume from the checkpoint at step {zero_step} with the LR schedule restarted over "
        "the remaining steps.",
        "If the early end was deliberate, stop the run there: the remaining compute does not "
        "move the loss.",
    )
    title = f"{ctx.name} plateaued after the LR decayed to ~0 at step {zero_step}"
    return Severity.WARNING, title, message, fixes, ctx.plateau.start_step


def _collapsed(
    ctx: _Context, params: PlateauParams, x: FloatArray, y: FloatArray, evidence: Evidence
) -> _Verdict | None:
    """After its drop the loss froze (`stuck.frozen_tail`), with the LR (if logged) not
    annealed when it did: a collapse, not convergence."""
    frozen = stuck.frozen_tail(
        x,
        y,
        tolerance=params.frozen_tolerance,
        min_points=params.min_frozen_points,
        min_share=params.min_flat_fraction,
        floor=params.frozen_floor_fraction * ctx.start_abs,
    )
    if frozen is None or (
        ctx.has_lr and ctx.lr_at(frozen.since) < params.lr_annealed_fraction * ctx.peak_lr
    ):
        return None
    evidence.update(frozen.evidence())
    title, message, fixes = stuck.collapse_text(ctx.name, x, y, frozen, params.frozen_tolerance)
    if ctx.has_lr:
        message += (
            f" The LR was still {fmt(ctx.lr_at(frozen.since))} at step {frozen.since} (peak "
            f"{fmt(ctx.peak_lr)}): not a schedule that annealed to ~0."
        )
    return Severity.WARNING, title, message, fixes, frozen.since


def _annealing(ctx: _Context, params: PlateauParams) -> bool:
    """Was the LR already annealed (below a tenth of its peak) when the loss went flat?"""
    if not ctx.has_lr:
        return False
    return ctx.lr_at(ctx.plateau.start_step) < params.lr_annealed_fraction * ctx.peak_lr


def _annealed_run(ctx: _Context, params: PlateauParams) -> bool:
    """Was the LR annealed on purpose: falling through the flat stretch to below a tenth
    of its peak at the end (cosine, linear or step decay run to completion)?"""
    if not ctx.has_lr:
        return False
    end = float(ctx.lr_y[-1])
    return end < params.lr_annealed_fraction * ctx.peak_lr and end < ctx.lr_at(
        ctx.plateau.start_step
    )


def _stalled(ctx: _Context, params: PlateauParams) -> _Verdict | None:
    """Flat for most of the run, still near its starting level, with the LR still up."""
    p = ctx.plateau
    far = p.flat_level >= params.far_level_fraction * p.start_level
    if (
        p.flat_fraction < params.stall_flat_fraction
        or not far
        or p.still_falling
        or _annealing(ctx, params)
    ):
        return None
    message = (
        f"{ctx.flat_text}, at {fmt(100 * p.flat_level / p.start_level)}% of its starting "
        f"level {fmt(p.start_level)}, with no significant downward trend left."
    )
    if ctx.has_lr:
        lr_then = ctx.lr_at(p.start_step)
        message += (
            f" The LR was still {fmt(lr_then)} ({fmt(100 * lr_then / ctx.peak_lr)}% of its "
            "peak) when it stopped improving."
        )
    fixes = (
        "Try a higher (or, if the loss is noisy, a lower) learning rate: an LR that is too "
        "high can also keep the loss bouncing on one level.",
        "Check for dead units (ReLU activations stuck at zero) or saturated activations: "
        "lower the LR, use a better init or a leaky/GELU activation, add normalisation.",
        "Check the model's capacity and the data: labels may be too noisy for the loss to "
        "fall further.",
        f"If this is a fine-tune that converged early, stop it near step {p.start_step} "
        "(early stopping saves the rest of the compute).",
    )
    title = f"{ctx.name} stalled far from convergence since step {p.start_step}"
    return Severity.WARNING, title, message, fixes, p.start_step


def _early_stop_fix(ctx: _Context, evidence: Evidence) -> str:
    """Could the run have stopped early? Only if the eval loss (when logged) stopped
    improving: its minimum before the flat stretch or early in it. The step named is the
    best evaluation's, the checkpoint worth keeping. Never "nothing is wrong": this note
    sees only its own loss, and the same report may warn about something else."""
    p = ctx.plateau
    if ctx.eval_y.size < 3 or float(ctx.eval_x[0]) > p.start_step:
        return (
            f"If the eval metric stopped improving by step {p.start_step} too, the run could "
            f"have stopped near step {p.start_step}."
        )
    i = int(np.argmin(ctx.eval_y))
    best_step, best = int(ctx.eval_x[i]), float(ctx.eval_y[i])
    evidence["eval_loss_min"] = best
    evidence["eval_loss_min_step"] = best_step
    lowest = f"lowest {fmt(best)} at step {best_step}"
    if best_step <= p.start_step + EVAL_SETTLED_FRACTION * (ctx.last - p.start_step):
        when = "before the train loss went flat" if best_step <= p.start_step else "soon after"
        return (
            f"The eval loss ({EVAL_LOSS}) had stopped improving {when} ({lowest}): the run "
            f"could have stopped near step {best_step}, the best evaluation."
        )
    return f"The eval loss ({EVAL_LOSS}) was still improving ({lowest}): keep that checkpoint."


def _converged(ctx: _Context, params: PlateauParams, evidence: Evidence) -> _Verdict:
    p = ctx.plateau
    message = f"{ctx.flat_text}, after falling from {fmt(p.start_level)} (smoothed)."
    title = f"{ctx.name} converged: flat since step {p.start_step}"
    if p.still_falling:
        message += (
            " It is still creeping down (a significant downward trend over the flat "
            "stretch): less than a tenth of its total gain, but not finished."
        )
        title = f"{ctx.name} nearly flat since step {p.start_step}, still falling slowly"
    if _annealed_run(ctx, params):
        lr_then, lr_end = ctx.lr_at(p.start_step), float(ctx.lr_y[-1])
        message += (
            f" The LR was annealed to {fmt(lr_end)} by the end (peak {fmt(ctx.peak_lr)}, "
            f"{fmt(lr_then)} at step {p.start_step} when the loss went flat): the flat end "
            "of a deliberate schedule is convergence, not a stall."
        )
        if lr_then >= 0.5 * ctx.peak_lr:
            message += " The loss went flat while the LR was still near its peak, before the decay."
    fixes = (
        _early_stop_fix(ctx, evidence),
        "If a lower loss is expected, a larger model or more data (not more steps) is the "
        "usual next step.",
    )
    return Severity.INFO, title, message, fixes, p.start_step


DETECTOR = PlateauDetector()
