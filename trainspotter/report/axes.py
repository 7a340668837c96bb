"""Chart axes: Heckbert's nice-number ticks, the value-axis rules, tick labels.

Rules for a value axis (`value_axis`), in order:

1. Outlier cap: if the largest finite value exceeds 1.5x the 99th percentile, the axis
   stops at 1.5x the 99th percentile (rounded up to a nice tick): one spike to 1e4 must
   not flatten a loss curve that lives between 0.3 and 2. Values above the top are drawn
   clamped at the edge, with their real value labelled (the chart's job, not this one's).
2. Log scale: a metric the caller allows it for (losses and gradient norms: positive
   magnitudes that blow up multiplicatively) whose values span more than two decades
   (from the 1st percentile to the capped top) gets a log axis with decade ticks.
   Nothing else does, unless the caller lowers that span (`log_decades`: the HTML's
   LR chart goes log from one decade, so a schedule before a 100x jump stays visible).
3. Zero floor: a metric with no negative value starts at 0 (loss, LR, norms, throughput),
   so a curve's height reads as its size.

Ticks follow P. Heckbert, "Nice numbers for graph labels", Graphics Gems (1990): the tick
spacing is 1, 2 or 5 times a power of ten and the range is extended to whole ticks.
This module is pure arithmetic: it draws nothing and knows no metric names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

OUTLIER_FACTOR = 1.5
"""The axis stops at this multiple of the 99th percentile when the maximum exceeds it."""
OUTLIER_PERCENTILE = 99.0
LOG_DECADES = 2.0
"""A loss (or norm) spanning more than this many decades gets a log axis."""
TARGET_TICKS = 5
AXIS_LIMIT = 1e300
"""Axis arithmetic sees magnitudes up to this, and nonzero ones down to its inverse: a
value beyond (1e308) is drawn at the edge like a capped outlier, a smaller one (a denormal
such as 5e-324) at zero. Near the float limits, 1.5 x 1e308 overflows and 10**-324 is 0,
so ticks, spans and logarithms would fail (D1 in ../shared/ADVERSARIAL.md)."""


def nice_number(value: float, *, round_to_nearest: bool) -> float:
    """Heckbert's nice number: 1, 2, 5 or 10 times a power of ten, near `value` (>0).

    With `round_to_nearest` the closest nice number; otherwise the smallest nice number
    not below `value` (used for the whole range, so it is never cut)."""
    exponent = math.floor(math.log10(value))
    fraction = value / 10.0**exponent
    if round_to_nearest:
        nice = 1.0 if fraction < 1.5 else 2.0 if fraction < 3.0 else 5.0 if fraction < 7.0 else 10.0
    else:
        nice = (
            1.0 if fraction <= 1.0 else 2.0 if fraction <= 2.0 else 5.0 if fraction <= 5.0 else 10.0
        )
    return nice * 10.0**exponent


@dataclass(frozen=True)
class Ticks:
    """Nice ticks covering a range: `low`/`high` are whole multiples of `spacing`."""

    low: float
    high: float
    spacing: float
    values: tuple[float, ...]


def nice_ticks(low: float, high: float, target: int = TARGET_TICKS) -> Ticks:
    """Heckbert's loose labelling of [low, high] with about `target` ticks."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError("nice_ticks needs a finite range")
    if high < low:
        low, high = high, low
    if high == low:
        pad = abs(low) * 0.5 or 1.0
        low, high = (low - pad, high + pad) if low < 0 else (max(low - pad, 0.0), high + pad)
    span = nice_number(high - low, round_to_nearest=False)
    spacing = nice_number(span / max(target - 1, 1), round_to_nearest=True)
    tick_low = math.floor(low / spacing) * spacing
    tick_high = math.ceil(high / spacing) * spacing
    count = round((tick_high - tick_low) / spacing)
    values = tuple(_clean(tick_low + i * spacing, spacing) for i in range(count + 1))
    return Ticks(values[0], values[-1], spacing, values)


def _clean(value: float, spacing: float) -> float:
    """Remove binary noise (0.30000000000000004 -> 0.3) at the spacing's precision."""
    digits = max(0, -math.floor(math.log10(spacing))) + 2
    cleaned = round(value, digits)
    return 0.0 if cleaned == 0 else cleaned


def tick_label(value: float, spacing: float) -> str:
    """A tick label with as many decimals as the spacing needs (Heckbert's nfrac);
    scientific notation for very small or large magnitudes (`3e-4`, `2e6`)."""
    if value == 0:
        return "0"
    magnitude = max(abs(value), spacing)
    if magnitude >= 1e6 or spacing < 1e-3:
        head, exponent = f"{value:.2e}".split("e")
        return f"{head.rstrip('0').rstrip('.')}e{int(exponent)}"
    decimals = max(0, -math.floor(math.log10(spacing)))
    return f"{value:,.{decimals}f}"


