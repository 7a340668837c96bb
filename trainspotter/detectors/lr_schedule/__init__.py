"""lr_schedule: a missing warmup, a re-rising or jumping LR, an LR at ~0 long before the end.

A subpackage: `curve` cuts the LR curve into rises once (with its peak, span and warmup),
the state every case reads; `warmup` (cases 1 and 5), `rises` (re-rises, jumps, restarts,
a decay stepped past its end: cases 2, 3 and 6) and `zero` (case 4) each turn it into
findings; this module declares the detector and runs the cases in order.
"""

from __future__ import annotations

import numpy as np

from trainspotter import names
from trainspotter.detectors import stats
from trainspotter.detectors.base import Detector, Reads
from trainspotter.detectors.lr_schedule.curve import Curve
from trainspotter.detectors.lr_schedule.params import NAME, LrScheduleParams
from trainspotter.detectors.lr_schedule.rises import cliff_findings, re_rise_findings
from trainspotter.detectors.lr_schedule.warmup import endless_warmup, missing_warmup
from trainspotter.detectors.lr_schedule.zero import zero_too_early
from trainspotter.model import Finding, Run

__all__ = ["DETECTOR", "NAME", "LrScheduleDetector", "LrScheduleParams"]


class LrScheduleDetector(
    Detector,
    name=NAME,
    params=LrScheduleParams,
    causal_rank=0,
    drives_same_step=True,
    reads=Reads(lambda m: m == names.LR, "no learning-rate metric"),
    summary="Missing warmup, an LR that re-rises or jumps, an LR at ~0 long before the end.",
):
    """Finds learning-rate schedule bugs, and recognises deliberate restart schedules.

    **What it finds.** Six schedule bugs, each a warning: (1) a missing warmup that left
    the early loss unstable; (2) a re-rise of the LR after its peak, including a jump up
    that stays (the classic resume bug); (3) a jump down inside a smooth schedule; (4) an
    LR at ~0 long before the end; (5) a warmup that never ends; (6) a decaying schedule
    stepped past the end of its period, so the LR climbs smoothly back up from ~0.
    Deliberate warm restarts and cyclic schedules are recognised and reported once, as
    info.

    **Algorithm.** The LR curve is cut into monotone phases: consecutive logged moves of the same
    direction, ignoring short flat stretches (so a staircase warmup under gradient
    accumulation is one rise; more than max(5, 2% of the points) flat moves end a phase).
    A move smaller than 1e-6 of the LR (float noise) is flat. Rises are kept when they
    multiply the LR by >= `min_rise_factor` (1.25). The phases are counted in logged
    points, so every logging interval works the same way. The cases:

    1. Missing warmup (warning). The first logged LR is >= `no_warmup_fraction` (90%) of
       the peak, logged in the first `early_fraction` (10%) of the run; the LR is large:
       >= `large_lr` (1e-3, where Adam-type optimisers need a warmup); AND the train loss
       is unstable early: within the first 10% of its steps, at most `early_max_steps`
       (1000) and at least `min_early_points` (5) points, it turns non-finite or climbs to
       >= 1 + `instability_rise` (2x) its starting level (the first logged loss, or the
       median of the window's first quarter if higher, so that one easy first minibatch
       is no baseline), or its 3-point rolling median (two of three consecutive points)
       climbs >= `sustained_rise` (25%) above the first logged loss by >=
       `sustained_noise_factor` (6) times the loss's
       relative point-to-point noise (`stats.noise_scale` of log loss): a loss that rises
       and oscillates for several steps before settling. An untrained model's loss is
       the highest a healthy run logs, so doubling it right after the start is the updates
       overshooting. The optimiser is not in the log, so the LR's size alone is no
       evidence: SGD runs at 0.1 with no warmup by design, Adam at 1e-3 often cannot; the
       loss says which it was.
    2. Re-rise after the peak (warning), including (3) a single-interval jump up by >=
       `jump_factor` (3x) that stays (the classic resume bug). Any rise other than the
       warmup is checked against deliberate schedules first: a warm restart starts from <=
       `restart_trough_fraction` (25%) of the previous cycle's peak, reached by a decay
       (the point before the trough is <= 60% of that peak), and climbs back to >=
       `restart_peak_fraction` (40%) of it; two or more re-rises whose periods are equal or
       grow by a constant factor (`period_tolerance` 15%) are a cyclic schedule. Deliberate
       restarts give one info finding ("recognised warm restarts"/"cyclic"); every other
       re-rise is a warning. The first rise counts as a warmup only if it starts in the
       first `warmup_start_fraction` (10%) of the run (or from ~0).
    3. Jump down (warning): a single interval that divides the LR by >= 3x inside a smooth
       schedule (both neighbouring moves non-flat and the drop >= `cliff_ratio` (5x) each
       of them). Step schedules and ReduceLROnPlateau drop between flat stretches, which
       is deliberate and not reported; a drop to ~0 is case 4.
    4. LR at ~0 long before the end (warning): below `near_zero_fraction` (1%) of its peak
       from some step to the end of the log (`stats.lr_zero_step`, shared with plateau),
       for >= `min_zero_fraction` (30%) of the run: that part of the run barely trains.
       Info instead when it got there in 3 or more cuts (each >= 1.5x) between flat
       stretches: ReduceLROnPlateau cutting as the loss levels off reaches ~0 by design.
    5. Warmup never ends (warning): the first rise is still rising after
       `endless_warmup_fraction` (90%) of the run (warmup_steps >= max_steps). Not reported
       when the reader knows the planned length (`meta["max_steps"]`) and the log stops
       well before it, nor while `watch` follows a log that is still growing
       (`meta["in_progress"]`) and the planned length is unknown: a run in progress.

    6. Schedule past its end (warning): a re-rise from <= 25% of the previous peak, over
       >= 3 logged intervals, whose every point lies within `retrace_tolerance` (10% of
       that peak) of the mirror image of the decay before it (the mirror's centre searched
       within one logged interval of the lowest point). That is what a cosine does when
       stepped past T_max (PyTorch's CosineAnnealingLR, transformers' cosine schedule with
       too small num_training_steps). A warm restart jumps back in one interval and a
       re-warmup climbs far faster than the decay fell: neither retraces it. Not checked
       when the schedule starts with a rise at least half as long as the decay after it
       (a triangular/cyclical schedule starts at its minimum, a warmup is short).

    Minimum sample: `min_points` = 5 logged LR values; the instability check needs 5 loss
    points; case 6 needs 3 logged points of the climb.

    Which LR: the run's `lr` metric. A log with one LR per optimizer parameter group
    (`names.is_param_group_lr`: ultralytics' `lr/pg0`, `lr/pg1`, `lr/pg2`, Lightning's
    `lr-AdamW/pg1`, `lr-AdamW/pg2`) has its first group in the log read as `lr`, and only
    that one is judged; the others keep their own names (a reader note says so). Groups
    usually share one schedule at different scales (a body and a head), so judging each
    would repeat one finding per group. A group whose schedule differs from the first's
    is not judged (see the false-positive modes).

    **Defaults and why.** 3x is beyond any smooth schedule's change per logged interval except
    a warmup's first steps (which are excluded) and the last steps of a decay to 0 (below
    1% of the peak, excluded); a step schedule's drop is flat on both sides. 25%/40% trough
    and peak fit SGDR (eta_min ~0, restart to the peak or a decayed peak; a cosine cycle
    logged at 4+ points has its last point below 15% of the peak) and resets of a new
    training stage, and reject a resume that jumps back to the peak from mid-decay.
    30% at ~0 is several times the tail a cosine or linear decay spends below 1% (4.5% and
    1%).

    **False-positive modes.** A deliberately cyclical schedule that starts at its peak
    rather than its minimum, with cycles that mirror themselves (a cosine annealed down and
    back up on purpose), reads as case 6. A deliberate schedule with one irregular restart
    from mid-decay (indistinguishable from a resume bug: warned); a one-off restart from ~0
    after a crash near the end of a run reads as a deliberate restart (info, a false
    negative); an LR-range test rises for the whole run (reported as an endless warmup,
    which it is); early loss bumps of a run without warmup that have another cause (a bad
    first batch; a data order whose first batches are easy). Case 5 on a log without the
    planned length cannot tell a warmup longer than the run from a run stopped early: the
    message says so. Parameter groups: only the first group's LR is judged, so a bug in
    another group's schedule alone is missed, and a first group with its own warmup is
    judged as the run's: older ultralytics versions built the optimizer on the biases
    first (`lr/pg0`), whose LR falls from `warmup_bias_lr` (0.1) while the weights' rises
    from 0, a schedule with no warmup (case 1 still needs an unstable `train/loss`, which
    YOLO logs do not name; 8.4 puts the biases last, `lr/pg2`).

    **Example.** `examples/divergence/trainer_state.json`: a warning at step 300, where a
    resume bug multiplied the LR by 100 (case 2, a jump up that stays). Also
    `examples/missing_warmup/trainer_state.json` (case 1, steps 1-3) and
    `examples/plateau/trainer_state.json` (case 4, from step 100),
    `examples/cosine_too_short/trainer_state.json` (case 6, from step 451); info on
    `examples/sgdr_healthy/trainer_state.json` (warm restarts recognised). Silent on
    `examples/healthy/trainer_state.json`. Parameter groups:
    `examples/lightning_param_group_lr/` (`lr-Adam/pg1` judged, case 4 from step 149) and
    `examples/yolo_param_groups/results.csv` (a real YOLO run, `lr/pg0` judged: silent).
    """

    def detect(self, run: Run, params: LrScheduleParams) -> list[Finding]:
        """Every LR-schedule finding for the run's `lr` metric."""
        series = run.metrics.get(names.LR)
        if series is None:
            return []
        x, lr = stats.finite_xy(series.steps, series.values)
        keep = lr >= 0
        x, lr = x[keep], lr[keep]
        if lr.size < params.min_points or float(lr.max()) <= 0:
            return []
        with np.errstate(all="ignore"):  # huge logged values may overflow: harmless
            return _findings(Curve(run, x, lr, params))


def _findings(curve: Curve) -> list[Finding]:
    """Every case's findings for one LR curve: the warmup cases (a warmup that never ends,
    or none where one was needed), re-rises and jumps, cliffs, then an LR at ~0 early."""
    found: list[Finding] = []
    warmup = curve.warmup()
    re_rises = [rise for rise in curve.rises if rise is not warmup]
    if warmup is not None:
        endless = endless_warmup(curve, warmup)
        if endless is not None:
            found.append(endless)
    elif (
        curve.lr[0] >= curve.params.no_warmup_fraction * curve.peak
        and curve.peak >= curve.params.large_lr
    ):
        missing = missing_warmup(curve)
        if missing is not None:
            found.append(missing)
    found.extend(re_rise_findings(curve, warmup, re_rises))
    found.extend(cliff_findings(curve))
    zero = zero_too_early(curve)
    if zero is not None:
        found.append(zero)
    return found


DETECTOR = LrScheduleDetector()
