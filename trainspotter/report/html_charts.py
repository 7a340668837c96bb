"""Which charts one log's HTML section gets, and each drawn at the sizes the page picks from.

The rules: the named panels (loss, LR, gradient norm, throughput, step time), then up to
`MAX_OTHER_CHARTS` other metrics that describe training (those with findings first; job
bookkeeping such as `eval_runtime` only when a finding is about it); warnings and errors
shaded on the chart of their metric (info notes never: a band reads as a problem); the LR
on a log axis when `schedule_wants_log`. Each chart is drawn at three widths (the page's
CSS shows the widest that fits its box, see html.py), so labels keep their size in any
window. The drawing itself is `svg_chart.py`'s.
"""

from __future__ import annotations

import re

import numpy as np

from trainspotter import names
from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Run, Series
from trainspotter.report.common import active_findings, charted_findings
from trainspotter.report.svg_chart import Chart, ChartLine, chart_axis, for_sizes, render_chart

MAIN_CHART_SIZES = ((360, 260), (720, 300), (1040, 320))
"""viewBox sizes of the loss chart, one SVG each; the page shows the widest that fits its
box (a CSS container query), so the SVG is drawn at 1x to ~1.45x and an 11 px label
stays 11 px or more at any window from ~400 px up."""
SMALL_CHART_SIZES = ((360, 240), (480, 240), (720, 260))
"""viewBox sizes of the other charts (two per row on a wide screen, one below ~900 px)."""
MAX_OTHER_CHARTS = 16
"""Metrics beyond the named panels that get a chart (those with findings first)."""
NOT_CHARTED = frozenset({names.EPOCH})
BOOKKEEPING = re.compile(
    r"(?:^|[/_.-])(?:runtime|samples_per_second|steps_per_second|total_flos|flos)$", re.I
)
"""Metrics about the evaluation or the job, not about training (HF's `eval_runtime`,
`eval_samples_per_second`, `train_runtime`, `total_flos`): listed in the metrics table,
charted only when a finding is about them."""
# (title, metrics, log axis allowed): the named panels, in page order. Losses and gradient
# norms may get a log axis (see axes.py); other metrics whose name says loss too; the LR
# by `schedule_wants_log`.
_PANELS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("Loss", (names.TRAIN_LOSS, names.EVAL_LOSS), True),
    ("Learning rate", (names.LR,), False),
    ("Gradient norm", (names.GRAD_NORM,), True),
    ("Throughput", (names.THROUGHPUT,), False),
    ("Step time", (names.STEP_TIME,), False),
)


def _step_domain(run: Run) -> tuple[int, int]:
    span = run.step_span()
    if span is None:
        return (0, 1)
    low, high = span
    # Logging usually starts at step 1 or at the first logging interval: start at 0.
    return (0 if 0 < low <= 0.05 * high else low, high)


def chart_plan(analysis: Analysis) -> tuple[list[Chart], list[str]]:
    """The charts of one log, in page order, and the metrics left uncharted.

    Each unsuppressed warning or error is shaded on the chart of its metric, or on the
    first chart when its metric has none; info notes are listed, never shaded (a
    healthy run's chart carries no band). Metrics about the job rather than training
    (`BOOKKEEPING`) get no chart unless a finding is about them."""
    run = analysis.run
    findings = charted_findings(analysis.findings)
    charts: list[Chart] = []
    used: set[str] = set()
    for title, metrics, log_allowed in _PANELS:
        present = [m for m in metrics if m in run.metrics and len(run.metrics[m])]
        if present:
            lines = tuple(ChartLine(m, run.metrics[m], i) for i, m in enumerate(present))
            log_forced = metrics == (names.LR,) and schedule_wants_log(run.metrics[names.LR])
            charts.append(Chart(title, lines, log_allowed=log_allowed, log_forced=log_forced))
            used.update(present)
    with_findings = {f.metric for f in active_findings(analysis)}
    others = sorted(
        (
            m
            for m, s in run.metrics.items()
            if m not in used
            and m not in NOT_CHARTED
            and len(s)
            and (m in with_findings or not BOOKKEEPING.search(m))
        ),
        key=lambda m: (m not in with_findings, m),
    )
    for metric in others[:MAX_OTHER_CHARTS]:
        line = ChartLine(metric, run.metrics[metric], 2)
        charts.append(Chart(metric, (line,), log_allowed=names.is_loss_like(metric)))
    skipped = others[MAX_OTHER_CHARTS:]
    if not charts:
        return [], skipped
    placed: list[list[Finding]] = [[] for _ in charts]
    for finding in findings:
        target = next(
            (i for i, c in enumerate(charts) if any(ln.name == finding.metric for ln in c.lines)),
            0,
        )
        placed[target].append(finding)
    charts = [
        Chart(c.title, c.lines, tuple(placed[i]), c.log_allowed, c.log_forced)
        for i, c in enumerate(charts)
    ]
    return charts, skipped


