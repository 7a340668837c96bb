"""divergence: non-finite losses or gradients, and a loss drifting upward for good.

A subpackage because its cases share nothing but the detector: `nonfinite` groups
NaN/Inf episodes into incidents and tells an fp16 overflow skip from a blow-up;
`metric_nonfinite` finds another metric (Dice, F1, ...) turning NaN/Inf, and
`metric_range` an accuracy-like metric outside [0, 1] (both a broken metric); `rise`
tests a loss for a sustained rise (to the end of the log, or one that came back). This
module runs them and turns a component loss's rise into a trade-off warning; `params`
holds the id and parameters every part reads.
"""

from __future__ import annotations

import dataclasses
import math

from trainspotter.detectors import loss_scale, stats
from trainspotter.detectors.base import Detector, Reads
from trainspotter.detectors.divergence.metric_nonfinite import (
    fold_into_loss_incidents,
    metric_breaks,
    metric_finding,
    watched,
)
from trainspotter.detectors.divergence.metric_range import out_of_range, range_finding
from trainspotter.detectors.divergence.nonfinite import (
    Episode,
    incidents,
    is_gradient,
    nonfinite_finding,
)
from trainspotter.detectors.divergence.params import NAME, DivergenceParams
from trainspotter.detectors.divergence.rise import (
    drift_finding,
    tail_rise,
    transient_finding,
    transient_rises,
)
from trainspotter.model import Finding, FloatArray, Run, Series, Severity
from trainspotter.names import EVAL_LOSS, adversarial_losses, is_eval, is_loss_like, rl_losses

__all__ = ["DETECTOR", "NAME", "DivergenceDetector", "DivergenceParams"]


