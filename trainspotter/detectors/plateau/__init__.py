"""plateau: a training loss that stopped improving while far from converged.

A subpackage of one decision over one smoothed curve: `curve` finds the flat tail and its
trend, `verdicts` words each verdict (not learning, LR died, collapsed, stalled,
converged); this module judges which one applies, and runs the stuck check (`stuck`) on
every watched loss and eval quality metric; `params` holds the id and parameters.
"""

from __future__ import annotations

import numpy as np

from trainspotter.detectors import eval_stall, stats, stuck, stuck_mode
from trainspotter.detectors.base import Abstain, Detector, Scope, scope_or_abstain
from trainspotter.detectors.eval_noise import is_quality_metric
from trainspotter.detectors.plateau.curve import Context, find_plateau, is_falling
from trainspotter.detectors.plateau.params import NAME, PlateauParams
from trainspotter.detectors.plateau.verdicts import (
    Verdict,
    collapsed,
    converged,
    lr_died,
    not_learning,
    stalled,
)
from trainspotter.model import Evidence, Finding, Run, Severity
from trainspotter.names import (
    EVAL_LOSS,
    LR,
    TRAIN_LOSS,
    adversarial_losses,
    is_eval,
    is_loss_like,
    rl_losses,
)

__all__ = ["DETECTOR", "NAME", "PlateauDetector", "PlateauParams"]


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
       - *Not learning* (warning): never got clearly `not_learning_drop` (10%) below its
         starting level anywhere in the run (its lowest smoothed level, raised by twice the
         smoothing error `stats.smoothing_error`: on a flat noisy curve the 5-point median
         of 50 per-batch losses with 18% scatter dips ~20% below the start by chance, so
         the dip must clear that wiggle as well as the 10%), and no *material* falling
         trend over the whole log,
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
         not in the log. Neither this nor *stalled* is said of a loss that goes below 0
         anywhere in the log (a policy-gradient surrogate, a WGAN critic, a negative
         ELBO): both measure progress as a distance to a floor at 0 that such a loss
         does not have.
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
       watched loss, an eval quality metric (`eval_noise.is_quality_metric`) or a
       train-side accuracy-like metric (`stuck.is_train_rate`: acc, accuracy, F1, IoU,
       Dice, precision, recall, AUC as whole words of its name) whose last
       `min_constant_points` (3) or more points, and at least `min_constant_fraction` (50%)
       of its points, repeat one value exactly (within `constant_tolerance`, 1e-6 of it:
       float32 round-off). The value must show at least 3 significant digits as logged
       (0.72414, 0.4874342; not 0.0, 1.0, 0.95 or a loss rounded to 0.0001, which repeat by
       rounding or saturation), except an accuracy-like metric at exactly 0 at every
       point: not one example was ever right by it (`lightning_majority_class`: a classifier
       that never predicts the minority class has val_f1 0.0 at all 30 evaluations), and
       one at exactly 1/k (k = 2..100, `stuck.chance_share`) at every point: the score of
       predicting one class for everything when it is 1/k of the set (0.1 on CIFAR-10);
       and the run's train loss at exactly 0 from its first point (nothing was trained;
       other loss terms at 0, a disabled auxiliary loss, keep the digit rule).
       An accuracy-like metric must repeat over all its points or at a value worse than
       its best (an accuracy that settled at its best converged).
       A loss that never changes is a dead model (zero gradients, LR 0, a stale logged
       value); an eval metric that never moves did not measure a changing model (the
       majority-class share). A large effect needs few points: 3 exact repeats of a
       7-digit value do not happen by chance, and the message says how many points it
       rests on.
       *Stuck in a band* (warning, `stuck.band_finding`): a bounded accuracy-like eval
       metric (a fraction or a percentage, higher is better) that is not exactly constant
       but stays, at all of its 8 or more points, inside a band no wider than 2% of its
       distance to its ceiling (1 or 100), at a median no higher than half the ceiling.
       The band is judged by effect size against the room the metric had to rise (token
       accuracy 0.0657-0.0667 used 0.1% of the 0.93 it could gain): a significant trend
       inside such a band (Mann-Kendall) changes nothing and the message says so; the
       band is also stated in steps of the metric's resolution (the smallest gap between
       its values, 1 / eval-set size for an accuracy), i.e. how many examples changed
       their verdict.
       *Stuck on most evaluations* (warning, `stuck_mode.py`, whose docstring gives the
       rule, its figures and its false-positive modes): such a metric at one value (to
       float32 round-off) on at least half (and 6) of its evaluations, not a constant tail,
       at the low end of what it reached (its best 2%+ of the value higher and, on an
       eval-set lattice k/n, 4+ samples higher: more than a converged model's wobble),
       while the loss falls over that stretch (predictions that did not change: the
       majority class, an all-background mask, if that is what the value is).
    6. *Eval never improved* (warning, `eval_stall.py`, whose docstring gives the rule and
       its false-positive modes): an eval quality metric with no improving trend and no
       evaluation materially better than its first, while the train loss did not fall
       5%; only at a cross-entropy's chance level (ln C), for an error rate (WER, CER,
       `err`, `error_rate`) at half its 0-1 or 0-100% scale or more at every evaluation
       (most of the output wrong throughout), or when the train loss, logged from the
       first evaluation on, is flat too and not already reported here.
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

    **False-positive modes.** A loss that is never negative in the log but is a surrogate
    not meant to fall (a PPO objective that stays positive) can still be called not
    learning when the run is not recognised as reinforcement learning (below); one that
    dips below 0 is left alone, so a real loss that went negative by a
    bug is not judged here (divergence and spikes still see it). A pretrained model
    fine-tuned on easy data converges within the first part of the run and then stays
    flat well above zero: "stalled" by this
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
    value (only a value worse than its best, or over the whole log, is reported, and not
    one that is all but 1-3 examples right of a set of 200 or fewer, as logged); a logger
    that re-logs a cached value between real evaluations looks stuck. An accuracy-like
    metric at 0 throughout can be true of a hard task early on (exact match of generated
    text in a short run): the warning is still true of the data, and says what 0 means.
    An accuracy at exactly 1/k throughout on an eval set of k examples or fewer (a debug
    set of 2) is reported although such a set cannot show much else.
    A train-side accuracy logged per step on small batches repeats lattice values (63/64);
    the near-perfect rule keeps those out, and a train accuracy at 1.0 has too few digits.
    Not learning on a noisy loss: a loss that fell a little over a short, very noisy log
    (under about 10% plus twice the smoothing error: ~20% for 50 points with 18% scatter)
    and without a significant trend is called not learning; its medians moved less than
    the points scatter, so a plot cannot show the fall either. Stuck in a band: a
    fine-tune whose first evaluation comes after it already converged, on a hard task
    (accuracy under half its ceiling) with an eval set so large that its accuracy moves by
    under 2% of the room to 1, is reported; so is a metric computed on a fixed model (a
    baseline logged under an eval name). A metric constant because it is a config value is
    an exact repeat (the exact rule's digit test keeps 0.1 or 0.95 out), never a band.
    Stuck on most evaluations: a model converged from its first evaluation whose
    predictions leave one value only upwards while its loss creeps down (0.2% of
    generated converged small-eval-set accuracies).
    A GAN's player losses (`names.adversarial_losses`) follow the opponent's skill, so only
    their fall-then-freeze collapse is judged: a GAN whose generator never learns is not
    called not learning here (`examples/lightning_gan_healthy/`: d_loss 1.437 at step 0
    and 1.335 at step 1999 while the generator learns the data, the healthy case this
    keeps silent). An RL update's losses (`names.rl_losses`: the policy, value, entropy
    and total losses of a run that logs episode outcomes) get the same treatment: their
    targets are the agent's own rollouts, so a value loss that stops falling, or an
    entropy loss that rises, is no sign of a run that stopped learning
    (`examples/sb3_ppo_cartpole/progress.csv`: train/loss was "nearly flat since step
    24832" (info) while rollout/ep_rew_mean went from 33.82 to 363.5, medians of steps
    256-2560 and 47872-50176). An RL run that logs no rollout or episode metric and no
    reward beside a policy, value or entropy loss is judged like any other.

    **Example.** `examples/plateau/trainer_state.json`: a warning from step 100, where a
    step schedule meant for a longer run dropped the LR to ~0 (the lr_schedule finding at
    the same step). On `examples/healthy/trainer_state.json` only info: converged, flat
    since step 491. Stuck: keras/002 in ../shared/wild (loss 0.4874342 and val_loss
    0.1613598 at all 5 epochs) and csv/004 (val_acc 0.72414 at all 31 epochs). Not
    learning on a tiny but significant fall: `examples/lightning_lr_too_small/` (29065 ->
    28986 over 150 epochs, 0.27%). Not learning on a short noisy per-step loss:
    `examples/lightning_noisy_not_learning/` (36 per-batch losses, 2.385 at step 49 and
    2.325 at step 1799, whose 5-point smoothed minimum dips below the start by noise).
    Stuck in a band: `examples/lightning_lm_lr_too_small/` (val_token_accuracy between
    0.0193068 and 0.0194231 at all 16 evaluations, steps 133-2152). Collapsed:
    `examples/lightning_collapse_to_mean/`
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
        players = adversarial_losses(run.metrics) | rl_losses(run.metrics)
        for name in [*watched, *(m for m in sorted(run.metrics) if m not in watched)]:
            eval_metric = is_quality_metric(name)
            if name not in watched and not eval_metric and not stuck.is_train_rate(name):
                continue
            x, y = stats.finite_xy(run.metrics[name].steps, run.metrics[name].values)
            judged = _judge(run, name, params) if name in watched else None
            if (
                judged is not None
                and name in players
                and "frozen_since_step" not in judged.evidence
            ):
                judged = None  # a GAN's or RL loss need not fall; a collapse is still one
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
            if finding is None and eval_metric and name not in watched:
                tolerance = params.constant_tolerance
                finding = stuck_mode.mode_finding(NAME, run, name, x, y, tolerance)
                finding = finding or stuck.band_finding(NAME, name, x, y)
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


