"""The loss chart of a PR comment or job summary: a Mermaid `xychart-beta` block.

GitHub renders a ```` ```mermaid ```` fence itself, so the chart needs no image upload,
no token and no network. The block uses a small subset of the syntax, the one every
Mermaid since 10.x parses: `xychart-beta`, a quoted `title`, `x-axis "step" LOW --> HIGH`,
`y-axis "..." LOW --> HIGH`, one or two `line [...]`, and an `init` directive that picks
the colours.

What it draws, and why this way:
- the run's training loss (else its eval loss, else the first metric whose name says
  loss) against step. A numeric x-axis spaces the values of a series evenly, so the
  series is cut into `BUCKETS` equal step ranges and each range gets exactly
  `SLOTS_PER_BUCKET` values: its first, smallest, largest and last finite value in step
  order (the M4 points of `downsample.py`, repeated to fill when a range has fewer). The
  line through them draws what the whole series draws at this size, so a one-step spike
  survives. A range with no point (a gap in logging) is interpolated; a range holding
  only NaN/Inf is drawn at the top edge and the caption says where.
- the value axis of the HTML charts (`axes.value_axis`): an outlier cap (values above
  it drawn at the top edge) and, for a loss spanning decades, log10 of the values
  (Mermaid has no log axis; the axis title says "log10").
- the flagged steps (every unsuppressed warning or error of the log) as a red line that
  sits on the bottom edge and rises to the top edge over the flagged steps, drawn before
  the loss so the loss stays on top. Not bars: on a numeric x-axis Mermaid draws each
  bar as wide as a tick interval (~1/8 of the chart), so a flagged range would start
  visibly early; the line's edges are exact to one slot (1/160 of the chart).

Mermaid numbers are plain decimals (`[+-]?digits[.digits]`, no exponent), written so.
Safety: the block holds our words and numbers only, never a metric name or any other
log-derived text, so nothing from a log can close the quoted title, end the fence, start
a directive or carry HTML. Which line is which metric is said in the caption under the
block (`caption`), ordinary Markdown the caller escapes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from trainspotter import names
from trainspotter.model import Finding, FloatArray, IntArray, Run, Series
from trainspotter.report import wording
from trainspotter.report.axes import value_axis
from trainspotter.report.common import charted_findings
from trainspotter.report.escape import format_number

BUCKETS = 40
"""Equal step ranges the x-axis is cut into (each gets SLOTS_PER_BUCKET values)."""
SLOTS_PER_BUCKET = 4
SLOTS = BUCKETS * SLOTS_PER_BUCKET
"""Values per series in the block (Mermaid spaces them evenly over the x-axis)."""
FLAG_COLOUR = "#d1242f"


def mermaid_number(value: float) -> str:
    """A finite float as Mermaid's grammar reads it: plain decimal, 4 significant digits."""
    text = np.format_float_positional(value, precision=4, unique=False, fractional=False, trim="-")
    return "0" if text in ("-0", "0.") else text.rstrip(".")


@dataclass(frozen=True)
class LossChart:
    """A Mermaid chart of one log's losses, and the facts its caption states."""

    metrics: tuple[str, ...]
    """The metrics drawn, in colour order (log-derived: escape them for the caption)."""
    block: str
    """The whole fenced block, ```` ```mermaid ```` to the closing fence, newline-ended."""
    log_scale: bool
    step_low: int
    step_high: int
    bucket_steps: float
    """Steps per bucket (each bucket is drawn as its first, min, max and last value)."""
    flagged: tuple[str, ...]
    """Ids of the findings whose steps are marked."""
    capped_above: float | None
    """The axis top when outliers above it are drawn at the top edge."""
    nonfinite_steps: tuple[int, int] | None
    """First and last step of the buckets that held only NaN/Inf (drawn at the top)."""


