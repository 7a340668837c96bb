"""One inline SVG line chart: metric series against step, with findings shaded.

What a chart shows:
- each series as a line (downsampled with M4, `downsample.py`; a gap where values are
  NaN/Inf), with dots when a series has few points (an eval metric logged 8 times);
- the value axis by `axes.value_axis` (nice ticks, zero floor, log for a wide loss or
  gradient norm, outlier cap); points above a capped axis as triangles on the top edge, the largest
  few labelled with their real value;
- NaN and Inf as marked bands at the steps where they were logged;
- findings as bands over their step ranges in severity colours, labelled with their id
  and linked to the finding's entry in the page;
- an SVG `<title>` and `<desc>` saying in words what the chart shows.

Colours and fonts come from CSS classes (the HTML page's stylesheet, light and dark), so
this module writes no colour. It never emits script, event handlers or external
references; every log-derived string passes through `escape.html_text`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from trainspotter.model import Finding, FloatArray, Series
from trainspotter.report.axes import ValueAxis, step_label, step_ticks, value_axis
from trainspotter.report.common import step_range
from trainspotter.report.downsample import m4_indices
from trainspotter.report.escape import format_number, html_name, html_text, shorten

TITLE_ROW = 22
LABEL_ROW = 16
MAX_LABEL_ROWS = 3
MARGIN_LEFT = 62
MARGIN_RIGHT = 18
MARGIN_BOTTOM = 28
DOTS_BELOW = 80
"""Series with at most this many finite points also get a dot per point."""
CLAMP_LABELS = 4
"""At most this many clamped points get their value written next to them."""
NAME_LIMIT = 80


@dataclass(frozen=True)
class ChartLine:
    """One series in a chart; `style` is the CSS class index (line-0, line-1, ...)."""

    name: str
    series: Series
    style: int = 0
    candidates: npt.NDArray[np.int64] | None = None
    """Finite points worth drawing at any size up to some width (`for_sizes`): each
    size's M4 runs on these instead of the whole series."""


@dataclass(frozen=True)
class Chart:
    """What to draw: a title (our words), the series and the findings to shade."""

    title: str
    lines: tuple[ChartLine, ...]
    findings: tuple[Finding, ...] = ()
    log_allowed: bool = False
    log_forced: bool = False
    """A log axis whatever the span (the caller judged it: an LR schedule that jumps or
    spans decades), on the positive values; a value of 0 sits on the bottom edge."""


@dataclass(frozen=True)
class _Frame:
    """Pixel geometry of the plot area and the step-to-x mapping."""

    left: float
    right: float
    top: float
    bottom: float
    step_low: float
    step_high: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top

    def x(self, steps: npt.ArrayLike) -> FloatArray:
        span = self.step_high - self.step_low
        s = np.asarray(steps, dtype=np.float64)
        if span <= 0:
            return np.full(s.shape, self.left + self.width / 2)
        return np.asarray(self.left + (s - self.step_low) / span * self.width, dtype=np.float64)

    def y(self, fraction: FloatArray) -> FloatArray:
        return np.asarray(self.bottom - np.clip(fraction, 0.0, 1.0) * self.height)