def _judge(run: Run, name: str, params: PlateauParams) -> Finding | None:
    series = run.metrics[name]
    x, y = stats.finite_xy(series.steps, series.values)
    if y.size < params.min_points:
        return None
    plateau = find_plateau(x, y, params)
    if plateau is None:
        return None
    lr = run.metrics.get(LR)
    lr_x, lr_y = stats.finite_xy(lr.steps, lr.values) if lr is not None else (x[:0], y[:0])
    val = run.metrics.get(EVAL_LOSS) if not is_eval(name) else None
    eval_x, eval_y = stats.finite_xy(val.steps, val.values) if val is not None else (x[:0], y[:0])
    ctx = Context(
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
    verdict: Verdict | None
    drop = plateau.start_level - plateau.best_level
    # Never got clearly (beyond the smoothed curve's own wiggle) 10% below its start.
    clear_drop = plateau.start_level - plateau.clear_best_level
    never_learned = clear_drop < params.not_learning_drop * ctx.start_abs
    whole = stats.trend_test(x, y)
    rising = whole is not None and whole.z > 0 and whole.p_value < params.alpha
    small_change = plateau.improvement < params.not_learning_drop * ctx.start_abs
    falling = is_falling(whole, params.alpha)
    # Effect size: a significant fall still has to be material, against the loss's level
    # and against its point-to-point noise.
    noise = stats.noise_scale(y)
    material = drop >= params.min_learning_effect * ctx.start_abs and (
        drop >= params.min_learning_noise * noise
    )
    # A loss that goes below 0 (a policy-gradient surrogate, a WGAN critic, a negative
    # ELBO) has no floor at 0 to measure progress against: "not learning" and "stalled far
    # from convergence" are statements about that distance, so neither is made on it.
    signed = bool(np.min(y) < 0)
    if signed and small_change and never_learned:
        verdict = None
    elif small_change and never_learned and not (falling and material):
        evidence["drop_fraction_of_start"] = drop / ctx.start_abs if ctx.start_abs else 0.0
        evidence["noise_sigma"] = noise
        # Rising: divergence's.
        verdict = None if rising else not_learning(ctx, params, x, y, falling, noise)
    elif plateau.flat_fraction < params.min_flat_fraction or plateau.improvement <= 0:
        verdict = None  # too short to matter, or ended above its start (divergence's)
    else:
        verdict = (
            lr_died(ctx, params, evidence)
            or collapsed(ctx, params, x, y, evidence)
            or (None if signed else stalled(ctx, params))
            or converged(ctx, params, evidence)
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


DETECTOR = PlateauDetector()
