"""The overfitting detector's parts that judge an eval loss against its best evaluation.

- `sustained_rise`: the run ends well above its best evaluation and stays there, by more
  than the noise of a best-of-n pick could explain (a Bonferroni bound for the least of n
  noisy evaluations plus the spread of a median, autocorrelation allowed for:
  `eval_jitter`);
- `train_trend`, `train_clause`: what the train loss did over the same evaluations, in
  words its quoted numbers agree with;
- `Rise`, `short_rise`, `short_run_text`: a rise from the lowest evaluation, and the
  short-run rule (the order of the evaluations after the lowest, when there are too few
  for a jitter estimate) with what it rests on, in words;
- `degrading_title`: the title of an eval loss that got worse without a falling train loss;
- `keep_best_fix`: how to keep the best checkpoint in the words of the log's framework
  (the other metrics' bests: `eval_pairs`).

Apart from `overfitting.py` so the detector module stays one readable unit (< 500 lines).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainspotter import names
from trainspotter.detectors import idioms, stats
from trainspotter.detectors.eval_jitter import (
    best_of_n_sigmas,
    curve_noise,
    eval_jitter,
)
from trainspotter.model import FloatArray, Run, Series

TRAIN_BLOWUP = 10.0
"""A train loss this many times its level at the eval minimum has blown up (the examples'
criterion for a loss blow-up): divergence's finding, and the eval's rise is its echo."""


@dataclass(frozen=True)
class SustainedRise:
    """An eval loss whose last evaluations all sit well above its best evaluation."""

    k: int
    """Index of the best evaluation (raw), or the centre of the smoothed minimum."""
    width: int
    """1 for the raw best, the rolling-median width for the smoothed minimum."""
    min_level: float
    end_level: float
    """Median of the last `recent` evaluations."""
    recent: int
    lowest_last: float
    """The lowest of the last `evals` evaluations (`sustained_rise`'s argument)."""
    last: int
    """How many last evaluations `lowest_last` is the lowest of."""
    sigma: float
    """Point-to-point noise of the whole curve (the smaller of two robust estimates)."""
    needed_sigmas: float
    """A flat noisy curve's end level stays within this many sigma of its best (95%)."""
    level: float
    after: int
    """Evaluations after the baseline's window."""

    @property
    def rise(self) -> float:
        return self.end_level - self.min_level


def smoothing_width(n: int, fraction: float) -> int:
    """Odd rolling-median width for n evaluations (3 to 51); 1 below 7 evaluations, where a
    3-point median mostly averages the two edge points."""
    return stats.window_points(n, fraction, 3, 51) | 1 if n >= 7 else 1


def sustained_rise(
    y: FloatArray, *, fraction: float, evals: int, alpha: float, smoothing_fraction: float
) -> SustainedRise | None:
    """The run ends at least `fraction` above its best evaluation, beyond the noise, with
    each of its last `evals` evaluations half the rise or more above the best; else None.

    Two baselines, each tested on its own: the lowest raw evaluation (a best evaluation at
    the very start is invisible to a centred rolling median) and the smoothed minimum (on a
    long curve, its median of `width` values is far less noisy than any one evaluation).
    The end level is the median of the later half of the evaluations after the baseline's
    window (at least `evals` of them). Under a flat curve, the baseline, the least of n
    values (medians of `width`), sits at most Phi^-1(1 - alpha / n) of their sd below the
    level (Bonferroni), and the median of the m recent values at most 1.645 of its sd
    above it, autocorrelation allowed for (`EvalJitter.flat_bound`; with independent
    noise sigma, sigma and 1.2533 sigma / sqrt(m)): the rise must exceed the sum
    (`needed_sigmas` in point-to-point sigmas). A raw best further below its neighbours'
    median than `best_of_n_sigmas` is a wild evaluation and no baseline."""
    n = int(y.size)
    if n <= evals:
        return None
    width = smoothing_width(n, smoothing_fraction)
    sigma = curve_noise(y)
    raw_best = int(np.argmin(y))
    baselines = [(raw_best, 1, float(y[raw_best]))]
    if width > 1:
        smooth = stats.rolling_median(y, width, center=True)
        # A raw best further below the median of its neighbours than Gaussian noise puts
        # the least of n values is one wild evaluation (a heavy-tailed eval set), not a
        # level the model held: only the smoothed minimum is a baseline then.
        if float(smooth[raw_best] - y[raw_best]) > best_of_n_sigmas(n, alpha) * sigma:
            baselines = []
        k = int(np.argmin(smooth))
        baselines.append((k, width, float(smooth[k])))
    for k, w, min_level in baselines:
        after = n - 1 - (k + w // 2)
        if after < evals:
            continue
        recent = max(evals, after // 2)
        end_level = float(np.median(y[-recent:]))
        level = abs(min_level) if min_level != 0 else stats.level_scale(y)
        rise = end_level - min_level
        jitter = eval_jitter(y, k)
        bound = jitter.flat_bound(n, w, recent, alpha)
        needed = bound / sigma if sigma > 0 else 0.0
        lowest_last = float(np.min(y[-evals:]))
        if rise >= fraction * level and rise >= bound and lowest_last >= min_level + rise / 2:
            return SustainedRise(
                k,
                w,
                min_level,
                end_level,
                recent,
                lowest_last,
                evals,
                sigma,
                needed,
                level,
                after,
            )
    return None


@dataclass(frozen=True)
class Rise:
    """How an eval loss rose from its (smoothed) minimum."""

    k: int
    """Index of the smoothed minimum."""
    width: int
    min_level: float
    end_level: float
    sigma: float
    level: float
    after: int
    """Evaluations after the minimum."""
    few: bool
    """Judged on the short-run rule (fewer than `short_run_evals` evaluations)."""
    rank_p: float = 1.0
    """Short-run rule: the chance that exchangeable noise puts the lowest evaluation
    `after` from the end with every later one higher than the one before."""

    @property
    def rise(self) -> float:
        return self.end_level - self.min_level


def short_rise(
    y: FloatArray, *, min_after: int, min_rise: float, few_points_rise: float, alpha: float
) -> Rise | None:
    """A short run's rise (fewer than 8 evaluations, too few for a jitter
    estimate): the lowest evaluation, then `min_after` or more, each higher than
    the one before, the last `min_rise` above the lowest when that order alone is
    significant (1 / (n m!) < `alpha` for m rises among n evaluations), else
    `few_points_rise` above it (the effect size carries the evidence); None otherwise."""
    n = int(y.size)
    k = int(np.argmin(y))
    after = n - 1 - k
    if after < min_after or not bool(np.all(np.diff(y[k:]) > 0)):
        return None
    min_level, end = float(y[k]), float(y[-1])
    level = abs(min_level) if min_level != 0 else stats.level_scale(y)
    rank_p = 1.0 / (n * math.factorial(after))
    needed = min_rise if rank_p < alpha else few_points_rise
    if level <= 0 or end - min_level < needed * level:
        return None
    return Rise(k, 1, min_level, end, curve_noise(y), level, after, few=True, rank_p=rank_p)


def short_run_text(n: int, shape: Rise, alpha: float) -> str:
    """What a short-run finding rests on, in numbers (class 12: severity follows evidence)."""
    order = (
        f" This rests on only {n} evaluations: the lowest, then {shape.after} each higher "
        f"than the one before, an order exchangeable noise gives with probability "
        f"1/({n} x {shape.after}!) = {shape.rank_p:.2g}"
    )
    if shape.rank_p < alpha:
        return order + ": the order itself is unlikely to be chance."
    return (
        order + ", too likely to decide alone: the rise's size does (a rise this large is hard "
        "to get by chance), but one more evaluation would tell a trend from a one-off bump."
    )


def degrading_title(
    metric: str, trend: TrainTrend, rise_pct: float, how_much: str | None = None
) -> str:
    """The title of an eval loss that got worse while the train loss did not fall: says
    what the train loss did instead (the detector id stays `overfitting`); `how_much`
    replaces the default account of the rise."""
    how = {
        "rising": f"while {trend.name} rises",
        "flat": f"while {trend.name} is flat",
        "absent": f"({trend.name} not logged)",
    }[trend.state()]
    how_much = how_much or f"rose {rise_pct:.0f}% above its best and stayed there"
    return f"{metric} degrading {how}: {how_much}"


def sustained_text(
    metric: str, x: FloatArray, y: FloatArray, rise: SustainedRise, trend: TrainTrend
) -> tuple[str, str, dict[str, float | int]]:
    """The title, message and evidence of a sustained rise above the best evaluation."""
    k = rise.k
    rise_pct = percent(rise.rise, rise.level)
    first_recent = int(x[-rise.recent])
    base = (
        f"{rise.min_level:.4g} at step {int(x[k])}"
        if rise.width == 1
        else f"{rise.min_level:.4g} (median of {rise.width} evaluations) around step {int(x[k])}"
    )
    noise_text = (
        f"{rise.rise / rise.sigma:.1f}x its point-to-point noise {rise.sigma:.3g}, where a "
        f"flat curve's best-of-{y.size} and recent median stay within "
        f"{rise.needed_sigmas:.1f}x at 95%"
        if rise.sigma > 0
        else "its evaluations show no jitter"
    )
    message = (
        f"{metric} was best at {base} and ends {rise_pct:.0f}% above it: the median of its "
        f"last {rise.recent} evaluations (steps {first_recent}-{int(x[-1])}) is "
        f"{rise.end_level:.4g} ({noise_text}), and even the lowest of the last {rise.last} "
        f"is {rise.lowest_last:.4g}. Meanwhile {train_clause(trend)}"
    )
    state = trend.state()
    if state == "falling":
        message += "."
        title = f"{metric} rising from its minimum while {trend.name} falls (overfitting)"
    else:
        message += (
            ": not overfitting's textbook signature (look for a learning rate too high for a "
            "fine-tune, a train/eval mismatch or a data change), but the model the run ends "
            "with is clearly worse on the eval set than its best."
        )
        title = degrading_title(metric, trend, rise_pct)
    evidence: dict[str, float | int] = {
        "min_step": int(x[k]),
        "min_level": rise.min_level,
        "end_level": rise.end_level,
        "rise": rise.rise,
        "rise_percent": rise_pct,
        "eval_noise": rise.sigma,
        "evaluations": int(y.size),
        "evaluations_after_min": rise.after,
        "noise_sigmas_needed": rise.needed_sigmas,
    }
    return title, message, evidence


def percent(rise: float, level: float) -> float:
    return 100.0 * rise / level if level > 0 else math.inf


def onset_index(y: FloatArray, k: int, width: int) -> int:
    """Index of the lowest raw evaluation of the (smoothed) valley at `k`: the checkpoint a
    user would go back to, where the episode starts."""
    lo, hi = max(k - width // 2, 0), k + width // 2 + 1
    return lo + int(np.argmin(y[lo:hi]))


def raw_at(series: Series, step: float) -> tuple[int, float] | None:
    """The last finite (step, value) of `series` at or before `step` (the first one when
    none is before it)."""
    x, y = stats.finite_xy(series.steps, series.values)
    if y.size == 0:
        return None
    i = max(int(np.searchsorted(x, step, side="right")) - 1, 0)
    return int(x[i]), float(y[i])


@dataclass(frozen=True)
class TrainLevel:
    """The train loss's level over one evaluation interval, and how to quote it."""

    value: float
    text: str


def train_level(series: Series, after_step: float, upto_step: float) -> TrainLevel | None:
    """The train loss over the evaluation interval (after_step, upto_step]: the raw value
    when one point was logged there, the median of the points when several, the last raw
    value at or before `upto_step` when none."""
    x, y = stats.finite_xy(series.steps, series.values)
    inside = (x > after_step) & (x <= upto_step)
    if int(inside.sum()) == 1 or not inside.any():
        raw = raw_at(series, upto_step)
        return None if raw is None else TrainLevel(raw[1], f"{raw[1]:.4g} at step {raw[0]}")
    xs, ys = x[inside], y[inside]
    value = float(np.median(ys))
    text = f"median {value:.4g} of the {ys.size} logged in steps {int(xs[0])}-{int(xs[-1])}"
    return TrainLevel(value, text)


@dataclass(frozen=True)
class TrainTrend:
    """What the train loss did from the eval minimum to the last evaluation."""

    change: stats.Change | None
    start: TrainLevel | None
    end: TrainLevel | None
    falls: bool
    name: str = names.TRAIN_LOSS
    """The train metric judged: the eval loss's own train counterpart (`train/box_loss` for
    `val/box_loss`, `names.train_counterpart`), else `train/loss`."""

    def blew_up(self) -> bool:
        """The train loss over the last evaluation interval is `TRAIN_BLOWUP` times (or
        more) its level over the interval of the eval minimum (both positive)."""
        start, end = self.start, self.end
        return start is not None and end is not None and 0 < TRAIN_BLOWUP * start.value <= end.value

    def state(self) -> str:
        """'falling' (as `train_trend` decides), 'rising' (the later half's median 10% or
        more above the earlier's: the two interval levels when too few points for halves),
        'flat' otherwise (a lower end without a significant trend is not falling), 'absent'
        without a train loss."""
        if self.falls:
            return "falling"
        if self.start is None or self.end is None:
            return "absent"
        if self.change is not None:
            start, end = self.change.start_level, self.change.end_level
        else:
            start, end = self.start.value, self.end.value
        return "rising" if end > start + 0.1 * abs(start) else "flat"


def train_trend(
    train: Series | None, x: FloatArray, k: int, alpha: float, name: str = names.TRAIN_LOSS
) -> TrainTrend:
    """The train loss `name` over [eval minimum, last evaluation]: "kept falling" needs a
    falling trend inside the range AND the level over the last evaluation interval below the
    level over the interval that ends at the minimum (a train loss that jumped at the minimum
    and is coming back down has a falling trend but did not improve on where it was)."""
    if train is None:
        return TrainTrend(None, None, None, falls=False, name=name)
    change = stats.change_over(train.steps, train.values, float(x[k]), float(x[-1]))
    before_min = float(x[k - 1]) if k > 0 else -math.inf
    start = train_level(train, before_min, float(x[k]))
    end = train_level(train, float(x[-2]), float(x[-1]))
    falls = (
        change is not None
        and change.falling(alpha)
        and start is not None
        and end is not None
        and end.value < start.value
    )
    return TrainTrend(change, start, end, falls, name)


def train_clause(trend: TrainTrend) -> str:
    """What the train loss did, in words its quoted numbers agree with: the two interval
    levels `falls` compared when it kept falling or rose, the trend test when it is flat
    (a noisy train loss's half medians or single points can differ without a trend)."""
    if trend.start is None or trend.end is None:
        return f"{trend.name} is not logged"
    levels = f"({trend.start.text}, then {trend.end.text})"
    state = trend.state()
    if state != "flat":
        return f"{trend.name} {'kept falling' if state == 'falling' else 'rose'} {levels}"
    change = trend.change
    if change is None or change.n < 8:
        return f"{trend.name} did not keep falling {levels}"
    return (
        f"{trend.name} is flat: no significant trend over those steps (Kendall tau "
        f"{change.tau:.2f}, Mann-Kendall p = {change.p_value:.2g} over {change.n} points)"
    )


def keep_best_fix(run: Run, metric: str, step: int, value: float) -> str:
    """Keep the best checkpoint, in the words of the log's framework."""
    head = f"Load the checkpoint at step {step} (best {metric} {value:.4g}), or keep the best "
    used = idioms.framework(run)
    if used == "transformers":
        how = "automatically (transformers: load_best_model_at_end=True with metric_for_best_model)"
    elif used == "lightning":
        how = "automatically (Lightning: ModelCheckpoint(monitor=..., mode='min', save_top_k=1))"
    elif used == "keras":
        how = (
            "automatically (Keras: ModelCheckpoint(save_best_only=True) or "
            "EarlyStopping(restore_best_weights=True))"
        )
    else:
        how = "checkpoint automatically (save whenever the monitored eval metric improves)"
    return head + how