def step_ticks(low: float, high: float, target: int) -> list[float]:
    """Ticks for the step axis, inside [low, high] (Heckbert's tight variant: the axis
    spans exactly the logged steps, so no tick lies outside it)."""
    if not high > low:
        return [low]
    spacing = nice_number((high - low) / max(target - 1, 1), round_to_nearest=True)
    first = math.ceil(low / spacing)
    last = math.floor(high / spacing)
    return [_clean(i * spacing, spacing) for i in range(first, last + 1)]


def step_label(step: float) -> str:
    """A step tick: `0`, `500`, `2.5k`, `120k`, `1M`, `1.5M`."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(step) >= size:
            text = f"{step / size:.2f}".rstrip("0").rstrip(".")
            return text + suffix
    return f"{step:.0f}"


@dataclass(frozen=True)
class ValueAxis:
    """A value (y) axis: its range, scale, ticks and whether it caps outliers."""

    low: float
    high: float
    log: bool
    ticks: tuple[float, ...]
    labels: tuple[str, ...]
    capped: bool
    """True when the outlier cap set `high`: values above it are drawn clamped."""

    def fraction(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Position of each value on the axis, 0 at `low` and 1 at `high` (unclipped)."""
        with np.errstate(all="ignore"):  # inf beyond the float range is drawn at the edge
            if self.log:
                logs = np.log10(np.where(values > 0, values, np.nan))
                lo, hi = math.log10(self.low), math.log10(self.high)
                return np.asarray((logs - lo) / (hi - lo), dtype=np.float64)
            return np.asarray((values - self.low) / (self.high - self.low), dtype=np.float64)

    def describe(self) -> str:
        """`log axis from 0.01 to 100` / `linear axis from 0 to 2.5 (outliers capped)`."""
        scale = "log" if self.log else "linear"
        cap = " (outliers above it drawn at the top edge)" if self.capped else ""
        return f"{scale} axis from {self.labels[0]} to {self.labels[-1]}{cap}"


def value_axis(
    values: npt.NDArray[np.float64], *, log_allowed: bool, log_decades: float = LOG_DECADES
) -> ValueAxis:
    """The axis for these values (any shape; NaN/Inf ignored) by the module's rules;
    `log_decades` lowers rule 2's span for a caller that wants it (an LR schedule: 1)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return _linear(nice_ticks(0.0, 1.0), maximum=0.0)
    maximum = float(finite.max())
    finite = np.clip(finite, -AXIS_LIMIT, AXIS_LIMIT)
    finite = np.where(np.abs(finite) < 1.0 / AXIS_LIMIT, 0.0, finite)
    low, high = float(finite.min()), float(finite.max())
    top = high
    p99 = float(np.percentile(finite, OUTLIER_PERCENTILE))
    if p99 > 0 and high > OUTLIER_FACTOR * p99 and high > low:
        top = OUTLIER_FACTOR * p99
    if log_allowed and low > 0:
        # The span is judged from the 1st percentile, so one tiny value (a near-zero
        # gradient norm at one step) does not turn a noisy flat metric logarithmic.
        p1 = float(np.percentile(finite, 100.0 - OUTLIER_PERCENTILE))
        if math.log10(top / p1) > log_decades:
            return _log_axis(low, top, maximum=maximum)
    return _linear(nice_ticks(0.0 if low >= 0 else low, top), maximum=maximum)


def _linear(ticks: Ticks, *, maximum: float) -> ValueAxis:
    labels = tuple(tick_label(v, ticks.spacing) for v in ticks.values)
    return ValueAxis(ticks.low, ticks.high, False, ticks.values, labels, maximum > ticks.high)


def _log_axis(low: float, high: float, *, maximum: float) -> ValueAxis:
    first = math.floor(math.log10(low))
    last = math.ceil(math.log10(high))
    if last == first:
        last += 1
    stride = max(1, math.ceil((last - first) / 8))
    exponents = list(range(first, last + 1, stride))
    if exponents[-1] < last:
        exponents.append(exponents[-1] + stride)
    ticks = tuple(10.0**e for e in exponents)
    labels = tuple(_decade_label(e) for e in exponents)
    return ValueAxis(ticks[0], ticks[-1], True, ticks, labels, maximum > ticks[-1])


def _decade_label(exponent: int) -> str:
    if -3 <= exponent <= 5:
        return f"{10.0**exponent:,.{max(0, -exponent)}f}"
    return f"1e{exponent}"