def chart_metrics(run: Run) -> list[str]:
    """The losses to chart: train and eval loss, or else the first other loss-like metric
    (by name); only metrics with two finite points at different steps."""
    canonical = [m for m in (names.TRAIN_LOSS, names.EVAL_LOSS) if _chartable(run, m)]
    if canonical:
        return canonical
    others = sorted(m for m in run.metrics if names.is_loss_like(m) and _chartable(run, m))
    return others[:1]


def _chartable(run: Run, metric: str) -> bool:
    series = run.metrics.get(metric)
    if series is None:
        return False
    finite = series.steps[np.isfinite(series.values)]
    return finite.size >= 2 and int(finite[-1]) > int(finite[0])


@dataclass(frozen=True)
class _Picked:
    """The points a chart draws, in step order, and which of them sit on the top edge."""

    index: IntArray
    top_edge: npt.NDArray[np.bool_]
    """True for the NaN/Inf points of a range that held no finite value."""


def _picked_points(series: Series, low: float, high: float) -> _Picked:
    """Per bucket, the first, lowest, highest and last finite point (at most 4, so the
    chart's slots always suffice); a bucket holding only NaN/Inf gives its first and last
    point, marked for the top edge. Not `downsample.m4_indices`: that one buckets the
    finite points alone, and these buckets must also hold the NaN/Inf-only ranges."""
    steps, values = series.steps.astype(np.float64), series.values
    edges = low + (high - low) * np.arange(1, BUCKETS, dtype=np.float64) / BUCKETS
    bounds = np.concatenate(([0], np.searchsorted(steps, edges, side="left"), [steps.size]))
    index: list[int] = []
    top_edge: list[bool] = []
    for start, end in itertools.pairwise(bounds):
        chunk = values[start:end]
        finite = np.flatnonzero(np.isfinite(chunk))
        if finite.size:
            lowest, highest = np.argmin(chunk[finite]), np.argmax(chunk[finite])
            chosen = np.unique([finite[0], finite[lowest], finite[highest], finite[-1]])
            index.extend(int(start + i) for i in chosen)
            top_edge.extend([False] * chosen.size)
        elif chunk.size:
            index.extend(sorted({int(start), int(end - 1)}))
            top_edge.extend([True] * (1 if end - start == 1 else 2))
    return _Picked(np.asarray(index, dtype=np.int64), np.asarray(top_edge, dtype=bool))


def _slot_positions(steps: FloatArray, low: float, high: float) -> IntArray:
    """Each picked point's slot: the one nearest its step, moved the least needed so
    that slots strictly increase (at most SLOTS points, so they always fit)."""
    ideal = np.rint((steps - low) / (high - low) * (SLOTS - 1)).astype(np.int64)
    count = ideal.size
    # forward: strictly increasing; backward: leave room for the points after each one
    pos = np.maximum.accumulate(ideal - np.arange(count)) + np.arange(count)
    room = SLOTS - 1 - (count - 1 - np.arange(count))
    reverse = np.minimum.accumulate((np.minimum(pos, room) + (count - 1 - np.arange(count)))[::-1])
    return np.asarray(reverse[::-1] - (count - 1 - np.arange(count)), dtype=np.int64)


def _flag_slots(findings: Sequence[Finding], low: float, high: float) -> npt.NDArray[np.bool_]:
    """Per slot: does a flagged finding's step range touch the slot's step range?"""
    width = (high - low) / (SLOTS - 1)
    centres = low + width * np.arange(SLOTS, dtype=np.float64)
    flags = np.zeros(SLOTS, dtype=bool)
    for finding in findings:
        flags |= (centres + width / 2 >= finding.step_start) & (
            centres - width / 2 <= finding.step_end
        )
    return flags


