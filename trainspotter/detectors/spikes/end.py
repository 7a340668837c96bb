"""Spikes at the end of the log: the last logged points, which no later point can show
coming back.

The trailing-window rule (`scoring`) judges a jump by the noise before it and then by what
the curve did after it: a single point back at the next one is one hard batch (info). At
the last logged point there is no "after", so a heavy-tailed noise point and the start of
a blow-up look alike, and a metric shorter than `min_points` (a 10-epoch Keras log) is not
judged by that rule at all. This rule judges the last 1 to `recovery_points` - 1 logged
points with the evidence that exists before them: they are far above the level before them
(`min_ratio`, `end_z` noise sigmas) and beyond anything the curve did before
(`end_history_multiple` times the largest earlier rise), and large in absolute terms
(`scoring.large_enough`). It never makes an error: the evidence is the last points alone.
When the logged LR rose just before the tail (`scoring.lr_rise_before`, the test the run
rule drops bursts with), the episode carries that rise, and the message says the loss is
answering the schedule rather than blowing up. A GAN's player losses
(`names.adversarial_losses`) are not judged here: each moves with the other player's skill,
so a last epoch 1.5x up is the game as often as a blow-up, and this rule's lower bar
(`end_z` sigmas on a short log) would call it one. An eval loss's tail while the train loss
blows up over the same steps (`train_blow_up`: non-finite, or 10x its level) is that
divergence seen on the eval set: it is kept as info naming the train loss's step, since
divergence reports the incident (overfitting's rule for an eval rise that is an echo).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from trainspotter.detectors import stats
from trainspotter.detectors.spikes.params import SpikesParams
from trainspotter.detectors.spikes.scoring import (
    RECENT_POINTS,
    Curve,
    Episode,
    large_enough,
    logging_resolution,
    lr_rise_before,
    noise_floor,
)
from trainspotter.model import FloatArray, Series

BLOW_UP_RATIO = 10.0
"""A train loss at 10x its level (or non-finite) has diverged: overfitting's rule for an
eval rise that is the train loss's echo."""


def train_blow_up(train: tuple[str, Series] | None, from_step: int) -> tuple[str, int] | None:
    """The train loss (name, series) turning non-finite, or reaching `BLOW_UP_RATIO` times
    the median of its last `RECENT_POINTS` finite points up to `from_step`, at or after
    `from_step`: (its name, the first such step); None when it did not, or is not logged."""
    if train is None:
        return None
    name, series = train
    after = series.steps >= from_step
    if not after.any():
        return None
    steps, values = series.steps[after], series.values[after]
    before = series.values[~after]
    before = before[np.isfinite(before)][-RECENT_POINTS:]
    bad = ~np.isfinite(values)
    if before.size and float(np.median(before)) > 0:
        with np.errstate(invalid="ignore"):
            bad |= values >= BLOW_UP_RATIO * float(np.median(before))
    if not bad.any():
        return None
    return name, int(steps[int(np.argmax(bad))])


def end_episode(
    curve: Curve, params: SpikesParams, lr: Series | None = None, moving_target: bool = False
) -> Episode | None:
    """The longest tail of the log's last points (1 to `recovery_points` - 1 of them, with
    at least `min_baseline` points before) that passes `_tail_jump`, as an episode the log
    ends on, with the rise of the learning rate `lr` just before it when there was one
    (`scoring.lr_rise_before`); None when the last point itself does not pass, when the
    metric ends non-finite (then its last finite point is not the last logged one: it never
    came back, which the trailing-window rule reports as an error), or when it is a
    `moving_target` (a GAN player's loss, `names.adversarial_losses`: its level follows the
    other player, so the last points carry no evidence of a blow-up on their own)."""
    if curve.ends_nonfinite or moving_target:
        return None
    found = None
    for width in range(1, params.recovery_points):
        start = curve.values.size - width
        if start < params.min_baseline:
            break
        # Not stopping at a width that fails: a tail of 3 raised points fails at width 2,
        # whose history holds the first of them.
        found = _tail_jump(curve, start, params) or found
    if found is None or not large_enough(curve, found, params):
        return None
    rise = lr_rise_before(lr, curve.steps, found.start)
    return found if rise is None else dataclasses.replace(found, lr_rise=rise)


def _tail_jump(curve: Curve, start: int, params: SpikesParams) -> Episode | None:
    """The points from `start` to the end as an episode when every one of them stands at
    least `min_ratio` and `end_z` noise sigmas above the level before them (the median of
    the `RECENT_POINTS` before `start`; the noise from the differences of up to `window`
    points before it, floored as `scoring.spike_scores` floors it), and the lowest of them
    is at least `end_history_multiple` times as far above it as any earlier point rose
    above the median of the points before it."""
    values = curve.values
    before = values[:start]
    level = float(np.median(before[-RECENT_POINTS:]))
    sigma = _noise(curve, before, level)
    tail = values[start:]
    low = float(np.min(tail))
    if low - level < curve.min_jump or (low - level) / sigma < params.end_z:
        return None
    rise, at = earlier_rise(before)
    if low - level < params.end_history_multiple * rise:
        return None
    peak = start + int(np.argmax(tail))
    z = (float(values[peak]) - level) / sigma
    return Episode(
        start,
        values.size - 1,
        peak,
        level,
        z,
        None,
        math.nan,
        None,
        sigma=sigma,
        by_end=True,
        earlier_rise=rise,
        earlier_rise_at=at,
    )


def _noise(curve: Curve, before: FloatArray, level: float) -> float:
    """The noise sigma of the points before a tail, as the trailing-window rule measures it
    (MAD of first differences / sqrt 2), floored at the logging resolution and at 1% of the
    smallest jump that counts (`scoring.noise_floor`)."""
    noise = stats.noise_scale(before[-curve.window :])
    floor = noise_floor(curve, np.array([level]), logging_resolution(curve.raw))
    return max(noise, float(floor[0]))


def earlier_rise(values: FloatArray) -> tuple[float, int | None]:
    """The largest rise of a point above the median of the `RECENT_POINTS` points before
    it, over the points of `values` that have that many before them (0 and None when none
    rose): how far the curve's own noise and the incidents it came back from have reached.
    (An odd count, so the median is one of the points, in log or linear units alike.)"""
    k = RECENT_POINTS
    if values.size <= k:
        return 0.0, None
    level_before = stats.rolling_median(values, k)[k - 1 : -1]
    rises = values[k:] - level_before
    i = int(np.nanargmax(rises))
    if not float(rises[i]) > 0:
        return 0.0, None
    return float(rises[i]), i + k


def settle_end(found: list[Episode], end: Episode | None, curve: Curve) -> list[Episode]:
    """The trailing-window rule's episodes with the log's end judged by this rule: `end`
    replaces the episodes inside its tail (an episode that began before the tail and never
    came back keeps the incident, `end` is then dropped); without `end`, a window episode
    that is the last logged point alone is marked `within_history` (info: an earlier point
    rose at least half as far, in log units, and the curve came back)."""
    last = curve.values.size - 1
    if curve.ends_nonfinite:
        return found  # its last finite point is not the end of the log
    if end is not None:
        if any(e.start < end.start and e.recovered is None for e in found):
            return found
        return [e for e in found if e.start < end.start] + [end]
    if not found or not found[-1].start == found[-1].end == last:
        return found
    rise, at = earlier_rise(curve.values[:last])
    if at is None:
        return found
    lone = dataclasses.replace(
        found[-1], earlier_rise=rise, earlier_rise_at=at, within_history=True
    )
    return [*found[:-1], lone]
