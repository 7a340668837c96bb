"""The HTML page's comparison section: the table, and each compared curve with the
baseline's overlaid (both drawn by `svg_chart`, on the candidate's steps).

Called by `html.py` with one line per log; every log-derived string passes through
`escape.html_text`, as in the rest of the page.
"""

from __future__ import annotations

from trainspotter import names
from trainspotter.analysis import Analysis
from trainspotter.compare.model import Comparison
from trainspotter.detectors.regression.params import NAME as REGRESSION
from trainspotter.report import comparison as text
from trainspotter.report.escape import html_text
from trainspotter.report.html_charts import chart_figure
from trainspotter.report.svg_chart import Chart, ChartLine

MAX_OVERLAYS = 6
"""At most this many overlaid metrics per log (the compared ones come first)."""


def _table(comparison: Comparison) -> str:
    head = "".join(f"<th>{html_text(h)}</th>" for h in text.HEADER)
    rows = []
    for row in text.comparison_rows(comparison):
        bad = row[-1] in ("REGRESSED", "FAILED")
        cells = "".join(f"<td>{html_text(cell)}</td>" for cell in row)
        rows.append(f'<tr class="{"sev-error" if bad else ""}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _overlay_metrics(analysis: Analysis, comparison: Comparison) -> list[str]:
    compared = [v.metric for v in comparison.values]
    chosen = [names.TRAIN_LOSS, names.EVAL_LOSS, *compared]
    present = [
        m
        for m in dict.fromkeys(chosen)
        if m in analysis.run.metrics
        and m in comparison.aligned_baseline
        and len(analysis.run.metrics[m])
        and len(comparison.aligned_baseline[m])
    ]
    return present[:MAX_OVERLAYS]


def comparison_section(analysis: Analysis, anchor_prefix: str) -> str:
    """The section for one log ("" when it was not compared)."""
    comparison = analysis.comparison
    if comparison is None:
        return ""
    parts = ["<h3>Comparison</h3>", f"<p>{html_text(text.heading(comparison))}</p>"]
    if comparison.values or comparison.rules:
        parts.append(_table(comparison))
    parts += [f'<p class="muted">{html_text(note)}</p>' for note in comparison.notes]
    metrics = _overlay_metrics(analysis, comparison)
    span = analysis.run.step_span() or (0, 1)
    for number, metric in enumerate(metrics):
        baseline = comparison.aligned_baseline[metric]
        low = min(span[0], int(baseline.steps[0]))
        high = max(span[1], int(baseline.steps[-1]), low + 1)
        findings = tuple(
            f
            for f in analysis.findings
            if f.metric == metric and f.detector == REGRESSION and f.suppressed is None
        )
        chart = Chart(
            f"{metric}: this run and the baseline",
            (
                ChartLine(f"{metric} (this run)", analysis.run.metrics[metric], 0),
                ChartLine(f"{metric} (baseline)", baseline, 1),
            ),
            findings,
            log_allowed=names.is_loss_like(metric),
        )
        parts.append(
            chart_figure(
                chart,
                main=True,
                step_domain=(low, high),
                element_id=f"{anchor_prefix}compare{number}",
                anchor_prefix=anchor_prefix,
            )
        )
    return "".join(parts)