def loss_chart(run: Run, findings: Sequence[Finding]) -> LossChart | None:
    """The chart of the run's losses with `findings`' warnings and errors marked, or None
    when the run has no loss with two finite points at different steps."""
    metrics = chart_metrics(run)
    if not metrics:
        return None
    series = [run.metrics[m] for m in metrics]
    low = float(min(s.steps[0] for s in series))
    high = float(max(s.steps[-1] for s in series))
    axis = value_axis(np.concatenate([s.values for s in series]), log_allowed=True)
    if axis.log:
        y_low, y_high = float(np.log10(axis.low)), float(np.log10(axis.high))
    else:
        y_low, y_high = axis.low, axis.high
    flagged = charted_findings(findings)
    flags = _flag_slots(flagged, low, high)
    title = "Loss by step" + (" (log10)" if axis.log else "")
    if flags.any():
        title += ", flagged steps in red"
    y_title = "log10 loss" if axis.log else "loss"
    lines = [
        "```mermaid",
        _init_directive(len(metrics), with_flags=bool(flags.any())),
        "xychart-beta",
        f'    title "{title}"',
        f'    x-axis "step" {mermaid_number(low)} --> {mermaid_number(high)}',
        f'    y-axis "{y_title}" {mermaid_number(y_low)} --> {mermaid_number(y_high)}',
    ]
    if flags.any():
        lines.append(_line_statement(np.where(flags, y_high, y_low)))
    top_steps: list[int] = []
    for one in series:
        picked = _picked_points(one, low, high)
        drawn = one.values[picked.index]
        if axis.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                drawn = np.log10(np.where(drawn > 0, drawn, axis.low))
        drawn = np.where(picked.top_edge, y_high, np.clip(drawn, y_low, y_high))
        picked_steps = one.steps[picked.index].astype(np.float64)
        slots = _slot_positions(picked_steps, low, high)
        lines.append(_line_statement(np.interp(np.arange(SLOTS), slots, drawn)))
        top_steps.extend(int(s) for s in picked_steps[picked.top_edge])
    lines.append("```")
    return LossChart(
        metrics=tuple(metrics),
        block="\n".join(lines) + "\n",
        log_scale=axis.log,
        step_low=int(low),
        step_high=int(high),
        bucket_steps=(high - low) / BUCKETS,
        flagged=tuple(f.id for f in flagged),
        capped_above=axis.high if axis.capped else None,
        nonfinite_steps=(min(top_steps), max(top_steps)) if top_steps else None,
    )


def _line_statement(values: FloatArray) -> str:
    return "    line [" + ", ".join(mermaid_number(float(v)) for v in values) + "]"


LINE_COLOURS = ("#1f6feb", "#d4760a")
"""Train loss blue, eval loss orange (readable on GitHub's light and dark backgrounds)."""
COLOUR_NAMES = ("blue", "orange")


def _init_directive(lines: int, *, with_flags: bool) -> str:
    """The palette: Mermaid colours plots in order (the flag marker first when present)."""
    palette = ([FLAG_COLOUR] if with_flags else []) + list(LINE_COLOURS[:lines])
    return (
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "'
        + ", ".join(palette)
        + '"}}}}%%'
    )


def caption(chart: LossChart) -> str:
    """The chart in words (plain text, metric names not escaped: the caller escapes for
    Markdown): which line is which, how it was reduced, what sits on the top edge."""
    drawn = ", ".join(
        f"{colour}: {metric}" for colour, metric in zip(COLOUR_NAMES, chart.metrics, strict=False)
    )
    parts = [
        f"{drawn}, {wording.step_span(chart.step_low, chart.step_high)}"
        + (" (log10 axis)" if chart.log_scale else "")
        + f"; each of {BUCKETS} ranges of ~{format_number(round(chart.bucket_steps, 1))} steps "
        "drawn as its first, lowest, highest and last value"
    ]
    if chart.flagged:
        parts.append("red: steps flagged by " + ", ".join(chart.flagged))
    if chart.capped_above is not None:
        parts.append(f"values above {format_number(chart.capped_above)} drawn at the top edge")
    if chart.nonfinite_steps is not None:
        first, last = chart.nonfinite_steps
        where = wording.step_span(first, last)
        parts.append(f"NaN/Inf at {where} drawn at the top edge")
    return "; ".join(parts) + "."
