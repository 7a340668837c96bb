"""lr_schedule: a missing warmup, a re-rising or jumping LR, an LR at ~0 long before the end.

One module over ~500 lines on purpose: the cases are methods of one `_Analysis` that cuts
the LR curve into rises once (with its peak and span), and the warmup the first rise is
judged to be decides both the endless-warmup case and which later rises are re-rises or
restarts; splitting the cases apart would scatter that shared state over several files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from trainspotter import names
from trainspotter.detectors import idioms, stats
from trainspotter.detectors.base import Above, Detector, Reads
from trainspotter.model import Evidence, Finding, FloatArray, Run, Series, Severity

NAME = "lr_schedule"


FIXES_JUMP = (
    "Check how the run was resumed: load the scheduler's state with the checkpoint "
    "(transformers: resume_from_checkpoint=...; PyTorch: scheduler.load_state_dict)",
    "Check for code that sets param_group['lr'] directly, or a second scheduler on the same "
    "optimiser",
    "If this change is deliberate (a new training stage), suppress it in .trainspotter.yml",
)


@dataclass(frozen=True)
class LrScheduleParams:
    """Parameters of the lr_schedule detector (see its docstring for each default's reason)."""

    min_points: int = 5
    """Abstain below this many finite, non-negative LR points."""
    jump_factor: float = 3.0
    """A single logged interval that multiplies (or divides) the LR by this is a jump."""
    min_rise_factor: float = 1.25
    """A rise after the peak smaller than this ratio is jitter, not a re-rise."""
    restart_trough_fraction: float = 0.25
    """A warm restart starts from <= this fraction of the previous cycle's peak..."""
    restart_peak_fraction: float = 0.4
    """...and climbs back to >= this fraction of it."""
    period_tolerance: float = 0.15
    """Cyclic schedules: periods (or their growth ratio) agree within this fraction."""
    warmup_start_fraction: float = 0.1
    """The first rise is a warmup only if it starts in the first 10% of the run."""
    endless_warmup_fraction: float = 0.9
    """A warmup still rising after 90% of the run never ended."""
    near_zero_fraction: float = stats.LR_ZERO_FRACTION
    """An LR below this fraction of its peak is ~0."""
    min_zero_fraction: float = 0.3
    """Warn when the LR is ~0 for at least this share of the run's steps."""
    no_warmup_fraction: float = 0.9
    """No warmup: the first logged LR is at least this fraction of the peak."""
    large_lr: float = 1e-3
    """Missing warmup: only an LR at least this large counts as "a large LR from step 0"."""
    early_fraction: float = 0.1
    """Missing warmup: the early window searched for loss instability (share of steps)..."""
    early_max_steps: int = 1000
    """...at most this many steps (Adam's second-moment estimate settles in ~1/(1-beta2))."""
    min_early_points: Annotated[
        int,
        Above(
            2,
            False,
            "the early-instability check compares the loss points after the first with it, "
            "and at 1 can be left with none",
        ),
    ] = 5
    """...and at least this many loss points."""
    instability_rise: float = 1.0
    """Early instability: the loss climbs this fraction above its first logged value
    (1.0: to twice the initial loss), or turns non-finite..."""
    sustained_rise: float = 0.25
    """...or its 3-point rolling median (two of three consecutive points: not one batch)
    climbs this fraction above its first logged value (0.25: to 1.25x)..."""
    sustained_noise_factor: float = 6.0
    """...by at least this many times the loss's relative point-to-point noise."""
    cliff_ratio: float = 5.0
    """A drop in a smooth schedule is a jump when it is this many times its neighbours."""
    retrace_tolerance: float = 0.1
    """A climb back from ~0 retraces the decay before it (a schedule stepped past its
    end) when every point is within this fraction of the peak of the decay's mirror image."""


@dataclass(frozen=True)
class _Rise:
    """One rise of the LR: from the trough point `low` to the top point `high`."""

    low: int
    high: int
    biggest_move: int
    """Index of the point ending the largest single up-move inside the rise."""
    biggest_ratio: float


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
    message says so.

    **Example.** `examples/divergence/trainer_state.json`: a warning at step 300, where a
    resume bug multiplied the LR by 100 (case 2, a jump up that stays). Also
    `examples/missing_warmup/trainer_state.json` (case 1, steps 1-3) and
    `examples/plateau/trainer_state.json` (case 4, from step 100),
    `examples/cosine_too_short/trainer_state.json` (case 6, from step 451); info on
    `examples/sgdr_healthy/trainer_state.json` (warm restarts recognised). Silent on
    `examples/healthy/trainer_state.json`.
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
            return _Analysis(run, x, lr, params).findings()


class _Analysis:
    """The phases of one LR curve and the findings they give."""

    def __init__(self, run: Run, x: FloatArray, lr: FloatArray, params: LrScheduleParams) -> None:
        self.run = run
        self.x = x
        self.lr = lr
        self.params = params
        self.peak = float(lr.max())
        self.span = float(x[-1] - x[0])
        moves = np.diff(lr)
        # Float noise only: a per-step cosine changes the LR by ~1e-4 of itself per step.
        tolerance = 1e-6 * lr[:-1] + 1e-12 * self.peak
        self.direction = np.where(moves > tolerance, 1, np.where(moves < -tolerance, -1, 0))
        self.rises = self._rises()

    def findings(self) -> list[Finding]:
        found: list[Finding] = []
        warmup = self._warmup()
        re_rises = [rise for rise in self.rises if rise is not warmup]
        if warmup is not None:
            endless = self._endless_warmup(warmup)
            if endless is not None:
                found.append(endless)
        elif (
            self.lr[0] >= self.params.no_warmup_fraction * self.peak
            and self.peak >= self.params.large_lr
        ):
            missing = self._missing_warmup()
            if missing is not None:
                found.append(missing)
        found.extend(self._re_rises(warmup, re_rises))
        found.extend(self._cliffs())
        zero = self._zero_too_early()
        if zero is not None:
            found.append(zero)
        return found

    # --- phases

    def _rises(self) -> list[_Rise]:
        """Maximal runs of up-moves (flat moves ignored) that multiply the LR enough."""
        moving = np.flatnonzero(self.direction)
        if moving.size == 0:
            return []
        signs = self.direction[moving]
        # A phase ends where the direction changes, or at a long flat stretch (a constant
        # LR): a staircase warmup's short flats do not split it.
        max_flat = max(5, self.lr.size // 50)
        breaks = np.flatnonzero((np.diff(signs) != 0) | (np.diff(moving) > max_flat + 1))
        firsts = moving[np.concatenate(([0], breaks + 1))]
        lasts = moving[np.concatenate((breaks, [moving.size - 1]))]
        ups = signs[np.concatenate(([0], breaks + 1))] > 0
        low, high = firsts[ups], lasts[ups] + 1
        with np.errstate(all="ignore"):
            factor = self.lr[high] / self.lr[low]
        big = (self.lr[low] <= 0) | (factor >= self.params.min_rise_factor)
        with np.errstate(all="ignore"):
            step_ratio = self.lr[1:] / self.lr[:-1]
        step_ratio = np.where(self.direction > 0, step_ratio, 0.0)
        rises = []
        for a, b in zip(low[big], high[big], strict=True):
            inside = step_ratio[a:b]
            best = int(np.argmax(inside))
            rises.append(_Rise(int(a), int(b), int(a + best + 1), float(inside[best])))
        return rises

    def _warmup(self) -> _Rise | None:
        """The first rise, if it is a warmup: from the start (or from ~0), rising first."""
        if not self.rises:
            return None
        first = self.rises[0]
        before = self.lr[: first.low + 1]
        if float(before.max()) > self.lr[first.low] * (1 + 1e-3) + 1e-12 * self.peak:
            return None  # the LR fell before this rise: it is a re-rise
        early = self.x[first.low] - self.x[0] <= self.params.warmup_start_fraction * self.span
        from_zero = float(before.max()) < self.params.near_zero_fraction * self.peak
        return first if early or from_zero else None

    # --- case 5: warmup never ends

    def _endless_warmup(self, warmup: _Rise) -> Finding | None:
        p = self.params
        top_step = self.x[warmup.high]
        if top_step - self.x[0] < p.endless_warmup_fraction * self.span:
            return None
        if (
            warmup.high < self.lr.size - 1
            and float(self.lr[warmup.high :].min()) < 0.9 * (self.lr[warmup.high])
        ):
            return None  # it did turn down at the very end
        start = float(self.lr[warmup.low])
        if start > 0 and self.lr[warmup.high] / start < 2:
            return None
        planned = self.run.meta.get("max_steps")
        if isinstance(planned, int | float) and planned > 1.1 * float(self.x[-1]):
            return None  # the run is still in progress; its warmup may yet end
        if self.run.meta.get("in_progress") and not isinstance(planned, int | float):
            return None  # a log still growing (watch) with no known length: it may yet end
        first_step, last_step = int(self.x[0]), int(self.x[-1])
        message = (
            f"The LR rose from {start:.3g} at step {int(self.x[warmup.low])} to "
            f"{self.lr[warmup.high]:.3g} at step {int(top_step)} and never came down: it was "
            f"still rising {100 * (top_step - self.x[0]) / self.span:.0f}% of the way "
            f"through the log (steps {first_step}-{last_step}, {self.lr.size} logged values)."
        )
        if isinstance(planned, int | float):
            message += (
                f" The run was planned for {int(planned)} steps and the log reaches them: the "
                "warmup never ended, so the run trained at a lower LR than planned and never "
                "annealed."
            )
        else:
            message += (
                " The log does not say how long the run was planned to be, so this is either "
                "a warmup as long as the run (trained at a lower LR than planned, never "
                "annealed) or a run stopped before its warmup ended."
            )
        return Finding(
            detector=NAME,
            title=(
                "lr rises for the whole run: the warmup never ended"
                if isinstance(planned, int | float)
                else "lr rises for the whole log: the warmup never ended within it"
            ),
            severity=Severity.WARNING,
            metric=names.LR,
            step_start=first_step,
            step_end=last_step,
            message=message,
            evidence={
                "start_lr": start,
                "end_lr": float(self.lr[warmup.high]),
                "rising_until_step": int(top_step),
                "rising_fraction": float((top_step - self.x[0]) / self.span),
            },
            fixes=(
                "Make warmup_steps (or warmup_ratio x total steps) much smaller than the run: "
                "1-10% of it; check that it is counted in optimiser steps, not samples",
                "Check max_steps / num_train_epochs: a schedule built for a longer run stops "
                "mid-warmup when training is cut short",
            ),
        )

    # --- case 1: missing warmup

    def _missing_warmup(self) -> Finding | None:
        p = self.params
        run_start, run_end = self.run.step_span() or (int(self.x[0]), int(self.x[-1]))
        if self.x[0] - run_start > p.early_fraction * max(run_end - run_start, 1):
            return None  # the LR's first log comes too late to say what it started at
        loss = self.run.metrics.get(names.TRAIN_LOSS)
        if loss is None or len(loss) < p.min_early_points:
            return None
        found = self._early_instability(loss)
        if found is None:
            return None
        unstable, peak_step = found
        early_span = int(
            min(p.early_fraction * float(loss.steps[-1] - loss.steps[0]), p.early_max_steps)
        )
        first_lr = float(self.lr[0])
        message = (
            f"The LR starts at {first_lr:.3g} at step {int(self.x[0])}, already "
            f"{first_lr / self.peak:.0%} of its peak {self.peak:.3g}: there is no warmup. "
            f"In the first {early_span} steps {unstable}, the "
            "instability a warmup prevents (Adam-type optimisers' early updates are "
            "largest when their second-moment estimates are still tiny)."
        )
        return Finding(
            detector=NAME,
            title=f"no LR warmup, and {names.TRAIN_LOSS} was unstable in the first steps",
            severity=Severity.WARNING,
            metric=names.LR,
            step_start=int(self.x[0]),
            step_end=max(peak_step, int(self.x[0])),
            message=message,
            evidence={
                "first_lr": first_lr,
                "peak_lr": self.peak,
                "first_lr_step": int(self.x[0]),
                "instability_step": peak_step,
                "instability": unstable,
            },
            fixes=(
                idioms.warmup_fix(self.run),
                "Lower the peak LR by 3-10x",
                idioms.clipping_fix(self.run),
            ),
        )

    def _early_instability(self, loss: Series) -> tuple[str, int] | None:
        """How the train loss was unstable in the early window (a sentence and the step),
        or None. Unstable: a non-finite value, or a value `instability_rise` above the
        starting level. An untrained model's loss is the highest a healthy run logs
        (and varies little from batch to batch), so climbing far above it right after
        training starts is the update overshooting, not minibatch noise."""
        p = self.params
        steps, values = loss.steps, loss.values
        early_end = steps[0] + min(
            p.early_fraction * float(steps[-1] - steps[0]), float(p.early_max_steps)
        )
        count = max(int(np.searchsorted(steps, early_end, side="right")), p.min_early_points)
        early_steps, early = steps[:count], values[:count]
        bad = np.flatnonzero(~np.isfinite(early))
        if bad.size:
            step = int(early_steps[bad[0]])
            return f"{names.TRAIN_LOSS} turned non-finite at step {step}", step
        # The starting level: the first logged loss, or the median of the window's first
        # quarter if higher (a first minibatch that happened to be easy is no baseline).
        initial = max(float(early[0]), float(np.median(early[: max(count // 4, 1)])))
        worst = 1 + int(np.argmax(early[1:]))
        peak = float(early[worst])
        step = int(early_steps[worst])
        if initial <= 0:
            if peak - initial < p.instability_rise * stats.level_scale(values):
                return None
            return (
                f"{names.TRAIN_LOSS} climbed from {initial:.4g} to {peak:.4g} at step {step}",
                step,
            )
        if peak >= (1 + p.instability_rise) * initial:
            return (
                f"{names.TRAIN_LOSS} climbed from its starting level {initial:.4g} to "
                f"{peak:.4g} ({peak / initial:.1f}x) at step {step}",
                step,
            )
        # A sustained rise: two of three consecutive points well above the first logged
        # loss (the noise bar, not a median baseline, guards against an easy first batch:
        # a median would absorb the very rise it looks for).
        initial = float(early[0])
        held = stats.rolling_median(early, 3, center=True)[1:-1]
        if held.size == 0:
            return None
        top = 1 + int(np.argmax(held))
        excess = float(held[top - 1]) - initial
        # Noise on a log scale: relative point-to-point jitter, the same early and late.
        positive = values[np.isfinite(values) & (values > 0)]
        noise = stats.noise_scale(np.log(positive)) if positive.size >= 3 else np.inf
        rise = float(np.log1p(excess / initial))
        if excess < p.sustained_rise * initial or rise < p.sustained_noise_factor * noise:
            return None
        below = np.flatnonzero(early[top:] <= initial)
        back = (
            f" and stayed above its start until step {int(early_steps[top + int(below[0])])}"
            if below.size
            else f" and was still above its start at step {int(early_steps[-1])}"
        )
        return (
            f"{names.TRAIN_LOSS} rose from {initial:.4g} at step {int(early_steps[0])} to "
            f"{peak:.4g} at step {step} ({peak / initial:.2f}x){back} (median of steps "
            f"{int(early_steps[top - 1])}-{int(early_steps[top + 1])}: {initial + excess:.4g})",
            step,
        )

    # --- cases 2 and 3: re-rises, restarts, jumps

    def _re_rises(self, warmup: _Rise | None, re_rises: list[_Rise]) -> list[Finding]:
        if not re_rises:
            return []
        top_points = [warmup.high if warmup else 0] + [r.high for r in re_rises]
        tops = [float(self.lr[i]) for i in top_points]
        retraced: list[int] = []
        if not self._starts_cyclic(warmup, re_rises[0]):
            retraced = [i for i, r in enumerate(re_rises) if self._retraces_decay(r, top_points[i])]
        found: list[Finding] = []
        if retraced:
            found.append(self._past_end_finding([(re_rises[i], top_points[i]) for i in retraced]))
            others = [i for i in range(len(re_rises)) if i not in retraced]
            if not others:
                return found
            tops = [tops[i] for i in others] + [tops[others[-1] + 1]]
            re_rises = [re_rises[i] for i in others]
        return found + self._other_re_rises(warmup, re_rises, tops)

    def _other_re_rises(
        self, warmup: _Rise | None, re_rises: list[_Rise], tops: list[float]
    ) -> list[Finding]:
        """Re-rises that do not retrace a decay: deliberate restarts and cycles (one info),
        or a warning each."""
        deliberate = [self._is_restart(r, tops[i]) for i, r in enumerate(re_rises)]
        if len(re_rises) >= 2 and self._periodic(warmup, re_rises, tops):
            deliberate = [True] * len(re_rises)
        found = [
            self._re_rise_finding(rise, tops[i])
            for i, rise in enumerate(re_rises)
            if not deliberate[i]
        ]
        recognised = [r for r, ok in zip(re_rises, deliberate, strict=True) if ok]
        if recognised:
            found.append(self._restarts_finding(recognised))
        return found

    def _starts_cyclic(self, warmup: _Rise | None, first_re_rise: _Rise) -> bool:
        """A cyclical schedule (triangular, CLR) starts at its minimum and its first rise
        is a half-cycle: about as long as the decay after it. A warmup is much shorter
        than the decay it leads into."""
        if warmup is None:
            return False
        rise = float(self.x[warmup.high] - self.x[warmup.low])
        decay = float(self.x[first_re_rise.low] - self.x[warmup.high])
        return rise >= 0.5 * decay

    def _retraces_decay(self, rise: _Rise, top: int) -> bool:
        """A decay stepped past its end: after falling from the top at point `top` to ~0,
        the LR climbs back smoothly along the mirror image of that decay (a cosine's
        T_max, or num_training_steps, shorter than the run). A warm restart jumps back in
        one logged interval and so fails this; so does a short re-warmup, which climbs
        far faster than the decay fell."""
        p = self.params
        low, high = rise.low, rise.high
        previous_top = float(self.lr[top])
        if high - low < 3 or float(self.lr[low]) > p.restart_trough_fraction * previous_top:
            return False
        decay_x, decay_lr = self.x[top : low + 1], self.lr[top : low + 1]
        if decay_x.size < 3 or np.any(np.diff(decay_x) <= 0):
            return False
        rise_x, rise_lr = self.x[low + 1 : high + 1], self.lr[low + 1 : high + 1]
        # The true minimum lies within one logged interval of the lowest logged point.
        centre = float(self.x[low])
        reach = float(max(self.x[low] - self.x[low - 1], self.x[min(low + 1, high)] - centre))
        best = np.inf
        for t0 in centre + reach * np.linspace(-0.5, 0.5, 11):
            mirrored_x = 2 * t0 - rise_x
            inside = mirrored_x >= decay_x[0]
            if int(inside.sum()) < 3:
                continue
            mirrored = np.interp(mirrored_x[inside], decay_x, decay_lr)
            best = min(best, float(np.max(np.abs(rise_lr[inside] - mirrored))))
        return best <= p.retrace_tolerance * previous_top

    def _past_end_finding(self, rises: list[tuple[_Rise, int]]) -> Finding:
        """One warning for every smooth climb back that retraces the decay before it."""
        first, top = rises[0]
        low, high = first.low, first.high
        previous_top, trough, climbed = (float(self.lr[i]) for i in (top, low, high))
        still = high == self.lr.size - 1
        largest_step = float(np.max(np.diff(self.lr[low : high + 1]))) / previous_top
        message = (
            f"The LR fell from {previous_top:.3g} at step {int(self.x[top])} to {trough:.3g} at "
            f"step {int(self.x[low])}, then climbed back smoothly, retracing its decay, to "
            f"{climbed:.3g} at step {int(self.x[high])}"
            + (" (still rising at the last logged step)" if still else "")
            + f" over {high - low} logged intervals (the largest rise in one interval was "
            f"{largest_step:.2%} of that peak). A warm restart jumps back in one step; a climb "
            "that mirrors the decay is a decaying schedule (a cosine) stepped past the end of "
            "its period: its length (T_max, num_training_steps) is shorter than the run."
        )
        if len(rises) > 1:
            shown = ", ".join(str(int(self.x[r.low])) for r, _ in rises[:8])
            message += f" It bottomed out and climbed back {len(rises)} times (from steps {shown})."
        loss_note = self._loss_after(int(self.x[low]), int(self.x[high]))
        if loss_note:
            message += f" {loss_note}"
        return Finding(
            detector=NAME,
            title=(
                f"lr climbed back up from ~0 at step {int(self.x[low])}: the schedule's period "
                "is shorter than the run"
            ),
            severity=Severity.WARNING,
            metric=names.LR,
            step_start=int(self.x[low + 1]),
            step_end=int(self.x[rises[-1][0].high]),
            message=message,
            evidence={
                "previous_peak": previous_top,
                "previous_peak_step": int(self.x[top]),
                "trough_lr": trough,
                "trough_step": int(self.x[low]),
                "lr_after": climbed,
                "lr_after_step": int(self.x[high]),
                "largest_one_interval_rise_over_peak": largest_step,
                "climbs": len(rises),
            },
            fixes=(
                "Set the schedule's length to the real number of optimiser steps (PyTorch: "
                "CosineAnnealingLR(T_max=total_steps); transformers: num_training_steps / "
                "max_steps, counted after gradient accumulation and over all epochs)",
                "If restarts were intended, use a schedule that restarts on purpose "
                "(CosineAnnealingWarmRestarts, cosine_with_restarts)",
            ),
        )

    def _is_restart(self, rise: _Rise, previous_top: float) -> bool:
        """A warm restart: from ~the bottom of a completed decay back up near the peak."""
        p = self.params
        trough = float(self.lr[rise.low])
        before = float(self.lr[rise.low - 1]) if rise.low >= 1 else trough
        return (
            trough <= p.restart_trough_fraction * previous_top
            and before <= 0.6 * previous_top
            and float(self.lr[rise.high]) >= p.restart_peak_fraction * previous_top
        )

    def _periodic(self, warmup: _Rise | None, re_rises: list[_Rise], tops: list[float]) -> bool:
        """Re-rises at regular intervals (equal, or growing by a constant factor)."""
        p = self.params
        if any(tops[i + 1] < p.restart_peak_fraction * tops[i] for i in range(len(re_rises))):
            return False
        starts = np.array([self.x[r.low] for r in re_rises])
        periods = np.diff(starts)
        if periods.size >= 2:
            growths = periods[1:] / periods[:-1]
            centre = float(np.median(growths))
            return bool(np.all(np.abs(growths - centre) <= p.period_tolerance * centre))
        # Two re-rises give one period: compare it with the lead-in from the first peak,
        # allowing the growth factors of real schedules (SGDR's T_mult, a triangular
        # cycle whose first half-cycle is its warmup).
        first_start = self.x[warmup.high] if warmup else self.x[0]
        lead = float(starts[0] - first_start)
        if lead <= 0:
            return False
        growth = float(periods[0]) / lead
        nearest = min((0.5, 1.0, 2.0, 3.0, 4.0), key=lambda factor: abs(growth - factor))
        return abs(growth - nearest) <= p.period_tolerance * nearest

    def _re_rise_finding(self, rise: _Rise, previous_top: float) -> Finding:
        p = self.params
        low, high = rise.low, rise.high
        trough, top = float(self.lr[low]), float(self.lr[high])
        jump = rise.biggest_ratio >= p.jump_factor
        loss_note = self._loss_after(int(self.x[low]), int(self.x[high]))
        if jump:
            at = rise.biggest_move
            before, after = float(self.lr[at - 1]), float(self.lr[at])
            level_after = float(np.median(self.lr[at : min(at + 5, self.lr.size)]))
            title = f"lr jumped {_times(after, before)} at step {int(self.x[at])}"
            message = (
                f"The LR jumped from {before:.3g} at step {int(self.x[at - 1])} to "
                f"{after:.3g} at step {int(self.x[at])} ({_times(after, before)} in one logged "
                f"interval) and stayed near {level_after:.3g}; no recognised schedule (warmup, "
                f"warm restart, cyclic) explains it. The peak before it was {previous_top:.3g}."
            )
            start, end = int(self.x[at]), int(self.x[at])
            evidence: Evidence = {
                "lr_before": before,
                "lr_after": after,
                "level_after": level_after,
                "previous_peak": previous_top,
            }
        else:
            title = (
                f"lr rose again after its peak ({_times(top, trough)} from step {int(self.x[low])})"
            )
            message = (
                f"The LR rose from {trough:.3g} at step {int(self.x[low])} to {top:.3g} at step "
                f"{int(self.x[high])} ({_times(top, trough)} over {high - low} logged "
                f"interval{'' if high - low == 1 else 's'}), after it had already reached "
                f"{previous_top:.3g}: neither a warm restart (a climb from ~0 back to the peak "
                "after a completed decay) nor part of a periodic cycle."
            )
            start, end = int(self.x[low + 1]), int(self.x[high])
            before, after = trough, top
            evidence = {"lr_before": trough, "lr_after": top, "previous_peak": previous_top}
        if before > 0:
            evidence["ratio"] = after / before
        if loss_note:
            message += f" {loss_note}"
        return Finding(
            detector=NAME,
            title=title,
            severity=Severity.WARNING,
            metric=names.LR,
            step_start=start,
            step_end=end,
            message=message,
            evidence=evidence,
            fixes=FIXES_JUMP,
        )

    def _restarts_finding(self, restarts: list[_Rise]) -> Finding:
        steps = [int(self.x[r.low + 1]) for r in restarts]
        sharp = all(r.high - r.low <= 2 for r in restarts)
        kind = "warm restarts (SGDR)" if sharp else "a cyclic LR schedule"
        shown = ", ".join(str(s) for s in steps[:8]) + (", ..." if len(steps) > 8 else "")
        count = len(restarts)
        restarts_text = "1 restart" if count == 1 else f"{count} restarts"
        times = "once, at step" if count == 1 else f"{count} times, at steps"
        return Finding(
            detector=NAME,
            title=f"recognised {kind}: {restarts_text}",
            severity=Severity.INFO,
            metric=names.LR,
            step_start=steps[0],
            step_end=int(self.x[restarts[-1].high]),
            message=(
                f"The LR climbs back from near its cycle minimum to near its peak "
                f"{times} {shown}: {kind}, a deliberate schedule. "
                "Loss bumps right after each restart are expected."
            ),
            evidence={"restarts": len(restarts), "first_restart_step": steps[0]},
            fixes=(),
        )

    def _cliffs(self) -> list[Finding]:
        """Drops by >= jump_factor in one interval inside an otherwise smooth schedule."""
        p = self.params
        lr, d = self.lr, self.direction
        if lr.size < 4:
            return []
        moves = np.abs(np.diff(lr))
        j = np.arange(1, lr.size - 2)  # move j goes from point j to j + 1
        with np.errstate(all="ignore"):
            ratio = lr[j] / lr[j + 1]
        cliff = (
            (d[j] < 0)
            & (ratio >= p.jump_factor)
            & (lr[j + 1] >= p.near_zero_fraction * self.peak)
            & (d[j - 1] != 0)
            & (d[j + 1] != 0)
            & (moves[j] >= p.cliff_ratio * np.maximum(moves[j - 1], moves[j + 1]))
        )
        found = []
        for move in j[cliff]:
            before, after = float(lr[move]), float(lr[move + 1])
            step = int(self.x[move + 1])
            message = (
                f"The LR dropped from {before:.3g} at step {int(self.x[move])} to {after:.3g} "
                f"at step {step} ({before / after:.1f}x in one logged interval) inside an "
                "otherwise smooth schedule: not a step or plateau decay (those drop between "
                "flat stretches)."
            )
            loss_note = self._loss_after(step, step)
            found.append(
                Finding(
                    detector=NAME,
                    title=f"lr dropped {before / after:.0f}x at step {step}",
                    severity=Severity.WARNING,
                    metric=names.LR,
                    step_start=step,
                    step_end=step,
                    message=message + (f" {loss_note}" if loss_note else ""),
                    evidence={"lr_before": before, "lr_after": after, "ratio": before / after},
                    fixes=FIXES_JUMP,
                )
            )
        return found

    def _loss_after(self, start: int, end: int) -> str:
        """What the train loss did right after an LR change (evidence, not a condition)."""
        loss = self.run.metrics.get(names.TRAIN_LOSS)
        if loss is None or len(loss) < 4:
            return ""
        horizon = stats.step_after(loss.steps, end, 10)
        found = stats.excursion(loss.steps, loss.values, start, horizon, 20)
        if found is None:
            return ""
        if found.nonfinite_step is not None:
            return f"{names.TRAIN_LOSS} turned non-finite at step {found.nonfinite_step}."
        # The same bar as a blow-up after a gradient explosion: 6 sigma and +50%.
        if found.first_step_above(found.threshold(6.0, 0.5)) is not None:
            return (
                f"{names.TRAIN_LOSS} then rose from {found.baseline:.4g} to {found.peak:.4g} "
                f"(step {found.peak_step})."
            )
        return ""

    # --- case 4: ~0 long before the end

    def _zero_too_early(self) -> Finding | None:
        p = self.params
        zero_step = stats.lr_zero_step(self.x, self.lr, p.near_zero_fraction)
        if zero_step is None or self.span <= 0:
            return None
        last = float(self.x[-1])
        share = (last - zero_step) / self.span
        if share < p.min_zero_fraction:
            return None
        level = float(self.lr[int(np.searchsorted(self.x, zero_step))])
        message = (
            f"The LR fell below {p.near_zero_fraction:.0%} of its peak {self.peak:.3g} at step "
            f"{zero_step} ({level:.3g}) and stayed there to the last logged step "
            f"{int(last)}: the last {share:.0%} of the run barely trains."
        )
        loss: Series | None = self.run.metrics.get(names.TRAIN_LOSS)
        evidence: Evidence = {
            "zero_step": zero_step,
            "lr_at_zero_step": level,
            "peak_lr": self.peak,
            "share_of_run": share,
        }
        if loss is not None:
            window_start = zero_step - 0.2 * self.span
            lead_in = stats.change_over(loss.steps, loss.values, window_start, zero_step)
            if lead_in is not None and lead_in.falling():
                # The window as logged: it cannot reach back before the loss's first step.
                x, _ = stats.finite_xy(loss.steps, loss.values)
                first = float(x[int(np.searchsorted(x, window_start, side="left"))])
                message += (
                    f" {names.TRAIN_LOSS} was still falling when it did ({lead_in.start_level:.4g}"
                    f" -> {lead_in.end_level:.4g} over the preceding {zero_step - first:.0f}"
                    " steps)."
                )
                evidence["loss_still_falling"] = "yes"
        cuts = self._staircase_cuts(zero_step)
        severity = Severity.WARNING
        if cuts >= 3:
            # ReduceLROnPlateau (or a step schedule) reaching its floor cut by cut, each cut
            # after a stretch at a constant LR: the schedule answering a levelling loss, not
            # a horizon that is too short. Worth knowing, not a bug on this evidence.
            severity = Severity.INFO
            message += (
                f" It got there in {cuts} cuts between flat stretches, as ReduceLROnPlateau "
                "does when the loss levels off (or a step schedule with early milestones): "
                "the later steps could be saved, or the cuts made smaller."
            )
            evidence["cuts"] = cuts
        return Finding(
            detector=NAME,
            title=f"lr at ~0 from step {zero_step}, {share:.0%} of the run before its end",
            severity=severity,
            metric=names.LR,
            step_start=zero_step,
            step_end=int(last),
            message=message,
            evidence=evidence,
            fixes=(
                "Match the schedule's horizon to the run: set the decay length (T_max, "
                "num_training_steps, milestones) from the real number of optimiser steps",
                "If the LR was cut by a step or plateau schedule, use fewer or smaller cuts "
                "(gamma 0.1 -> 0.3), or stop the run where it stops learning",
            ),
        )

    def _staircase_cuts(self, zero_step: int) -> int:
        """The cuts by which the LR reached ~0, when it got there as a staircase (each down
        move a cut of >= 1.5x, at least as many flat moves as down moves), else 0."""
        end = int(np.searchsorted(self.x, zero_step)) + 1
        top = int(np.argmax(self.lr[:end]))
        moves = self.direction[top : end - 1]
        with np.errstate(all="ignore"):
            ratio = self.lr[top : end - 1] / self.lr[top + 1 : end]
        down = moves < 0
        if not down.any() or np.any(ratio[down] < 1.5):
            return 0
        if int(np.sum(moves == 0)) < int(down.sum()):
            return 0
        return int(down.sum())


def _times(after: float, before: float) -> str:
    """A ratio for a message: "10x", "0.5x", or "from 0" when there is none."""
    return f"{after / before:.3g}x" if before > 0 else "from 0"


DETECTOR = LrScheduleDetector()
