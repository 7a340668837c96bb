"""The HTML report: one self-contained page a person opens offline, forever.

One file: inline CSS and inline SVG charts (`html_charts.py` picks them, `svg_chart.py`
draws them), no JavaScript, no external
resource (no font, image, stylesheet or link outside the page), and a Content Security
Policy that forbids loading anything, so even a browser that found something to fetch
would not. Light and dark mode follow the reader's system through
`prefers-color-scheme`.

Per log, in reading order: what was read (path, format, steps, metrics), the verdict
("passed" in green when there is no warning or error, else the worst severity and the
counts), the root cause of each linked incident with its chain (the words of the
Markdown and JSON reports), the charts, every finding with its evidence and fixes, the
metrics table, reader notes and the run's metadata. Several logs get a summary table at
the top and one section each.

Every log-derived string (paths, metric and run names, titles, evidence, notes, metadata)
passes through `escape.html_text`. This module lays out the page; the charts, axes and
downsampling live in their own modules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from trainspotter import __version__
from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Run, Severity
from trainspotter.paths import shown_path
from trainspotter.report.base import TextReport
from trainspotter.report.common import (
    chain_findings,
    chain_link,
    chain_path,
    counts_phrase,
    findings_root_cause_first,
    log_label,
    not_checked_reason,
    plural,
    step_range,
    steps_logged,
    total_counts,
)
from trainspotter.report.comparison_html import comparison_section
from trainspotter.report.escape import format_number, html_name, html_text, shorten
from trainspotter.report.html_charts import charts_html
from trainspotter.verdict import worst_of

META_VALUE_LIMIT = 300

CSS = """
:root { color-scheme: light dark;
  --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --panel: #f6f8fa; --border: #d1d9e0;
  --grid: #e4e8ec; --axis: #818b98;
  --line-0: #0550ae; --line-1: #bc4c00; --line-2: #6639ba; --line-3: #116329;
  --error: #cf222e; --warning: #9a6700; --info: #1b7c83; --ok: #1a7f37;
  --error-band: #cf222e; --warning-band: #d4a72c; --info-band: #1b7c83;
  --nonfinite: #8250df; --nonfinite-text: #5a32a3; }
@media (prefers-color-scheme: dark) { :root {
  --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --panel: #151b23; --border: #3d444d;
  --grid: #262c36; --axis: #656c76;
  --line-0: #4493f8; --line-1: #f0883e; --line-2: #ab7df8; --line-3: #3fb950;
  --error: #ff7b72; --warning: #d29922; --info: #39c5cf; --ok: #3fb950;
  --error-band: #f85149; --warning-band: #d29922; --info-band: #39c5cf;
  --nonfinite: #ab7df8; --nonfinite-text: #d2a8ff; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "DejaVu Sans", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 40px 0 4px; padding-top: 16px; border-top: 1px solid var(--border);
  overflow-wrap: anywhere; }
h3 { font-size: 16px; margin: 28px 0 8px; }
a { color: inherit; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", monospace;
  font-size: 13px; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.verdict { display: inline-block; margin: 10px 0 4px; padding: 6px 12px; border-radius: 6px;
  border: 1px solid var(--border); background: var(--panel); font-weight: 600; }
.verdict .sev { margin-right: 8px; }
.sev { display: inline-block; min-width: 64px; padding: 1px 8px; border-radius: 999px;
  color: #ffffff; font-size: 12px; font-weight: 700; text-align: center;
  text-transform: uppercase; letter-spacing: .03em; }
.sev-error.sev { background: #cf222e; }
.sev-warning.sev { background: #9a6700; }
.sev-info.sev { background: #1b7c83; }
.sev-ok.sev { background: #1a7f37; }
.cause { margin: 12px 0; padding: 10px 14px; border-left: 4px solid var(--error);
  background: var(--panel); border-radius: 0 6px 6px 0; }
.cause.sev-warning { border-left-color: var(--warning); }
.cause.sev-info { border-left-color: var(--info); }
.cause ol { margin: 6px 0 0; padding-left: 22px; }
figure { margin: 12px 0; padding: 8px; background: var(--panel); border: 1px solid var(--border);
  border-radius: 8px; container-type: inline-size; min-width: 0; }
.charts-small { display: grid; gap: 0 12px;
  grid-template-columns: repeat(auto-fit, minmax(min(440px, 100%), 1fr)); }
svg.chart { display: none; width: 100%; height: auto; }
/* Each chart comes in three widths (MAIN_CHART_SIZES, SMALL_CHART_SIZES); the widest that
   fits its box is shown, at 1x or more, so labels keep their size (a container query, no
   script). */
svg.chart.v0 { display: block; }
@container (min-width: 480px) {
  .fig-small svg.chart.v0 { display: none; } .fig-small svg.chart.v1 { display: block; } }
@container (min-width: 720px) {
  .fig-small svg.chart.v1 { display: none; } .fig-small svg.chart.v2 { display: block; }
  .fig-main svg.chart.v0 { display: none; } .fig-main svg.chart.v1 { display: block; } }
@container (min-width: 1040px) {
  .fig-main svg.chart.v1 { display: none; } .fig-main svg.chart.v2 { display: block; } }
.table-box { max-width: 100%; overflow-x: auto; }
@media (max-width: 600px) { main { padding: 16px 12px 40px; } }
.chart text { fill: var(--fg); font-size: 12px; font-family: inherit; }
.chart .tick { fill: var(--muted); font-size: 11px; }
.chart .chart-title { font-weight: 700; font-size: 13px; }
.chart .legend { fill: var(--fg); font-size: 12px; }
.chart .grid { stroke: var(--grid); stroke-width: 1; }
.chart .axis { stroke: var(--axis); stroke-width: 1; fill: none; }
.chart .line { fill: none; stroke-width: 1.6; stroke-linejoin: round; stroke-linecap: round; }
.chart .dots { fill: none; stroke-width: 5; stroke-linecap: round; }
.chart .line-0 { stroke: var(--line-0); } .chart .line-1 { stroke: var(--line-1); }
.chart .line-2 { stroke: var(--line-2); } .chart .line-3 { stroke: var(--line-3); }
.chart .clamp { stroke: none; }
.chart .clamp.line-0 { fill: var(--line-0); } .chart .clamp.line-1 { fill: var(--line-1); }
.chart .clamp.line-2 { fill: var(--line-2); } .chart .clamp.line-3 { fill: var(--line-3); }
.chart .clamp-label { font-size: 11px; font-weight: 600; }
.chart .clamp-label, .chart .nonfinite text { paint-order: stroke; stroke: var(--panel);
  stroke-width: 3px; stroke-linejoin: round; }
.chart .band rect { opacity: .16; }
.chart .band line { stroke-width: 1; stroke-dasharray: 2 2; }
.chart .band text { font-size: 11px; font-weight: 700; }
.chart .sev-error rect { fill: var(--error-band); } .chart .sev-error line { stroke: var(--error); }
.chart .sev-error text { fill: var(--error); }
.chart .sev-warning rect { fill: var(--warning-band); opacity: .24; }
.chart .sev-warning line { stroke: var(--warning); }
.chart .sev-warning text { fill: var(--warning); }
.chart .sev-info rect { fill: var(--info-band); } .chart .sev-info line { stroke: var(--info); }
.chart .sev-info text { fill: var(--info); }
.chart .nonfinite rect { fill: var(--nonfinite); opacity: .22; }
.chart .nonfinite text { fill: var(--nonfinite-text); font-size: 11px; font-weight: 700; }
.finding { margin: 14px 0; padding: 12px 16px; border: 1px solid var(--border);
  border-left: 4px solid var(--error); border-radius: 0 8px 8px 0; }
.finding.sev-warning { border-left-color: var(--warning); }
.finding.sev-info { border-left-color: var(--info); }
.finding.suppressed { opacity: .7; }
.finding h4 { margin: 0 0 6px; font-size: 15px; display: flex; flex-wrap: wrap; gap: 4px 10px;
  align-items: baseline; overflow-wrap: anywhere; }
.finding h4 .id { font-family: ui-monospace, "DejaVu Sans Mono", monospace; color: var(--muted); }
.finding p { margin: 6px 0; }
.facts-line { color: var(--muted); font-size: 13px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid var(--border); padding: 4px 10px; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.evidence td:first-child { color: var(--muted); }
ol.fixes { margin: 6px 0 0; padding-left: 22px; }
.healthy { color: var(--ok); font-weight: 600; }
footer { margin-top: 48px; color: var(--muted); font-size: 13px; }
"""


def _severity_badge(severity: Severity | None) -> str:
    if severity is None:
        return '<span class="sev sev-ok">healthy</span>'
    return f'<span class="sev sev-{severity.label}">{severity.label}</span>'


_PASSED_BADGE = '<span class="sev sev-ok">passed</span>'


def _passed_text(infos: int) -> str:
    """A log or page with no warning or error: passed, its info notes only listed."""
    if not infos:
        return "no warnings or errors"
    return f"no warnings or errors; {plural(infos, 'info')} note{'s' if infos > 1 else ''} below"


_NOT_CHECKED_BADGE = '<span class="sev">not checked</span>'


def _log_badge(analysis: Analysis) -> str:
    """The log's worst severity; "not checked" instead of "healthy" when nothing was."""
    if not_checked_reason(analysis) is not None:
        return _NOT_CHECKED_BADGE
    if analysis.worst is None or analysis.worst < Severity.WARNING:
        return _PASSED_BADGE
    return _severity_badge(analysis.worst)


def _anchor_prefix(index: int) -> str:
    return f"log{index}-"


def _run_facts(run: Run) -> str:
    lengths = [len(s) for s in run.metrics.values()]
    facts = [
        f"format {html_text(run.source_format)}",
        steps_logged(run),
        f"{len(run.metrics)} metrics",
        f"{sum(lengths):,} points",
    ]
    run_name = run.meta.get("run_name")
    if run_name:
        facts.insert(0, f"run <code>{html_name(str(run_name))}</code>")
    return " \u00b7 ".join(facts)


def _cause_html(analysis: Analysis, index: int) -> str:
    prefix = _anchor_prefix(index)
    out = []
    for chain in chain_findings(analysis):
        root = chain[0]
        steps = "".join(
            f'<li><a href="#{prefix}{f.id}">{f.id}</a> '
            f"{html_text(chain_link(f).removeprefix(f.id + ' '))}</li>"
            for f in chain
        )
        out.append(
            f'<div class="cause sev-{root.severity.label}"><strong>Root cause:</strong> '
            f"{html_text(root.title)} ({html_text(chain_path(chain))})<ol>{steps}</ol></div>"
        )
    return "".join(out)


def _evidence_table(finding: Finding) -> str:
    if not finding.evidence:
        return ""
    rows = "".join(
        f"<tr><td>{html_name(str(key))}</td>"
        f'<td class="mono">{html_text(shorten(format_number(value), 300))}</td></tr>'
        for key, value in finding.evidence.items()
    )
    return _table(f"<tbody>{rows}</tbody>", "evidence")


def _finding_html(finding: Finding, index: int) -> str:
    prefix = _anchor_prefix(index)
    classes = f"finding sev-{finding.severity.label}"
    extra = []
    if finding.suppressed is not None:
        classes += " suppressed"
        extra.append(f"<p><em>Suppressed: {html_text(finding.suppressed)}</em></p>")
    if finding.cause:
        extra.append(
            f'<p class="facts-line">Caused by <a href="#{prefix}{finding.cause}">'
            f"{finding.cause}</a></p>"
        )
    elif finding.related:
        links = ", ".join(f'<a href="#{prefix}{r}">{r}</a>' for r in finding.related)
        extra.append(f'<p class="facts-line">Root cause of {links}</p>')
    fixes = ""
    if finding.fixes:
        items = "".join(f"<li>{html_text(fix)}</li>" for fix in finding.fixes)
        fixes = f'<p><strong>What to try</strong></p><ol class="fixes">{items}</ol>'
    return (
        f'<article class="{classes}" id="{prefix}{finding.id}">'
        f'<h4><span class="id">{finding.id}</span>{_severity_badge(finding.severity)}'
        f"<span>{html_name(finding.title, 500)}</span></h4>"
        f'<p class="facts-line">{step_range(finding)} \u00b7 detector '
        f"<code>{html_text(finding.detector)}</code> \u00b7 metric "
        f"<code>{html_name(finding.metric)}</code></p>"
        f"<p>{html_text(finding.message)}</p>"
        + "".join(extra)
        + _evidence_table(finding)
        + fixes
        + "</article>"
    )


def _metrics_table(run: Run) -> str:
    rows = []
    for name, series in sorted(run.metrics.items()):
        if not len(series):
            continue
        finite = series.values[series.finite]
        low = format_number(float(finite.min())) if finite.size else "-"
        high = format_number(float(finite.max())) if finite.size else "-"
        rows.append(
            f"<tr><td><code>{html_name(name)}</code></td>"
            f'<td class="num">{len(series):,}</td>'
            f'<td class="num">{int(series.steps[0])}-{int(series.steps[-1])}</td>'
            f'<td class="num">{low}</td><td class="num">{high}</td>'
            f'<td class="num">{format_number(float(series.values[-1]))}</td>'
            f'<td class="num">{series.nonfinite_count():,}</td></tr>'
        )
    if not rows:
        return '<p class="muted">No metrics.</p>'
    head = (
        '<tr><th>metric</th><th class="num">points</th><th class="num">steps</th>'
        '<th class="num">min</th><th class="num">max</th><th class="num">last</th>'
        '<th class="num">NaN/Inf</th></tr>'
    )
    return _table(f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody>")


def _table(inner: str, css_class: str = "") -> str:
    """A table in a box that scrolls sideways on a narrow window (the page never does)."""
    attribute = f' class="{css_class}"' if css_class else ""
    return f'<div class="table-box"><table{attribute}>{inner}</table></div>'


def _meta_html(run: Run) -> str:
    items = []
    for key, value in run.meta.items():
        if key == "notes":
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        items.append(
            f"<tr><td><code>{html_name(str(key))}</code></td>"
            f'<td class="mono">{html_text(shorten(text, META_VALUE_LIMIT))}</td></tr>'
        )
    if not items:
        return ""
    return "<h3>Run metadata</h3>" + _table(f"<tbody>{''.join(items)}</tbody>")


def _checks_html(analysis: Analysis) -> str:
    """Which detectors ran on which metrics, and why the others did not."""
    rows = "".join(
        f"<tr><td><code>{html_name(c.detector)}</code></td><td>{html_text(c.status)}</td>"
        f'<td class="mono">{html_text(", ".join(c.metrics) or (c.reason or ""))}</td></tr>'
        for c in analysis.checks
    )
    if not rows:
        return ""
    head = "<tr><th>detector</th><th>status</th><th>metrics examined, or why not</th></tr>"
    return "<h3>Checks</h3>" + _table(f"<thead>{head}</thead><tbody>{rows}</tbody>")


def _log_section(analysis: Analysis, index: int, several: bool) -> str:
    run = analysis.run
    worst = analysis.worst
    unchecked = not_checked_reason(analysis)
    if worst is None:
        verdict = (
            f'{_PASSED_BADGE}<span class="healthy">No findings: the run looks healthy.</span>'
            if unchecked is None
            else f'<span class="muted">No findings, but {html_text(unchecked)}.</span>'
        )
    elif worst < Severity.WARNING:
        verdict = _PASSED_BADGE + _passed_text(total_counts([analysis])[Severity.INFO])
    else:
        verdict = f"{_severity_badge(worst)}{counts_phrase(total_counts([analysis]))}"
    suppressed = sum(1 for f in analysis.findings if f.suppressed is not None)
    if suppressed:
        verdict += f' <span class="muted">({suppressed} suppressed)</span>'
    parts = [
        f'<section id="{_anchor_prefix(index)}top">',
        f"<h2>{html_text(log_label(run))}</h2>",
        f'<p class="facts-line">{_run_facts(run)}</p>',
        f'<div class="verdict">{verdict}</div>' if several else "",
        _cause_html(analysis, index),
        "<h3>Charts</h3>",
        charts_html(analysis, _anchor_prefix(index)),
        comparison_section(analysis, _anchor_prefix(index)),
    ]
    if analysis.findings:
        parts.append(f"<h3>Findings ({len(analysis.findings)})</h3>")
        parts.extend(_finding_html(f, index) for f in findings_root_cause_first(analysis))
    parts.append(_checks_html(analysis))
    notes = run.notes()
    if notes:
        items = "".join(f"<li>{html_text(note)}</li>" for note in notes)
        parts.append(f"<h3>Reader notes</h3><ul>{items}</ul>")
    parts.append("<h3>Metrics</h3>")
    parts.append(_metrics_table(run))
    parts.append(_meta_html(run))
    parts.append("</section>")
    return "".join(parts)


def _overview(analyses: Sequence[Analysis]) -> str:
    rows = []
    for index, analysis in enumerate(analyses, start=1):
        counts = analysis.counts()
        rows.append(
            f'<tr><td><a href="#{_anchor_prefix(index)}top">'
            f"{html_text(log_label(analysis.run))}</a></td>"
            f"<td>{_log_badge(analysis)}</td>"
            + "".join(
                f'<td class="num">{counts[s.label]}</td>' for s in sorted(Severity, reverse=True)
            )
            + "</tr>"
        )
    head = (
        '<tr><th>log</th><th>worst</th><th class="num">errors</th>'
        '<th class="num">warnings</th><th class="num">info</th></tr>'
    )
    return _table(f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody>")


def render_html(analyses: Sequence[Analysis]) -> str:
    """The whole page."""
    worst = worst_of(analyses)
    totals = total_counts(analyses)
    if len(analyses) == 1:
        page_title = f"trainspotter: {shown_path(analyses[0].run.source_path)}"
    else:
        page_title = f"trainspotter: {len(analyses)} logs"
    headline = counts_phrase(totals)
    badge = _severity_badge(worst)
    if worst is None or worst < Severity.WARNING:
        headline, badge = _passed_text(totals[Severity.INFO]), _PASSED_BADGE
    if worst is None and any(not_checked_reason(a) is not None for a in analyses):
        headline = "no findings, but not every log could be checked (see Checks)"
        badge = _NOT_CHECKED_BADGE
    body = [
        "<main>",
        "<header><h1>trainspotter report</h1>",
        f'<div class="verdict">{badge}{headline}</div>',
        f'<p class="muted">{len(analyses)} log{"s" if len(analyses) != 1 else ""} analysed.</p>',
        "</header>",
    ]
    if len(analyses) > 1:
        body.append(_overview(analyses))
    body.extend(_log_section(a, i, len(analyses) > 1) for i, a in enumerate(analyses, start=1))
    body.append(
        f"<footer>Generated by trainspotter {html_text(__version__)}. "
        "This page is self-contained: no scripts, nothing loaded from elsewhere.</footer>"
    )
    body.append("</main>")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">"
        '<meta name="color-scheme" content="light dark">'
        f"<title>{html_text(shorten(page_title, 200))}</title>"
        f"<style>{CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


REPORT = TextReport(
    "html",
    "self-contained HTML page with charts (no scripts, no external resources)",
    lambda analyses, _fail_on: render_html(analyses),
)
"""A self-contained HTML page with inline SVG charts (the same for every `fail_on`)."""