def render_chart(
    chart: Chart,
    *,
    step_domain: tuple[int, int],
    width: int,
    height: int,
    element_id: str,
    anchor_prefix: str,
    css_class: str = "",
    axis: ValueAxis | None = None,
) -> str:
    """The chart as an `<svg>` element (no XML prolog, for inline use in HTML).

    `step_domain` is shared by the charts of one log so their bands line up;
    `anchor_prefix + finding.id` is the fragment id of each finding's entry; `axis`
    (`chart_axis(chart)`, computed once for several sizes of one chart) saves time."""
    axis = axis or chart_axis(chart)
    label_rows = _label_rows(chart.findings, step_domain, width)
    legend_row = _legend_row(chart, axis, width)
    rows = max(label_rows.values(), default=-1) + 1
    frame = _Frame(
        left=MARGIN_LEFT,
        right=width - MARGIN_RIGHT,
        top=TITLE_ROW + (legend_row + rows) * LABEL_ROW + 6,
        bottom=height - MARGIN_BOTTOM,
        step_low=float(step_domain[0]),
        step_high=float(step_domain[1]),
    )
    parts: list[str] = []
    parts.append(_y_axis(axis, frame))
    parts.append(_x_axis(frame))
    label_top = TITLE_ROW + legend_row * LABEL_ROW
    parts.extend(_bands(chart.findings, frame, label_rows, anchor_prefix, label_top))
    marks, marks_summary = _nonfinite_marks(chart.lines, frame)
    parts.append(marks)
    summaries: list[str] = []
    for line in chart.lines:
        drawn, summary = _line(line, axis, frame)
        parts.append(drawn)
        summaries.append(summary + ".")
    if marks_summary:
        summaries.append(marks_summary)
    parts.append(_frame_box(frame))
    parts.append(_heading(chart, axis, width, legend_row))
    title = html_text(_title_text(chart, axis))
    desc = html_text(_description(chart, axis, summaries))
    return (
        f'<svg class="{" ".join(("chart", css_class)).strip()}" viewBox="0 0 {width} {height}" '
        f'role="img" '
        f'aria-labelledby="{element_id}-t {element_id}-d">'
        f'<title id="{element_id}-t">{title}</title>'
        f'<desc id="{element_id}-d">{desc}</desc>' + "".join(parts) + "</svg>"
    )


def for_sizes(chart: Chart, widest: int) -> Chart:
    """The chart with each line's M4 candidates for plots up to `widest` units wide, so
    drawing it at several sizes reads a long series once, not once per size (M4 of
    the M4 points keeps each narrower column's first, last, min and max)."""
    plot_width = max(1, widest - MARGIN_LEFT - MARGIN_RIGHT)
    lines = []
    for line in chart.lines:
        finite_idx = np.flatnonzero(np.isfinite(line.series.values))
        local = m4_indices(
            line.series.steps[finite_idx], line.series.values[finite_idx], plot_width
        )
        lines.append(replace(line, candidates=finite_idx[local]))
    return replace(chart, lines=tuple(lines))


def chart_axis(chart: Chart) -> ValueAxis:
    """The chart's value axis (`axes.value_axis`; a forced log one on positive values)."""
    all_values = np.concatenate([line.series.values for line in chart.lines])
    if chart.log_forced:
        return value_axis(all_values[all_values > 0], log_allowed=True, log_decades=0.0)
    return value_axis(all_values, log_allowed=chart.log_allowed)


def _title_text(chart: Chart, axis: ValueAxis) -> str:
    names = " and ".join(line.name for line in chart.lines)
    return f"{chart.title}: {names} by step" + (" (log scale)" if axis.log else "")


def _legend_row(chart: Chart, axis: ValueAxis, width: int) -> int:
    """0: the legend fits right of the title; 1: it goes on a row of its own below
    (a narrow chart). Widths estimated at ~7.8 units per title and 7.2 per legend character."""
    if len(chart.lines) < 2:
        return 0
    title = shorten(chart.title, NAME_LIMIT) + (" (log scale)" if axis.log else "")
    legend = sum(7.2 * max(len(shorten(ln.name, 40)), 7) + 36 for ln in chart.lines)
    fits = MARGIN_LEFT + 7.8 * len(title) + 16 <= width - MARGIN_RIGHT - legend
    return 0 if fits else 1


def _heading(chart: Chart, axis: ValueAxis, width: int, legend_row: int) -> str:
    """Chart title on the left and a legend (one swatch per series) on the right, or
    on the row below when they would overlap."""
    title = html_name(chart.title, NAME_LIMIT) + (" (log scale)" if axis.log else "")
    out = [f'<text class="chart-title" x="{MARGIN_LEFT}" y="15">{title}</text>']
    y = 15 + legend_row * LABEL_ROW
    if len(chart.lines) > 1:
        x = float(width - MARGIN_RIGHT)
        for line in reversed(chart.lines):
            name = shorten(line.name, 40)
            x -= 7.2 * max(len(name), 7)
            out.append(f'<text class="legend" x="{x:.0f}" y="{y}">{html_name(name)}</text>')
            x -= 22
            out.append(
                f'<line class="line line-{line.style}" x1="{x:.0f}" y1="{y - 4}" '
                f'x2="{x + 16:.0f}" y2="{y - 4}"/>'
            )
            x -= 14
    return "".join(out)