SCHEDULE_DECADE = 10.0


def schedule_wants_log(series: Series) -> bool:
    """An LR schedule gets a log axis when most of it lives a decade or more below its
    peak (99th percentile / median of the positive values > 10: a step decay, an
    exponential decay, a 1e-4 cut), or when it jumps up 10x or more between two logged
    points and stays up (a resumed run's LR jump: on a linear axis the schedule before
    it is a flat line at 0). A warmup, a cosine or a linear decay keeps the linear axis
    that shows its shape. Values <= 0 are left out (a warmup from 0, a decay to 0)."""
    positive = series.values[np.isfinite(series.values) & (series.values > 0)]
    if positive.size < 2:
        return False
    peak, median = np.percentile(positive, [99.0, 50.0])
    if float(peak) > SCHEDULE_DECADE * float(median):
        return True
    # a jump holds for two points: one outlier is the outlier cap's job, not the axis'
    before = SCHEDULE_DECADE * positive[:-2]
    return bool(np.any((positive[1:-1] > before) & (positive[2:] > before)))


def chart_figure(
    chart: Chart, *, main: bool, step_domain: tuple[int, int], element_id: str, anchor_prefix: str
) -> str:
    """One chart as a `<figure>` holding its sizes (`MAIN_CHART_SIZES` for a full-width
    chart, else `SMALL_CHART_SIZES`); the page's CSS shows the widest that fits."""
    sizes = MAIN_CHART_SIZES if main else SMALL_CHART_SIZES
    axis = chart_axis(chart)
    prepared = for_sizes(chart, sizes[-1][0])
    variants = "".join(
        render_chart(
            prepared,
            step_domain=step_domain,
            width=width,
            height=height,
            element_id=f"{element_id}-{width}",
            anchor_prefix=anchor_prefix,
            css_class=f"v{variant}",
            axis=axis,
        )
        for variant, (width, height) in enumerate(sizes)
    )
    return f'<figure class="{"fig-main" if main else "fig-small"}">{variants}</figure>'


def charts_html(analysis: Analysis, prefix: str) -> str:
    """The section's charts: the loss chart, then the others in a grid, each a figure
    holding its sizes; `prefix` starts every element id and finding anchor."""
    charts, skipped = chart_plan(analysis)
    if not charts:
        return '<p class="muted">No metric to chart.</p>'
    domain = _step_domain(analysis.run)
    rendered = [
        chart_figure(
            chart,
            main=number == 0,
            step_domain=domain,
            element_id=f"{prefix}chart{number}",
            anchor_prefix=prefix,
        )
        for number, chart in enumerate(charts)
    ]
    out = rendered[0]
    if len(rendered) > 1:
        out += '<div class="charts-small">' + "".join(rendered[1:]) + "</div>"
    if skipped:
        out += (
            f'<p class="muted">{len(skipped)} more metrics are not charted '
            "(see the metrics table).</p>"
        )
    return out
