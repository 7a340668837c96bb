"""The plateau verdicts on one flat tail: not learning, LR died, collapsed, stalled,
converged; each returns severity, title, message, fixes and the finding's first step."""

from __future__ import annotations

import numpy as np

from trainspotter.detectors import stats, stuck
from trainspotter.detectors.base import fmt
from trainspotter.detectors.plateau.curve import Context
from trainspotter.detectors.plateau.params import EVAL_SETTLED_FRACTION, PlateauParams
from trainspotter.model import Evidence, FloatArray, Severity
from trainspotter.names import EVAL_LOSS

Verdict = tuple[Severity, str, str, tuple[str, ...], int]
"""severity, title, message, fixes, first step of the finding."""


def _change_words(first: float, last: float) -> str:
    """Says "ended 3.7% higher" or "ended 4.2% lower": the sign lives in the word."""
    if first == 0:
        return f"ended at {fmt(last)}"
    pct = 100 * (last - first) / abs(first)
    return f"ended {abs(pct):.1f}% {'higher' if pct > 0 else 'lower'}"


def not_learning(
    ctx: Context,
    params: PlateauParams,
    x: FloatArray,
    y: FloatArray,
    falling: bool,
    noise: float,
) -> Verdict:
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
    elif p.best_level < (1.0 - params.not_learning_drop) * p.start_level:
        # The smoothed minimum dips below the band, but no further than a flat curve's
        # smoothed noise reaches: say both, so the numbers agree with a plot.
        message += (
            f", with no significant downward trend over its {y.size} logged points. Its "
            f"lowest smoothed level, {fmt(p.best_level)}, is "
            f"{fmt(100 * (p.start_level - p.best_level) / ctx.start_abs)}% below where it "
            f"started, but no more than the smoothed curve's own noise explains (the "
            f"per-point scatter is {fmt(noise)}): never clearly "
            f"{fmt(100 * params.not_learning_drop)}% below."
        )
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


def lr_died(ctx: Context, params: PlateauParams, evidence: Evidence) -> Verdict | None:
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


def collapsed(
    ctx: Context, params: PlateauParams, x: FloatArray, y: FloatArray, evidence: Evidence
) -> Verdict | None:
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


def _annealing(ctx: Context, params: PlateauParams) -> bool:
    """Was the LR already annealed (below a tenth of its peak) when the loss went flat?"""
    if not ctx.has_lr:
        return False
    return ctx.lr_at(ctx.plateau.start_step) < params.lr_annealed_fraction * ctx.peak_lr


def _annealed_run(ctx: Context, params: PlateauParams) -> bool:
    """Was the LR annealed on purpose: falling through the flat stretch to below a tenth
    of its peak at the end (cosine, linear or step decay run to completion)?"""
    if not ctx.has_lr:
        return False
    end = float(ctx.lr_y[-1])
    return end < params.lr_annealed_fraction * ctx.peak_lr and end < ctx.lr_at(
        ctx.plateau.start_step
    )


def stalled(ctx: Context, params: PlateauParams) -> Verdict | None:
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


def _early_stop_fix(ctx: Context, evidence: Evidence) -> str:
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


def converged(ctx: Context, params: PlateauParams, evidence: Evidence) -> Verdict:
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