def _y_axis(axis: ValueAxis, frame: _Frame) -> str:
    ys = frame.y(axis.fraction(np.asarray(axis.ticks, dtype=np.float64)))
    out = []
    for y, label in zip(ys, axis.labels, strict=True):
        out.append(
            f'<line class="grid" x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}"/>'
        )
        out.append(
            f'<text class="tick" x="{frame.left - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{label}</text>'
        )
    return "".join(out)


def _x_axis(frame: _Frame) -> str:
    ticks = step_ticks(frame.step_low, frame.step_high, max(4, int(frame.width // 80)))
    out = []
    for step, x in zip(ticks, frame.x(ticks), strict=True):
        out.append(
            f'<line class="axis" x1="{x:.1f}" y1="{frame.bottom}" '
            f'x2="{x:.1f}" y2="{frame.bottom + 4}"/>'
        )
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{frame.bottom + 17}" text-anchor="middle">'
            f"{step_label(step)}</text>"
        )
    out.append(
        f'<text class="tick axis-name" x="{frame.left - 14}" y="{frame.bottom + 17}" '
        f'text-anchor="end">step</text>'
    )
    return "".join(out)


def _frame_box(frame: _Frame) -> str:
    return f'<path class="axis" d="M{frame.left} {frame.top}V{frame.bottom}H{frame.right}"/>'


def _label_rows(
    findings: Sequence[Finding], step_domain: tuple[int, int], width: int
) -> dict[str, int]:
    """A label row per finding so labels at nearby steps do not overlap (greedy)."""
    frame = _Frame(MARGIN_LEFT, width - MARGIN_RIGHT, 0, 1, *map(float, step_domain))
    row_ends: list[float] = []
    rows: dict[str, int] = {}
    for finding in sorted(findings, key=lambda f: (f.step_start, f.id)):
        x = float(frame.x([finding.step_start])[0])
        label_width = 8.0 * len(finding.id) + 8
        free = [row for row, end in enumerate(row_ends) if x >= end]
        if free:
            row = free[0]
        elif len(row_ends) < MAX_LABEL_ROWS:
            row = len(row_ends)
            row_ends.append(-math.inf)
        else:
            row = int(np.argmin(row_ends))  # all rows busy: overlap where it matters least
        row_ends[row] = x + label_width
        rows[finding.id] = row
    return rows


def _bands(
    findings: Sequence[Finding],
    frame: _Frame,
    rows: dict[str, int],
    anchor_prefix: str,
    label_top: float,
) -> list[str]:
    out = []
    for finding in findings:
        x0, x1 = frame.x([finding.step_start, finding.step_end])
        if x1 - x0 < 3:
            middle = (x0 + x1) / 2
            x0, x1 = middle - 1.5, middle + 1.5
        label_y = label_top + rows.get(finding.id, 0) * LABEL_ROW + 12
        tooltip = html_text(
            f"{finding.id} {finding.severity.label}, {step_range(finding)}: {finding.title}"
        )
        severity = finding.severity.label
        out.append(
            f'<a href="#{anchor_prefix}{finding.id}"><g class="band sev-{severity}">'
            f"<title>{tooltip}</title>"
            f'<rect x="{x0:.1f}" y="{frame.top}" width="{x1 - x0:.1f}" height="{frame.height}"/>'
            f'<line x1="{x0:.1f}" y1="{label_y + 3}" x2="{x0:.1f}" y2="{frame.bottom}"/>'
            f'<text x="{x0 + 3:.1f}" y="{label_y}">{finding.id}</text></g></a>'
        )
    return out


def _line(line: ChartLine, axis: ValueAxis, frame: _Frame) -> tuple[str, str]:
    """The series' path, dots, clamp markers and non-finite marks; and its summary."""
    steps, values = line.series.steps, line.series.values
    finite = np.isfinite(values)
    finite_idx = np.flatnonzero(finite)
    out: list[str] = []
    summary = f"{line.name}: {len(values):,} points"
    if finite_idx.size:
        pool = finite_idx if line.candidates is None else line.candidates
        chosen = pool[m4_indices(steps[pool], values[pool], max(1, int(frame.width)))]
        if chosen.size < finite_idx.size:
            summary += f" ({chosen.size:,} drawn, shape-preserving)"
        nonfinite_before = np.cumsum(~finite)
        starts = np.ones(chosen.size, dtype=bool)
        starts[1:] = nonfinite_before[chosen[1:]] != nonfinite_before[chosen[:-1]]
        xs = frame.x(steps[chosen])
        # on a log axis a value <= 0 (an LR of 0) has no position: the bottom edge
        fraction = np.nan_to_num(axis.fraction(values[chosen]), nan=0.0)
        ys = frame.y(fraction)
        out.append(f'<path class="line line-{line.style}" d="{_path_data(xs, ys, starts)}"/>')
        if finite_idx.size <= DOTS_BELOW:
            dots = "".join(f"M{x:.1f} {y:.1f}h0" for x, y in zip(xs, ys, strict=True))
            out.append(f'<path class="dots line-{line.style}" d="{dots}"/>')
        clamp_svg, clamp_summary = _clamped(line, values[chosen], xs, fraction, axis, frame)
        out.append(clamp_svg)
        summary += clamp_summary
    bad = line.series.nonfinite_count()
    if bad:
        summary += f", {bad:,} NaN/Inf"
    return "".join(out), summary


def _path_data(xs: FloatArray, ys: FloatArray, starts: npt.NDArray[np.bool_]) -> str:
    commands = np.where(starts, "M", "L")
    return "".join(f"{c}{x:.1f} {y:.1f}" for c, x, y in zip(commands, xs, ys, strict=True))


def _clamped(
    line: ChartLine,
    drawn_values: FloatArray,
    xs: FloatArray,
    fraction: FloatArray,
    axis: ValueAxis,
    frame: _Frame,
) -> tuple[str, str]:
    """Triangles on the top edge for points above the axis, the largest labelled."""
    above = np.flatnonzero(fraction > 1.0)
    if above.size == 0:
        return "", ""
    values = line.series.values
    total_above = int(np.count_nonzero(np.isfinite(values) & (values > axis.high)))
    top = frame.top
    marks = "".join(
        f"M{x - 4:.1f} {top + 7}L{x:.1f} {top}L{x + 4:.1f} {top + 7}Z" for x in xs[above]
    )
    out = [
        f'<path class="clamp line-{line.style}" d="{marks}"><title>'
        f"{html_name(line.name, NAME_LIMIT)}: {total_above:,} points above "
        f"the axis top</title></path>"
    ]
    labelled: list[float] = []
    for i in above[np.argsort(-drawn_values[above], kind="stable")]:
        x = float(xs[i])
        if len(labelled) >= CLAMP_LABELS or any(abs(x - other) < 70 for other in labelled):
            continue
        labelled.append(x)
        anchor = "end" if x > frame.right - 70 else "start"
        dx = -7 if anchor == "end" else 7
        out.append(
            f'<text class="clamp-label" x="{x + dx:.1f}" y="{top + 18}" text-anchor="{anchor}">'
            f"\u2191 {format_number(float(drawn_values[i]))}</text>"
        )
    peak = format_number(float(np.max(values[np.isfinite(values)])))
    return "".join(out), f", {total_above:,} above the axis top (largest {peak})"


def _nonfinite_runs(series: Series) -> tuple[FloatArray, ...]:
    """Runs of consecutive non-finite points: first step, last step, point count, NaN
    count and +Inf count (the rest are -Inf). Vectorised over the points."""
    bad = ~np.isfinite(series.values)
    if not bad.any():
        return tuple(np.zeros(0, dtype=np.float64) for _ in range(5))
    padded = np.concatenate(([False], bad, [False]))
    edges = np.diff(padded.astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) - 1
    nan_cum = np.concatenate(([0], np.cumsum(np.isnan(series.values))))
    pos_cum = np.concatenate(([0], np.cumsum(series.values == np.inf)))
    return (
        series.steps[starts].astype(np.float64),
        series.steps[ends].astype(np.float64),
        (ends - starts + 1).astype(np.float64),
        (nan_cum[ends + 1] - nan_cum[starts]).astype(np.float64),
        (pos_cum[ends + 1] - pos_cum[starts]).astype(np.float64),
    )


def _nonfinite_marks(lines: Sequence[ChartLine], frame: _Frame) -> tuple[str, str]:
    """Bands over the steps where any series logged NaN/Inf (a run of consecutive
    non-finite points is one band; bands closer than 2 px merge), labelled with the kind
    (NaN, +Inf, -Inf) where the label has room."""
    runs = [_nonfinite_runs(line.series) for line in lines]
    first = np.concatenate([r[0] for r in runs])
    if first.size == 0:
        return "", ""
    last, counts, nans, pos_infs = (np.concatenate([r[i] for r in runs]) for i in range(1, 5))
    order = np.argsort(first, kind="stable")
    first, last, nans, pos_infs, counts = (a[order] for a in (first, last, nans, pos_infs, counts))
    x_first, x_last = frame.x(first), frame.x(last)
    reach = np.maximum.accumulate(x_last)
    group_start = np.ones(first.size, dtype=bool)
    group_start[1:] = x_first[1:] > reach[:-1] + 2.0
    starts = np.flatnonzero(group_start)
    g_first = first[starts]
    g_last = np.maximum.reduceat(last, starts)
    g_nan = np.add.reduceat(nans, starts)
    g_pos = np.add.reduceat(pos_infs, starts)
    g_count = np.add.reduceat(counts, starts)
    out = []
    described: list[str] = []
    label_end = -math.inf
    for s0, s1, nan, pos, count in zip(g_first, g_last, g_nan, g_pos, g_count, strict=True):
        kind = _kind(int(nan), int(pos), int(count))
        x0, x1 = frame.x([s0, s1])
        x0, x1 = float(x0) - 1.5, float(x1) + 1.5
        where = f"step {int(s0):,}" if s0 == s1 else f"steps {int(s0):,}\u2013{int(s1):,}"
        out.append(
            f'<g class="nonfinite"><title>{kind} at {where} ({int(count):,} values)</title>'
            f'<rect x="{x0:.1f}" y="{frame.top}" width="{x1 - x0:.1f}" height="{frame.height}"/>'
        )
        label_x = min(x0 + 3, frame.right - 34)
        if label_x >= label_end:
            out.append(f'<text x="{label_x:.1f}" y="{frame.bottom - 6}">{kind}</text>')
            label_end = label_x + 8 * len(kind) + 6
        out.append("</g>")
        if len(described) < 3:
            described.append(f"{kind} at {where}")
    more = f" and {starts.size - 3} more places" if starts.size > 3 else ""
    return "".join(out), f"Non-finite values: {'; '.join(described)}{more}."


def _kind(nan: int, positive_inf: int, count: int) -> str:
    if nan == count:
        return "NaN"
    if positive_inf == count:
        return "+Inf"
    if nan == 0 and positive_inf == 0:
        return "-Inf"
    return "NaN/Inf"


def _description(chart: Chart, axis: ValueAxis, summaries: Sequence[str]) -> str:
    parts = [f"Line chart by step; {axis.describe()}.", *summaries]
    if chart.findings:
        shaded = "; ".join(
            f"{f.id} {f.severity.label} {step_range(f)} ({f.detector})" for f in chart.findings
        )
        parts.append(f"Shaded findings: {shaded}.")
    return " ".join(parts)