class DivergenceDetector(
    Detector,
    name=NAME,
    params=DivergenceParams,
    causal_rank=4,
    reads=Reads(
        lambda n: is_loss_like(n) or is_gradient(n) or watched(n),
        "no loss, gradient-norm or model-quality metric",
    ),
    summary="NaN/Inf in a loss or gradient (error; lone fp16 skips: info), NaN/Inf in another "
    "metric or an accuracy-like metric outside [0, 1] (warning), or a rising loss.",
):
    """Finds a run that blew up: non-finite values in a loss or gradient metric, and a loss
    that keeps rising.

    **What it finds.**
    - A non-finite **loss** (train or eval): *error*. One finding per incident, naming the
      first non-finite step and the last finite value before it; a loss that climbed before
      it turned non-finite is dated from the climb's onset.
    - A non-finite **gradient** with the loss finite: *error* only when it persists. An
      isolated one is what a dynamic loss scaler does under fp16 mixed precision: the
      gradients overflow, the optimiser step is skipped, the scale is halved and training
      goes on (Hugging Face's Trainer logs that step's grad_norm as NaN and leaves the LR
      unchanged). That is designed behaviour, so it is *info*; it becomes a *warning* when
      skips are frequent (the scaler keeps overflowing: a sign of activations near the fp16
      range).
    - A non-finite value in **another metric** (Dice, F1, accuracy, perplexity, the LR;
      train or eval) after it had been finite: *warning*, never an error (training may be
      fine: a metric undefined on some inputs is common, usually a 0/0 on an empty mask or
      an absent class, or it is a blow-up on some inputs that the loss hides). One finding
      per metric, about its first non-finite stretch: its steps, how many of the logged
      points there are non-finite (or, for an evaluation written between NaN placeholder
      rows, how many scheduled evaluations are missing), whether it is finite again after
      it, whether the losses of the same side (eval for an eval metric) stayed finite over
      those steps, and the metric's later stretches. A stretch that overlaps a loss
      incident is named in the loss's finding instead; it never moves that finding's start
      or restart step.
    - An **accuracy-like metric outside its possible range** (an F1 of 1.09, an accuracy
      below 0; train or eval): *warning*. No model scores that: the metric is computed
      wrongly (a mean of per-batch values divided by the number of full batches while the
      partial last batch is summed too, a micro/macro mix-up, scores from logits with no
      sigmoid), and every comparison of checkpoints by it is unreliable. One finding per
      metric, quoting the value farthest outside the range at its step and how many of
      its logged points are out of range.
    - A loss *rising to the end* of the log (error), or *a climb that came back* (warning).
      A component loss (one term of a multi-term loss) rising to the end while the total
      (`train/loss`, or a `mean_loss`/`total_loss`-like name) is not is a trade-off
      between terms: a warning, said so. Restart advice never names a checkpoint before
      the first logged step.

    **Algorithm.**
    *Non-finite values.* Every loss-like metric (`names.is_loss_like`) and gradient metric
    (`grad_norm`, or a name containing "grad") is scanned for NaN/+-Inf. Runs of
    non-finite points within `merge_gap` finite points of each other are one episode
    (`stats.episodes`), and episodes of different metrics that overlap in steps are one
    finding: a loss that is NaN from step 1 to the end, with its gradient NaN too, is one
    finding, not hundreds. A non-finite gradient (loss finite) is an error when it lasts
    more than `max_skip_points` consecutive logged points, or up to the end of the log;
    otherwise a skip, a warning when skips hit more than `frequent_skip_fraction` of the
    logged gradient points.

    *Non-finite metrics* (`metric_nonfinite`). Every other metric is scanned the same way,
    except `epoch`, timing, throughput and resource metrics (`names.is_timing`, by whole
    name words: time, runtime, timestamp, elapsed, fps, speed, throughput, flos, memory,
    "per second"/"/s" rates...) and metrics NaN by design (an explained variance), from its
    first finite value on: the leading run of non-finite points before it is "not computed
    yet" and ignored. Each stretch (`merge_gap` as above) that holds at least
    `metric_min_nonfinite_points` consecutive non-finite points counts. When the metric is
    finite at 3+ points and never at two consecutive ones, the logger writes NaN for "not
    computed at this log" between evaluations: a NaN strictly between two evaluations is a
    placeholder, and what counts is missing evaluations, with the median step interval
    between evaluations as the schedule: a gap between two evaluations of k+1 intervals
    (rounded) misses k, the log running on k whole intervals after the last evaluation
    misses k; `metric_min_nonfinite_points` missed in a row make a stretch. A stretch that
    overlaps a loss incident (`nonfinite.Episode` ranges) joins it; the others are the
    metric's own. The losses are judged over the stretch's own steps.

    *Out-of-range metrics* (`metric_range`). Every metric named like a rate of right
    answers (`names.is_rate`, whole name words: acc, accuracy, f1, precision, recall, iou,
    miou, Keras's `mean_io_u`, dice, jaccard, auc), not a loss, timing metric, nor a name
    with a word that makes it unbounded (a difference, ratio, log-odds or count: gain,
    delta, diff, change, ratio, logit, log, count, sum, ...), nor a setting or quantity
    that borrows a rate word (a word such as steps, grad, accum, bits, threshold, reward,
    noise, x, y after Lightning's step/epoch suffixes are dropped: `grad_acc_steps`,
    `noise_precision`), on its finite points. Its scale is read from the series itself: a
    fraction, range [0, 1], when no value is above `metric_range.PERCENT_EVIDENCE` (2); a
    percentage, range [0, 100], when one is (or when one is above 1 and its train/eval
    twin, the same name after the side prefix and step/epoch suffixes, is a percentage by
    that rule; no other metric of the run counts). A value below 0 or above the top by
    more than `metric_range.ROUND_OFF` (1e-5) of the range is out of range. A series
    above 1 but never above 2 with no percentage twin reads two ways, a fraction gone
    wrong or a percentage below 2%: still a warning (the bug reading corrupts every
    checkpoint comparison by the metric), but its title and message name both readings
    and state neither as fact. Point counts in the message are of all logged points.

    *Sustained rises.* Per train loss (eval losses only when the run has no train loss: an
    eval loss rising while train loss falls is overfitting, the overfitting detector's
    job), on its finite points (at least `drift_min_points`, else abstain), in log10 space
    when the loss is positive (a blow-up is exponential, a straight line in log space, and
    "10% up" is one fixed distance there), linear otherwise:
    - *Rising to the end* (error). Smooth the curve (`stats.smooth_curve`: block medians,
      then a centred rolling median over 5% of the points) and find its minimum; the
      stretch from there to the end (at least `drift_min_tail_points` points and
      `drift_min_tail_fraction` of the span) must pass a Mann-Kendall trend test with an
      autocorrelation correction (`stats.trend_test`: rank-based, so one outlier or a
      heavy tail cannot make a trend; corrected, so autocorrelated minibatch noise does
      not look significant) at p < `drift_alpha`, or have a Kendall tau of at least
      `monotone_tau` over at least `monotone_min_points` points (see `rise._rising`). Effect
      size, never the p-value alone: the Theil-Sen rise over the stretch must be at least
      `drift_min_rise` of the level and `drift_noise_multiple` point-to-point noise sigmas
      (`stats.noise_scale`), the smoothed end must still be that far above the minimum,
      and the second half of the stretch must not be falling significantly (a loss that
      rose and is coming back down is not diverging). The finding starts where the
      smoothed loss first stands that far above its minimum, and names the lowest
      checkpoint to go back to. The size it reports is the observed one (smoothed end over
      smoothed minimum), not the Theil-Sen slope times the span (which overstates a climb
      that levels off).
    - *A climb that came back* (warning). The smoothed loss rises to at least
      `transient_factor` its lowest level so far, and `transient_noise_multiple`
      smoothing errors above it (`stats.smoothing_error`), then comes back; the climb from
      the minimum to the peak is a rank trend at p < `transient_alpha`. The smoothing
      window sheds anything shorter than half of it, so this is a climb that held, not a
      one-step jump (that is the spikes detector's). A climb that starts with the LR
      jumping back up after it had decayed (a warm restart, a cyclic schedule) is expected
      and not reported. The climb must also be large in absolute terms (`loss_scale`): its
      smoothed peak undoes at least `min_progress_share` of the progress the loss had made
      (from its highest earlier 5-point median down to the climb's minimum), so a loss at
      1e-8 wandering to 1e-4 in a run that started at 0.4 is not a divergence. "Came
      back" is said of the loss; the run is said to have recovered only when `eval/loss`
      came back to within 10% of its best before the climb, else the message says what
      the eval loss did (its best before, its lowest and last after).
    - *Before a NaN*: when a loss ends non-finite, the climb before it (the same test as
      for a rise to the end, on the finite points) moves the start of the NaN finding back
      to the climb's onset, and the restart advice with it (a checkpoint between the onset
      and the first NaN already holds a blown-up model).

    Cost: one pass for NaNs, O(n) decimation, and trend tests on <= 400 points.

    **Defaults and why.**
    - `max_skip_points` 16: a scaler starting at 2^16 halves at most 16 times before it
      reaches 1, so a calibration burst at the start is at most that long.
      `frequent_skip_fraction` 0.1: overflow skips on more than a tenth of the logged
      gradient points lose many updates. `merge_gap` 3: non-finite points a few finite
      points apart are one incident. `metric_min_nonfinite_points` 2 (consecutive): one
      NaN that is finite again at the next point is one empty batch (or one empty eval
      set) and says little, however many such isolated points a stretch holds; a metric
      non-finite at two logged points in a row (two epoch means, two evaluations) keeps
      failing.
    - `metric_range.PERCENT_EVIDENCE` 2: the averaging bugs an out-of-range rate comes
      from inflate a fraction by n / (n - 1) batches, 2 at most, so a series up to 2 is
      a fraction gone wrong more often than a percentage that never reached 2% (the
      warning names both readings); one above 2 (and at most 100) is a percentage.
      `metric_range.ROUND_OFF` 1e-5: a mean of float32 ones can be 1.0000001, which is
      round-off.
    - `drift_alpha` 0.01 and `transient_alpha` 0.01: a strict level, and never a verdict
      alone: the effect-size tests below must pass too.
    - `monotone_tau` 0.6 over `monotone_min_points` 20: the autocorrelation correction in
      `stats.trend_test` measures autocorrelation around a straight line, so a smooth,
      curved climb (exponential, or up-and-over) reads as strongly autocorrelated and the
      corrected p-value loses its power exactly when the climb is cleanest. Noise does not
      put 80% of pairs of points in rising order (tau 0.6) over 20 points; on fewer, the
      minimum the climb starts from is itself a noise dip often enough to fake order.
    - `drift_min_rise` 0.1 (10% of the level) and `drift_noise_multiple` 3: a rise a user
      would act on, and clear of the curve's own noise.
    - `transient_factor` 2 (2x the lowest level so far) and `transient_noise_multiple` 6:
      the lowest point of a noisy smoothed curve sits a few smoothing errors low and its
      highest a few high, so noise alone spans about 5.
    - `min_progress_share` 0.1: a practitioner reads the loss on a linear plot of the
      whole run; a climb under a tenth of the height the curve has come down is a wiggle.
    - `drift_min_points` 20, `drift_min_tail_points` 10, `drift_min_tail_fraction` 0.1:
      below these a trend test on the loss (or on the stretch after its minimum) is not
      attempted. A jump at the last few logged points is no sustained rise (10 points after
      the minimum at least): the spikes detector's end-of-log rule reports it.

    **False-positive modes.** A deliberate rise: a curriculum or data-mixture change that
    makes later batches harder; a run that ends in the middle of a warm-restart cycle whose
    loss has not yet come down (the falling-second-half guard covers the common case);
    adversarial and reinforcement-learning losses, which need not decrease (a GAN's player
    losses, `names.adversarial_losses`, and an RL update's policy, value, entropy and total
    losses in a run that logs episode outcomes, `names.rl_losses`, get no rise verdict, only
    the non-finite check: SB3's `entropy_loss` is minus the policy's entropy and rises
    towards 0 as the policy sharpens; an RL run that logs no rollout or episode metric and
    no reward beside a policy, value or entropy loss, or a loss of an RL run named for no
    such term, is judged like any other); a loss
    logged as a cumulative or running average over something that grows. Non-finite values
    that a logger writes for "not computed at this step" (instead of leaving the cell
    empty) look like NaNs: for a loss always; for another metric only when some of its
    finite points are consecutive (an eval metric finite at two adjacent rows, NaN
    between its other evaluations, is read point by point and its placeholder rows as
    breaks), or when its evaluation interval changes for good (a gap of 2.5 median
    intervals or more reads as two missed evaluations). The readers leave an empty cell
    (CSV, Lightning, W&B exports) or an absent key (JSON/JSONL, trainer_state.json) out of
    the metric, and Keras's `NA` is not a number: those are never read as NaN.
    Non-finite metrics, by design: a metric non-finite from its first logged point (never
    computed, or not yet) is not reported, nor isolated NaNs that are finite again at the
    next point (one batch with an empty mask), however many (a per-batch metric NaN on
    every third batch is silent; its epoch mean, NaN at consecutive epochs, is not); a
    timing or throughput metric at +Inf (a first step timed as 0 s: samples/second =
    n / 0) and an explained variance (Stable-Baselines3's is NaN whenever a rollout's
    returns have no variance) are not read at all. A metric whose 0/0 is legitimate and
    documented (a per-class recall for a class absent from the eval set) is reported: the
    practitioner should know the number is not a score. A metric that stops being
    evaluated while the log goes on (evaluation switched off) reads as missing
    evaluations.
    Out-of-range metrics: a metric named like a rate that is not bounded and whose other
    name words do not say so (`accuracy_improvement` is excluded, `acc_vs_baseline` or a
    per-epoch count of right answers logged as `acc` is not) is reported when it leaves
    [0, 1]; a log-odds AUC is excluded only when its name says `logit`/`log`. A percentage
    that never exceeds 2% (a model near chance on 50+ classes logged in percent) is
    reported when it passes 1%, unless its train/eval twin is above 2, as a warning that
    names both readings (a bug, or a percentage below 2%); conversely a fraction summed
    over batches (values 3, 7, ...) is read as a percentage and missed until it passes
    100.

    **Example.** `examples/divergence/trainer_state.json`: an error from step 304, where
    train/loss started climbing after the LR jumped at step 300, to +Inf at step 380.
    `examples/missing_warmup/trainer_state.json`: a warning at steps 215-465, a climb that
    came back. `examples/lightning_dice_nan/lightning_logs/version_0/metrics.csv`: a
    warning from step 239, where train_dice turned NaN (a blank tile predicted blank is
    0/0) and stayed so at all 14 epoch ends to step 499 while train/loss stayed finite,
    and one from step 259 for val_dice.
    `examples/lightning_f1_partial_batch/lightning_logs/version_0/metrics.csv`: a warning
    about val_f1, 1.234 at step 191 and above 1 at all 20 evaluations (steps 15-319: the
    epoch mean of per-batch F1s divided by the 4 full batches while the partial fifth is
    summed too), and one about train_f1 (1.051 at step 255, above 1 from step 47); silent
    on its twin `examples/lightning_f1_partial_batch_healthy/` (F1 from the epoch's
    counts). Silent on
    `examples/healthy/trainer_state.json`, and on the GAN of
    `examples/lightning_gan_healthy/` whose d_loss rises from 0.84 to 1.32 (medians of steps
    80-159 and 1920-1999) while its generator learns; its twin `examples/lightning_gan_nan/`
    (d_loss +Inf from step 103) is an error. Silent on the PPO run
    `examples/sb3_ppo_cartpole/progress.csv`, whose train/entropy_loss rises from -0.6407 to
    -0.4523 (medians of steps 512-2816 and 47872-50176) while rollout/ep_rew_mean goes from
    33.82 to 363.5 (medians of steps 256-2560 and 47872-50176).
    """

    def detect(self, run: Run, params: DivergenceParams) -> list[Finding]:
        """Non-finite episodes (one finding per incident) and sustained rises of losses."""
        episodes: list[Episode] = []
        for name, series in run.metrics.items():
            if is_loss_like(name) or is_gradient(name):
                mask = ~series.finite
                episodes.extend(
                    Episode(name, a, b, series)
                    for a, b in stats.episodes(mask, max_gap=params.merge_gap)
                )
        ends_nonfinite = {e.metric for e in episodes if e.to_end}
        # A loss that climbed before turning non-finite: the NaN finding starts at the climb.
        lead_in = {
            name: rise
            for name in ends_nonfinite
            if is_loss_like(name)
            and (rise := tail_rise(*_finite(run.metrics[name]), params)) is not None
        }
        groups = incidents(episodes)
        own_stretches = [
            alone
            for name, series in run.metrics.items()
            if watched(name)
            and (alone := fold_into_loss_incidents(metric_breaks(name, series, params), groups))
        ]
        findings = [nonfinite_finding(run, group, params, lead_in) for group in groups]
        findings.extend(metric_finding(run, stretches) for stretches in own_stretches)
        findings.extend(range_finding(found) for found in out_of_range(run))
        has_train_loss = any(is_loss_like(n) and not is_eval(n) for n in run.metrics)
        drifts: dict[str, Finding] = {}
        # A GAN's player losses and an RL update's losses need not fall.
        players = adversarial_losses(run.metrics) | rl_losses(run.metrics)
        for name, series in run.metrics.items():
            if not is_loss_like(name) or (is_eval(name) and has_train_loss) or name in players:
                continue
            x, y = _finite(series)
            if y.size < params.drift_min_points:
                continue
            tail = None if name in ends_nonfinite else tail_rise(x, y, params)
            if tail is not None:
                drifts[name] = drift_finding(name, tail, run)
            before = tail.min_step if tail is not None else math.inf
            findings.extend(
                transient_finding(name, rise, run)
                for rise in transient_rises(x, y, run, params)
                if rise.end_step < before
            )
        findings.extend(_component_drifts_as_warnings(run, drifts))
        return findings


def _finite(series: Series) -> tuple[FloatArray, FloatArray]:
    return stats.finite_xy(series.steps, series.values)


def _component_drifts_as_warnings(run: Run, drifts: dict[str, Finding]) -> list[Finding]:
    """A component loss (e.g. one term of a physics-informed or multi-task loss) that rises
    while the run's total `train/loss` does not is a trade-off between terms, not a blow-up:
    a warning, said so. Everything else stays an error."""
    total = loss_scale.total_loss(run)
    if total is None or total in drifts:
        return list(drifts.values())
    out = []
    for name, finding in drifts.items():
        if name in (total, EVAL_LOSS) or is_eval(name):
            out.append(finding)
            continue
        out.append(
            dataclasses.replace(
                finding,
                severity=Severity.WARNING,
                title=f"{name} is drifting upward since step {finding.step_start}",
                message=finding.message
                + f" {total} is not rising: this term is being traded off against the "
                "others (check the loss weights) rather than the whole run diverging.",
                fixes=(
                    f"Rebalance the loss weights: raise the weight of {name} (or lower the "
                    "others) if this term matters.",
                    *finding.fixes[1:],
                ),
            )
        )
    return out


DETECTOR = DivergenceDetector()
