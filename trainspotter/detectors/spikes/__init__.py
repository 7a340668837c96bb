"""spikes: a sudden jump in a loss-type metric, and whether the curve came back from it.

A subpackage of one pipeline over one `Curve`: `scoring` scores each point against its
trailing window, forms episodes and judges recovery and absolute size; `message` turns an
episode into a finding; `neighbours` judges the points too early for a trailing window
(one point an order of magnitude above both neighbours); `end` judges the log's last points,
which nothing after them can show coming back; this module runs them per metric and folds a
total loss's terms into the total's findings; `params` holds the id and parameters every
part reads.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from trainspotter.detectors import loss_scale, stats
from trainspotter.detectors.base import Abstain, Detector, Reads, Scope, scope_or_abstain
from trainspotter.detectors.spikes.end import end_episode, settle_end, train_blow_up
from trainspotter.detectors.spikes.message import spike_finding
from trainspotter.detectors.spikes.neighbours import neighbour_spikes, unjudged_points
from trainspotter.detectors.spikes.params import NAME, SpikesParams
from trainspotter.detectors.spikes.scoring import (
    Curve,
    flagged_points,
    follows_lr_rise,
    is_level_shift,
    judge_episode,
    large_enough,
    merge_unrecovered,
    spike_scores,
    startup_points,
    worth_showing,
)
from trainspotter.model import Finding, Run, Series
from trainspotter.names import LR, TRAIN_LOSS, adversarial_losses, is_eval, is_loss_like, rl_losses

__all__ = ["DETECTOR", "NAME", "SpikesDetector", "SpikesParams", "startup_points"]


class SpikesDetector(
    Detector,
    name=NAME,
    params=SpikesParams,
    causal_rank=3,
    reads=Reads(is_loss_like, "no loss metric"),
    summary="Sudden jumps in a loss (train or eval): warning, error when it does not recover.",
):
    """Finds sudden jumps in any loss-like metric (train or eval), recovered or not.

    **What it finds.** One finding per spike episode: a *warning* when the curve came
    back to its pre-spike level (however late), an *error* when it never did (the run was
    damaged: it stays well above where it was before the jump for at least
    `recovery_points` points after it). An episode with fewer than `recovery_points`
    points after it (the end of the log) is a warning that says how many there were. A
    jump at the very end of the log (the last logged point, or the last few, all up) is
    judged by its own rule (step 7): a warning that says it is the last logged point and
    nothing after it can show a recovery, that the final checkpoint may be worse than an
    earlier one (naming the lowest earlier evaluation for an eval loss), never an error on
    that evidence alone; a last point no further up than twice the curve's own earlier
    rises is info (one hard batch looks the same). A
    spike judged against fewer than a full window of earlier points (early in the log)
    says so and is one level less severe. When a run logs a total loss and its terms
    (`train/loss` or `mean_loss` beside `*_loss` columns), one incident is one finding on
    the total, naming the terms that spiked with it; a term spiking while the total does
    not is the optimiser trading terms off and is not reported. A train-loss spike that
    came back while `eval/loss` did not come back to its best says what eval did.
    A point too early for a noise baseline (an eval loss 25x its neighbours at its second
    evaluation, back at the third) is a spike when it is an order of magnitude above both
    neighbours: a warning that says it rests on 2 neighbouring points.

    A reinforcement-learning update's losses (`names.rl_losses`: the policy, value,
    entropy and total losses of a run that logs episode outcomes) are not checked: their
    targets are the agent's own rollouts, so a value loss jumps whenever a rollout brings
    returns the value head did not predict, and comes back; lowering the LR is not the fix.

    **Algorithm.** Per loss-like metric (`names.is_loss_like`), on its finite points:

    1. Log10 space when every value is positive (`stats.log_if_positive`), the usual case
       for losses. Loss noise is roughly multiplicative (a minibatch's loss varies in
       proportion to the loss), so in log space one noise scale fits the whole decaying
       curve, a jump reads as a ratio, and 1e-4..1e4 need no special case. Always-log
       rather than only-when-spanning-decades: over a short window the two agree to first
       order, and log keeps the ratio test exact. Curves with zero or negative values stay
       linear, with jumps measured against the curve's robust level (`stats.level_scale`).
    2. For each point, its trailing window (the `window` points before it:
       `window_fraction` of the points clamped to `min_window`..`max_window`; counted in
       points so it adapts to the logging interval): the pre-spike level is the median of
       the last 5 points (current, where a whole-window median lags a curve that is still
       falling, and robust to one earlier outlier); the noise is the MAD of the window's first
       differences / sqrt 2 (immune to the trend, unlike a MAD about the median, which on
       a fast-falling eval curve would count the fall as noise). A modified z-score =
       jump / noise, with the noise floored at the logging resolution (a loss rounded to
       4 decimals cannot show noise below 1e-4: 0.0003 -> 0.0008 is rounding, not a
       spike).
    3. A point is a spike when z >= `z_threshold` AND the jump is at least `min_ratio`
       times the pre-spike level (linear: (min_ratio - 1) x the level). The ratio test is
       what keeps a very smooth curve (tiny noise) from turning a harmless wiggle into an
       enormous z. A burst counts too when no point of it reaches `z_threshold`: at least
       `sustained_points` consecutive points that each reach `sustained_z` (and
       `min_ratio`) are spikes (`scoring.flagged_points`). A run that holds a point at
       `z_threshold` adds nothing: only that point is flagged, so its episode is dated
       from that point, not from the run's first point. On a very noisy loss (per-batch
       values of a small batch spread over a decade, where the noise sigma is large) a
       bad shard of several batches lifts every one of them 4-6 sigmas, none 8.
       Such a run-rule episode (no point at `z_threshold`) must be a burst, which ends:
       it is dropped when the curve does not come back near its old level (the recovery
       of step 4 for runs) within `recovery_points` points of its raised points' end
       (`scoring.is_level_shift`: a lasting or slowly relaxing change of level, a harder
       data mixture, a new reward regime the critic catches up with, whose lasting rise
       is divergence's to judge), and when the LR rose more than 10% (`LR_RISE`) within
       the `RECENT_POINTS` (5) logged points before its start (`scoring.follows_lr_rise`:
       a warm restart or a warmup; the loss answering the schedule). Both are dropped
       before step 4's merging, so a shift does not swallow the spikes after it. A run
       rule episode is therefore never an error.
    3b. Absolute size (`loss_scale`): relative tests alone call 1e-8 -> 6e-4 a huge spike.
       An episode must also undo at least `min_progress_share` of the progress the curve
       had made, in raw units: peak - level >= share x (reference - level), where the
       reference is the highest 5-point median the curve held before. And once the curve
       sits below `near_zero_fraction` of that reference (it has memorised: most batches
       give ~0 and one hard example gives a jump of orders of magnitude), an episode that
       came back within `recovery_points` points and stayed below the reference is the
       loss's own heavy tail: not reported (one whose recovery the log cannot show is
       info, at the end of the log too).
       Both tests measure against the highest level the curve held before, and a
       start-up transient must not set it: the first logs of a run with a bad initial
       scale (unnormalised targets, a huge first output) can sit 6-8 decades above
       everything after them, which makes any later incident look small and the working
       level look "memorised" (wild3 lightning/012: 8e7-1e8 at steps 0-4, a working level
       of ~10, then a burst to 2.3e6 at steps 25-30). The transient is either the leading
       points up to the largest fall between two consecutive logs among the first
       max(5, 10%) of the points, when that fall is at least `startup_fall` (10x) in one
       log, or a steep stretch: the leading points at least `startup_fall` x above the
       log's median (its working level), when they fall on average at least 2x per log
       (`STARTUP_RATE`) down to the first point under that bound
       (`lightning_burst_after_startup`: 2.6e5 -> 85 in 8 logs of 1.2-5.5x each). The
       reference is then taken after it (`startup_points`). A loss that falls gradually,
       however far (a run that memorises from 2.3 to 1e-8 over hundreds of logs, a few
       percent per log), has neither and keeps its whole descent as the progress a spike
       must undo. (The level and the noise never came from the start: they are the points
       just before the spike.)
    4. Flagged points within `merge_gap` points of each other form one episode
       (`stats.episodes`); it lasts while the points after it stay above the recovery
       threshold (below), when the curve then comes back under it: a burst's later points,
       judged against windows that already hold the burst, are not flagged on their own,
       and without this the peak and the "came back" step would fall inside the burst.
       Recovery: the first run of `recovery_points` consecutive points
       after the episode whose median is back within the threshold of the pre-spike level
       (`scoring.recovery_threshold`): for a point at `z_threshold`, below `min_ratio` x
       it, and within half the z threshold in noise sigmas; for a run-rule episode, half
       of its flag level: within sqrt(`min_ratio`) x the level or `sustained_z` / 2 noise
       sigmas, whichever is wider (coming back under the flag level itself is no return:
       a loss that stays 1.6x up on a noisy curve is under 4 sigmas). Never back: not
       recovered (error). Jumps flagged before the curve came back are the same incident
       (a blow-up that keeps climbing) and are folded into the first finding. The message
       always gives the median it came back to relative to the level before; above
       sqrt(`min_ratio`) x (back only by the threshold's wider bound) it says "came down
       to 1.6x the level before", not "came back" or "recovered".
    5. Severity: recovered is a warning, except a single logged point that is back at the
       very next one: one hard batch, the tail of minibatch noise, reported as info (with
       Student-t noise of 3-10 degrees of freedom such points reach 1.5-3x and robust z
       8-40 on healthy runs: tests/detectors/test_healthy_property.py), unless the level
       after it stays above sqrt(`min_ratio`) x the level before on a curve quiet enough
       that this is beyond the noise (the jump moved the run: a warning). Not recovered
       is an error; a rough baseline (fewer than a window of points) lowers either one
       level. A run-rule episode the log ends on before recovery can be judged is info (a
       burst and the start of a lasting shift look alike so far).

    6. Too early for a baseline (`neighbours`). Where steps 2-5 cannot judge a point (the
       first `min_baseline` points of an eval metric; every point of a metric with fewer
       than `min_points`), one logged point is a spike when it is at least
       `neighbour_ratio` x both the point before and the point after it, those two
       neighbours are positive and agree within `neighbour_agreement` x, and the jump is
       large in absolute terms: it undoes at least `min_progress_share` of the progress
       from the reference level down to the neighbours, and, when the neighbours sit below
       `near_zero_fraction` of the reference, it climbs above the reference itself. The
       reference is the highest value the metric logged before it and, for an eval metric,
       the highest 5-point median of `train/loss` up to its step (the same loss on the same
       model: it says how high the loss started when the eval curve begins after the fast
       fall; a train loss that blows up later says nothing about the point). A
       warning, never an error: it rests on 2 neighbouring points, and it came back at the
       next. A train loss's first `min_baseline` logs of a longer log are left alone (its
       fast, noisy start); a single per-batch point is the trailing-window rule's job.
    7. The end of the log (`end`). The last logged point has nothing after it, so step 4
       cannot judge it and step 5 cannot tell one hard batch (back at the next point: info)
       from the start of a blow-up; a metric with fewer than `min_points` points (a
       10-epoch Keras log) is not scored by steps 2-5 at all. The last k logged points
       (k = 1 up to `recovery_points` - 1, the longest tail that passes; at least
       `min_baseline` points before it; not when the metric ends non-finite, which is
       step 4's "never came back") are a jump the log ends on when each of them stands at
       least `min_ratio` x and `end_z` noise sigmas above the median of the 5 points before
       the tail (noise as in step 2, from up to `window` points before it), when the lowest
       of them is at least `end_history_multiple` x as far above that level (log units for a
       positive loss) as any earlier point of the curve rose above the median of the 5
       points before it (`end.earlier_rise`: the reach of the curve's own noise and of the
       incidents it came back from), and when it is large in absolute terms (step 3b). A
       warning (info on a memorised curve, step 3b), whatever the baseline's length: one
       point or a few are all the evidence, so never an error, and the message says so,
       quotes the point before it, the largest earlier rise, and, for an eval loss, the
       lowest earlier evaluation (the checkpoint the final one may be worse than). When
       the logged LR rose more than 10% within the 5 logged points before the tail
       (`scoring.lr_rise_before`, the test of step 3's run rule), the message names the
       rise (from which LR at which step to which at which step); when the LR went back
       to no more than 1.1x an LR logged before the rise (a warm restart, a cycle), the
       finding is info: the loss answering the schedule, not a blow-up. A rise above every
       earlier LR (a schedule bug that multiplies it) stays a warning that says so. A
       GAN's player losses (`names.adversarial_losses`) are not judged by this step: each
       follows the other player's skill, so a last epoch 1.5x up on a short per-epoch log
       is the game as often as a blow-up, and the lower bar of `end_z` would call it one
       (5 of 200 per-epoch random walks of log sd 0.15 did; steps 2-5 still warn on 3 of
       them, "did not recover" at epoch 8 against 8 points, lowered a level for the rough
       baseline). It replaces the episodes of steps 2-5 inside its tail. A step-2 spike
       that is the last logged point alone and fails this rule (its jump is within twice
       the curve's largest earlier rise) is info: "as likely one hard batch".

    Cost: exact statistics for a point need its own window; on series of more than 2,000
    points `stats.trailing_block_baseline` (O(n)) screens candidates first, and only those
    are scored exactly. A million points take ~0.2 s.

    **Defaults and why.**
    - `z_threshold` 8: Iglewicz and Hoaglin's 3.5 labels outliers in one sample; over a
      log of 10^5 points, heavy-tailed minibatch noise crosses 3.5 many times and 6 now
      and then (an epoch-level physics-informed loss reached z 6.2 with no incident in a
      real log). A real spike (a corrupt batch, a bad update) is z 10 and far beyond.
    - `min_ratio` 1.5: a loss 50% above its level within one logging interval; the
      routine bumps at epoch boundaries of multi-epoch fine-tunes (5-35% in real logs)
      stay below it.
    - `sustained_z` 4 over `sustained_points` 3: with Student-t noise of 3 degrees of
      freedom one point passes 4 robust sigmas about 1% of the time; three in a row, each
      also 1.5x above the median of the 5 before it, is a shift of the level, not noise
      (0 of 300 seeds in tests/detectors/test_healthy_property.py). Two points are not
      enough: a hard batch and its echo in a running mean make pairs.
    - `window_fraction` 0.05 (5% of the points), `min_window` 20 .. `max_window` 100:
      enough differences for a stable noise estimate, short enough to follow the curve.
    - `min_points` 12, `min_baseline` 8: fewer points give no usable noise estimate (the
      detector abstains; a sparse eval curve needs 12 evaluations).
    - `recovery_points` 5: the median of 5 points sheds one noisy point after a spike. It
      is also how soon a run-rule burst must be back once its raised points end: a bad
      shard is over when it is over (lightning_shard_burst: back 4 points after its 5
      raised batches), a change of level relaxes over tens of points or never.
    - `LR_RISE` 1.1 (a constant, not a key): an LR more than 10% above the lowest LR
      logged just before it is a rise; a constant LR's float jitter is not.
    - `max_findings_per_metric` 5: a very spiky metric yields its first episode and its
      largest ones with a count, not a wall of findings.
    - `min_progress_share` 0.1: a practitioner reads a loss on a linear plot of the whole
      run; a jump under a tenth of the height the curve has come down is a wiggle there,
      whatever its ratio.
    - `near_zero_fraction` 0.05: below 5% of its earlier level a classifier's batch loss
      is dominated by single misclassified examples (one at p=0.01 in a batch of 16 adds
      0.29), so one-log jumps to 0.1-0.3 are routine and say nothing about the run.
    - `neighbour_ratio` 10: an order of magnitude. Without a noise estimate only a jump
      far outside what a loss does between two evaluations counts: the jitter of one
      evaluation on a whole eval set is a fraction of its level, and the min_ratio of the
      trailing-window rule (1.5x) would call ordinary early jitter a spike here.
      `neighbour_agreement` 2: the two neighbours say where the curve is; when they differ
      by more (a curve still falling fast), the level the point should have is uncertain.
    - `startup_fall` 10: minibatch noise and a steep but smooth descent move a loss by
      less than tenfold between two logs; a start-up transient falls by 10^2-10^6 in one
      (4.3e6 -> 1.0 in lightning/012).
    - `end_z` 4 and `end_history_multiple` 2: the last point has no recovery to judge and
      may rest on a short, rough noise baseline, so z 8 (a threshold for points judged
      against a full window and then by what came after) would miss a noisy short eval
      curve's 13x blow-up (robust z 5.7 against its 9 evaluations, in a published Keras
      log); the curve's own history carries the rest of the evidence instead: a curve
      whose noise or earlier incidents already reached 1.3x must end more than
      1.3^2 = 1.7x up, and a curve that never rose needs only `min_ratio`. 4 sigmas keep a
      per-batch loss spread over a decade (batch size 1), where 10x is within the noise,
      from counting.

    **False-positive modes.** Deliberate discontinuities: an LR warm restart (SGDR) can
    lift the loss by more than half for a while (the lr_schedule detector names the
    restart, and the two are linked); a change of data mixture or curriculum stage; a
    loss logged as a running average that resets at epoch starts. Very heavy-tailed
    per-batch losses (batch size 1, adversarial losses, an RL loss that `names.rl_losses`
    does not recognise: a run with no rollout or episode metric and no reward beside a
    policy, value or entropy loss, or a loss named for no such term): a batch whose loss
    is 1.5-2x the others is real but may be harmless; such a run shows several recovered
    spikes. Misses by design for RL: a
    value or total loss that jumps because the update went wrong (the NaN checks of
    divergence still see one that blows up). Misses by design: a spike smaller than a
    tenth of the progress made (a run that trains to 0.01 and jumps to 0.05 is not
    reported), and a memorised run's
    one-log jumps, even when a real bad batch caused them; a one-point jump of any size
    that is back at the next logged point is only info, even when it was a real bad batch
    (a corrupted sample shows that way only when logged per step); a total-loss incident in a run
    whose total is not recognised (named other than `train/loss`, `loss`, `mean_loss`,
    `total_loss` and the like) is reported per term.
    Runs of sub-threshold points: a loss logged as a running or exponential mean turns
    one bad batch into several raised points in a row (reported once, as one episode,
    with the peak at the bad batch, when the mean forgets it within `recovery_points`
    points). A level shift that lasts, a rise that relaxes slowly and a warm restart's
    rise also start as such runs, and are dropped (step 3). Measured with 40 seeds each
    (tests/detectors/test_spikes_runs.py), runs with a finding at warning or above, for
    the single-point rule alone / with the run rule as first shipped / now: a per-batch
    loss that doubles at step 500 and stays (log-normal noise 0.12) 5 / 24 (18 errors
    "did not recover") / 5; 1.7x, noise 0.1: 2 / 11 / 2; 1.6x, noise 0.08: 6 / 11 / 6; a
    PPO value loss that rises 4x and relaxes over ~40 updates 1 / 11 / 1; and warnings on
    6 SGDR runs (restarts every 250 steps, the loss 2x after each) 7 / 14 / 7. What
    remains is the single-point rule's (the first point after a step at z 8+, and its
    "did not recover" on a lasting step). Misses by design: a burst within 5 logged
    points after an LR rise, and a burst after which the loss stays up for more than
    `recovery_points` points before it comes back (a shard that damaged the model for a
    while), unless one of its points reaches `z_threshold`. Five raised batches at 8x on
    a per-batch noise of 0.35 are found as often as before (29 of 40 seeds).
    Too early for a baseline: the early evaluations of a run fall fast (0.9 -> 0.45 is
    learning, not a spike: only a point above both neighbours counts, so a falling start or
    an evaluation at step 0 before training, which has no neighbour before it, never does);
    a near-zero or coarsely rounded eval loss (0.01 -> 0.12 -> 0.01) jumps by one example
    or one rounding step, which the near-zero test sheds when the run logs a train loss
    that started high, but not on an eval-only log whose every value is near zero. Misses
    by design: a two-point burst (neither point is above both of its neighbours), a jump
    under 10x, and a jump between neighbours that disagree by more than 2x.
    End of the log (step 7): a heavy-tailed per-batch loss whose last logged batch is
    its largest outlier so far. Over the 300 healthy runs of
    tests/detectors/test_healthy_property.py (256,220 train-loss points), steps 2-5 find 34
    single-point outliers (z 8-37, 1.5-2.75x, each back at the next point: info); cutting
    each log right after its outlier, so that it is the last logged point, 14 are warnings
    (16 info, 4 nothing; 29 warnings before this rule, which judged such a point as any
    episode too close to the end), because they were the first outliers of their logs and
    rose 2-17x as far (log units) as anything before them. A healthy run ends on such a
    point about once in 7,500 runs (34 in 256,220 points), and warns about once in 18,000;
    on the property test's own runs, whose last point is whatever the noise gives: 0 of
    300. The same holds for an eval loss of heavy-tailed jitter (Student-t, 9%: one
    evaluation 4.3x its level at z 17 in the realistic eval family): a warning when it is
    the last. A deliberate change at the last step (a final evaluation on another set, a
    schedule that ends with a restart whose LR is not logged) is reported as what it looks
    like; a restart whose LR is logged is info. Misses by
    design: a final jump under `min_ratio`, one no more than twice (log units) the
    curve's largest earlier rise, and a raised tail of `recovery_points` or more points,
    which step 4 judges (did not recover: an error); a real blow-up at a warm restart to an
    LR the run trained at before (info), and a GAN player's blow-up at its last logged
    points (steps 2-5 still judge it at z 8, divergence its non-finite values).
    Start-up transient: a run logged so sparsely that its loss falls tenfold between two
    of its first logs, or halves at every log for its first few, and then memorises has
    its reference taken after that fall, so its memorised jumps that last a few logs can
    be reported (one-log jumps back at the next log stay info); a start-up slower than 2x
    per log, or one that spans half the log, is not a transient, and a burst measured
    against it can still be missed.

    **Example.** `examples/loss_spike/trainer_state.json`: step 400, where a batch with
    shifted labels made train/loss jump 230x; one logged point, and the median of the next
    5 is back within 4 noise sigmas, 1.59x the level before (info: most likely one hard
    batch; grad_norm's warning names the same step).
    `examples/lightning_bn_eval_spike/lightning_logs/version_0/metrics.csv`: a warning at
    step 39, the second evaluation, where eval/loss is at least 33x both of its neighbours
    (a batch with a +100 offset moved BatchNorm's running mean just before it).
    `examples/lightning_last_epoch_lr/lightning_logs/version_0/metrics.csv`: a warning at
    step 199, the last logged point, for eval/loss (0.255 at step 179, 1.452 at step 199:
    4.1x the median of the 5 evaluations before, naming step 179 as the lowest earlier
    one) and for train/loss (0.262 -> 0.750, 1.95x), where an LR schedule bug multiplied
    the LR by 100 for the last epoch.
    `examples/lightning_shard_burst/lightning_logs/version_0/metrics.csv`: a warning at
    steps 300-304, five mislabelled batches, each a few noise sigmas up (none alone at
    z 8) on a batch-16 loss; from step 309 the loss is back within 2 noise sigmas but
    still 9.3x its level before (median of 5), which the finding says. Silent on
    `examples/healthy/trainer_state.json`, and on the PPO run
    `examples/sb3_ppo_cartpole/progress.csv`, whose train/value_loss is 286.2 at step
    39936 and 0.5658 at step 40192, the next update (train/loss with it).
    """

    def scope(self, run: Run, params: SpikesParams) -> Scope | Abstain:
        """The losses `detect` reads (an RL update's losses left out), or why there are none."""
        losses = [n for n in run.metrics if is_loss_like(n)]
        moving_targets = rl_losses(run.metrics)
        missing = "only reinforcement-learning losses" if losses else "no loss metric"
        return scope_or_abstain((n for n in losses if n not in moving_targets), missing)

    def detect(self, run: Run, params: SpikesParams) -> list[Finding]:
        """One finding per spike episode in every loss-like metric; the terms of a total
        loss are folded into the total's findings."""
        moving_targets = rl_losses(run.metrics)  # an RL loss jumps with its rollouts
        per_metric = {
            name: _detect_metric(name, series, run, params)
            for name, series in run.metrics.items()
            if is_loss_like(name) and name not in moving_targets
        }
        total = loss_scale.total_loss(run)
        if total is None:
            return [f for found in per_metric.values() for f in found]
        return _fold_components(per_metric, total, loss_scale.components(run, total))


def _fold_components(
    per_metric: dict[str, list[Finding]], total: str, terms: list[str]
) -> list[Finding]:
    """One incident, one finding, led by the total loss: a term's spike inside a spike of
    the total (up to where the total came back) is named in the total's finding; a term's
    spike while the total did not spike is the optimiser trading terms off, not reported."""
    totals = per_metric.get(total, [])
    moved: dict[int, list[str]] = {}
    for term in terms:
        for f in per_metric.pop(term, []):
            for i, t in enumerate(totals):
                reach = t.evidence.get("recovered_at_step", t.step_end)
                if t.evidence.get("recovered") == "no":
                    reach = 2**62
                if f.step_start <= int(reach) and f.step_end >= t.step_start:
                    if term not in moved.setdefault(i, []):
                        moved[i].append(term)
                    break
    out = [f for name, found in per_metric.items() if name != total for f in found]
    for i, t in enumerate(totals):
        names = moved.get(i)
        if names:
            t = dataclasses.replace(
                t,
                message=t.message + f" Terms of {total} that spiked with it: {', '.join(names)}.",
                evidence={**t.evidence, "terms_that_spiked": ", ".join(names)},
            )
        out.append(t)
    return out


def _detect_metric(name: str, series: Series, run: Run, params: SpikesParams) -> list[Finding]:
    finite = series.finite
    raw = series.values[finite]
    n = int(raw.size)
    if n < 3:
        return []
    unjudged = unjudged_points(name, n, params)
    values, in_log = stats.log_if_positive(raw)
    if in_log:
        min_jump = math.log10(params.min_ratio)
    else:
        level = stats.level_scale(raw)
        if level <= 0:
            return []
        min_jump = (params.min_ratio - 1.0) * level
    window = stats.window_points(n, params.window_fraction, params.min_window, params.max_window)
    curve = Curve(
        steps=series.steps[finite],
        raw=raw,
        values=values,
        in_log=in_log,
        min_jump=min_jump,
        window=window,
        ends_nonfinite=not bool(np.isfinite(series.values[-1])),
    )
    early = neighbour_spikes(name, run, curve, unjudged, params) if unjudged else []
    lr = run.metrics.get(LR)
    # The last logged points, which nothing after them can show coming back (`end`); a GAN
    # player's loss follows the other player, so its last points prove nothing alone.
    log_end = end_episode(curve, params, lr, moving_target=name in adversarial_losses(run.metrics))
    if log_end is not None and is_eval(name) and TRAIN_LOSS in run.metrics:
        echo = train_blow_up((TRAIN_LOSS, run.metrics[TRAIN_LOSS]), int(curve.steps[log_end.start]))
        log_end = dataclasses.replace(log_end, train_blow_up=echo)
    if unjudged == n:
        return early + ([spike_finding(name, run, curve, log_end, params, 1)] if log_end else [])
    z, median, sigma = spike_scores(curve, params)
    found = [
        judge_episode(curve, z, median, sigma, start, end, params)
        for start, end in stats.episodes(flagged_points(z, params), max_gap=params.merge_gap)
    ]
    # A run of sub-threshold points is a spike only when it is a burst: not a lasting or
    # slowly relaxing change of level, and not the loss answering an LR that just went up.
    # Dropped before merging, so a level shift does not swallow the spikes after it.
    found = [
        e
        for e in found
        if not (
            e.by_run and (is_level_shift(e, params) or follows_lr_rise(lr, curve.steps, e.start))
        )
    ]
    found = [e for e in merge_unrecovered(found) if large_enough(curve, e, params)]
    found = settle_end(found, log_end, curve)
    return early + [
        spike_finding(name, run, curve, e, params, len(found))
        for e in worth_showing(found, curve, params)
    ]


DETECTOR = SpikesDetector()
