"""The HTML report: self-contained, escaped, charts drawn by the axis rules, small and fast."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
from report_fixtures import (
    HOSTILE,
    analysis_of,
    assert_self_contained,
    audit,
    big_run,
    divergent_findings,
    divergent_run,
)
from synth import decaying_loss, every, make_run, warmup_cosine

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import REPORTS, RenderOptions
from trainspotter.report.html import CSS, render_html
from trainspotter.report.html_charts import chart_plan, schedule_wants_log

SVG_NS = "{http://www.w3.org/2000/svg}"


def svg_elements(page: str) -> list[ET.Element]:
    """Every inline <svg>, parsed as XML (so each is well-formed with text escaped)."""
    out = []
    for fragment in re.findall(r"<svg\b.*?</svg>", page, flags=re.S):
        out.append(
            ET.fromstring(fragment.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))
        )
    return out


def test_page_is_self_contained(divergent: Analysis) -> None:
    page = render_html([divergent])
    assert page.startswith("<!DOCTYPE html>")
    assert_self_contained(page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "prefers-color-scheme: dark" in page


def test_charts_are_accessible_svg(divergent: Analysis) -> None:
    page = render_html([divergent])
    svgs = svg_elements(page)
    # loss (train+eval), lr, grad_norm, throughput, eval/accuracy; each in three widths
    assert len(svgs) == 15
    assert len({svg.get("aria-labelledby") for svg in svgs}) == 15  # ids stay unique
    for svg in svgs:
        assert svg.get("role") == "img"
        assert svg.find(f"{SVG_NS}title") is not None and svg.find(f"{SVG_NS}desc") is not None
    loss = svgs[0]
    title = loss.find(f"{SVG_NS}title")
    assert title is not None and "train/loss and eval/loss" in (title.text or "")
    desc = loss.find(f"{SVG_NS}desc")
    assert desc is not None and "NaN at steps 2,100" in (desc.text or "")


def test_findings_are_shaded_on_the_chart_of_their_metric(divergent: Analysis) -> None:
    charts, _ = chart_plan(divergent)
    placed = {f.id: c.title for c in charts for f in c.findings}
    by_detector = {f.detector: f.id for f in divergent.findings}
    assert placed[by_detector["divergence"]] == "Loss"
    assert placed[by_detector["lr_schedule"]] == "Learning rate"
    # an info note is listed, never shaded: a band reads as a problem
    assert by_detector["plateau"] not in placed
    page = render_html([divergent])
    for finding in divergent.findings:
        band = f'<a href="#log1-{finding.id}"><g class="band sev-{finding.severity.label}">'
        assert (band in page) is (finding.severity >= Severity.WARNING)
        assert f'id="log1-{finding.id}"' in page


def test_root_cause_first_with_evidence_and_fixes(divergent: Analysis) -> None:
    page = render_html([divergent])
    assert "Root cause:" in page
    lr_pos = page.index("lr jumped 30x")
    assert lr_pos < page.index("<h3>Charts</h3>")
    findings_part = page[page.index("<h3>Findings") :]
    assert findings_part.index("lr jumped 30x") < findings_part.index("train/loss diverged")
    assert "Lower the learning rate." in page and "first_nan_step" in page
    assert "skipped 2 rows with unparseable cells" in page  # reader notes
    assert "divergent-demo" in page  # run metadata


def test_log_axis_nan_marks_and_clamped_points() -> None:
    steps = every(5000, 1)
    loss = np.geomspace(20.0, 0.02, steps.size)  # three decades: log axis
    loss[4000:4010] = np.nan
    lr = np.full(steps.size, 1e-3)
    lr[2500] = 5.0  # an outlier far above 1.5x the 99th percentile: clamped, labelled
    run = make_run({"train/loss": (steps, loss), "lr": (steps, lr)})
    page = render_html([analysis_of(run, [])])
    svgs = svg_elements(page)
    assert "(log scale)" in (svgs[0].find(f"{SVG_NS}title").text or "")  # type: ignore[union-attr]
    assert '<g class="nonfinite">' in page and ">NaN</text>" in page
    assert 'class="clamp line-0"' in page and "\u2191 5</text>" in page
    lr_desc = svgs[3].find(f"{SVG_NS}desc").text or ""  # type: ignore[union-attr]
    assert "1 above the axis top (largest 5)" in lr_desc
    assert "linear axis from 0 to" in lr_desc


def test_hostile_strings_are_escaped(hostile: Analysis) -> None:
    page = REPORTS["html"].render([hostile], RenderOptions())
    assert_self_contained_except_log_text(page)
    assert "<script>" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\x00" not in page and "\x07" not in page
    svg_elements(page)  # every chart still parses as XML
    text = "".join(audit(page).text)
    for name in HOSTILE:
        if name.isprintable():
            assert name in text  # shown, as text


def assert_self_contained_except_log_text(page: str) -> None:
    """The hostile log contains URLs as text: markup must still reference nothing."""
    result = audit(page)
    assert result.problems == []
    assert "url(" not in page


def test_several_logs_get_an_overview_and_a_section_each(
    divergent: Analysis, healthy: Analysis
) -> None:
    page = render_html([divergent, healthy])
    assert page.count('<section id="log') == 2
    assert '<a href="#log2-top">runs/healthy/metrics.csv</a>' in page
    assert "No findings: the run looks healthy." in page


def test_million_point_run_is_small() -> None:
    """A 1M-step run's page stays small because it is downsampled (its render time is
    measured by `make bench`'s reports case, not asserted here)."""
    run = big_run(1_000_000)
    finding = Finding(
        detector="spikes",
        title="loss spiked",
        severity=Severity.WARNING,
        metric="train/loss",
        step_start=400_000,
        step_end=400_100,
        message="m",
    )
    analysis = analysis_of(run, [finding])
    page = render_html([analysis])
    size = len(page.encode("utf-8"))
    assert size < 2 * 1024 * 1024, size
    assert "shape-preserving" in page  # downsampled, and says so in the chart's desc


def test_metric_without_chart_panel_findings_go_to_first_chart() -> None:
    run = divergent_run()
    findings = [
        *divergent_findings(),
        Finding(
            detector="throughput",
            title="slow",
            severity=Severity.WARNING,
            metric="not/logged",
            step_start=10,
            step_end=20,
            message="m",
        ),
    ]
    charts, _ = chart_plan(analysis_of(run, findings))
    assert "slow" in [f.title for f in charts[0].findings]


def _palette(block: str) -> dict[str, tuple[int, int, int]]:
    return {
        name: (int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16))
        for name, value in re.findall(r"--([a-z0-9-]+): #([0-9a-f]{6})", block)
    }


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _blend(
    under: tuple[int, int, int], over: tuple[int, int, int], alpha: float
) -> tuple[float, float, float]:
    r, g, b = ((1 - alpha) * u + alpha * o for u, o in zip(under, over, strict=True))
    return (r, g, b)


def test_text_colours_meet_wcag_aa_in_light_and_dark() -> None:
    """Every text colour on its background has a contrast ratio of at least 4.5:1."""
    light_css, dark_css = CSS.split("@media (prefers-color-scheme: dark)", 1)
    light = _palette(light_css.split("}", 1)[0])
    dark = {**light, **_palette(dark_css.split("} }", 1)[0])}
    white = (255, 255, 255)
    for palette in (light, dark):
        for text in ("fg", "muted", "error", "warning", "info", "ok"):
            for ground in ("bg", "panel"):
                assert _contrast(palette[text], palette[ground]) >= 4.5, (text, ground)
        for line in ("line-0", "line-1", "line-2", "line-3"):
            assert _contrast(palette[line], palette["panel"]) >= 4.5, line
        nan_band = _blend(palette["panel"], palette["nonfinite"], 0.22)
        assert _contrast(palette["nonfinite-text"], nan_band) >= 4.5
    for badge in re.findall(r"\.sev-\w+\.sev \{ background: #([0-9a-f]{6})", CSS):
        colour = (int(badge[0:2], 16), int(badge[2:4], 16), int(badge[4:6], 16))
        assert _contrast(white, colour) >= 4.5, badge


def test_edge_case_runs_render() -> None:
    """Empty runs, single points, all-NaN, constant, negative and huge-step series."""
    cases = {
        "empty": make_run({}),
        "single": make_run({"train/loss": ([7], [0.5])}),
        "all_nan": make_run({"train/loss": ([1, 2, 3], [np.nan, np.inf, -np.inf])}),
        "constant": make_run({"lr": (np.arange(100), np.full(100, 3e-4))}),
        "negative": make_run({"eval/reward": (np.arange(50), np.linspace(-5, 2, 50))}),
        "huge_steps": make_run({"train/loss": (np.arange(10) * 10**12, np.linspace(3.0, 1.0, 10))}),
        "zero_loss": make_run({"train/loss": (np.arange(20), np.r_[np.zeros(10), np.ones(10)])}),
    }
    for name, run in cases.items():
        page = render_html([analysis_of(run, [])])
        assert_self_contained(page)
        svgs = svg_elements(page)
        assert (len(svgs) == 0) == (name == "empty"), name
    all_nan = render_html([analysis_of(cases["all_nan"], [])])
    assert "NaN/Inf" in all_nan


def test_every_sink_neutralises_a_large_hostile_text() -> None:
    """200 KB of hostile text comes out of every sink inert. How fast each sink is (a
    regex that backtracked quadratically would take minutes here) is measured by `make
    bench`'s reports case, which prints the 1x/2x ratio, not asserted in a test."""
    from trainspotter.report import escape

    blob = ("\x1b]" + "a://www.x @y #1 [z](w) <b> | % \n\r" * 3) * 2_000
    outputs = {name: sink(blob) for name, sink in escape.SINKS.items()}
    for name, out in outputs.items():
        assert "\x1b" not in out, name
        assert out.count("www") >= 2_000 * 3, name  # the text is kept, only neutralised
    assert "<b>" not in outputs["html_text"]
    assert "[z](w)" not in outputs["markdown_text"] and "@y" not in outputs["markdown_text"]
    assert "[z](w)" not in outputs["sarif_text"]
    for name in ("workflow_message", "workflow_property"):
        assert "\n" not in outputs[name] and "\r" not in outputs[name], name


def test_healthy_run_says_passed_and_shades_nothing() -> None:
    """Info notes (a converged tail) are listed, not drawn: a band reads as a problem."""
    steps = every(2000, 10)
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps)), "lr": (steps, warmup_cosine(steps))}
    )
    note = Finding("plateau", "loss converged", Severity.INFO, "train/loss", 1500, 2000, "m")
    page = render_html([analysis_of(run, [note], ran=["plateau", "spikes"])])
    assert '<span class="sev sev-ok">passed</span>no warnings or errors; 1 info note below' in page
    assert 'class="band' not in page and "sev-info rect" in page  # style only, no band
    assert 'id="log1-F1"' in page and "loss converged" in page  # the note is listed
    assert ">info</span>" in page  # its own badge, in the findings list


def test_job_bookkeeping_metrics_are_tabled_not_charted() -> None:
    steps = every(1000, 100)
    run = make_run(
        {
            "train/loss": (steps, decaying_loss(steps)),
            "eval/loss": (steps, decaying_loss(steps, seed=1)),
            "eval/accuracy": (steps, np.linspace(0.5, 0.9, steps.size)),
            "eval/runtime": (steps, np.full(steps.size, 3.2)),
            "eval/samples_per_second": (steps, np.full(steps.size, 310.0)),
            "eval/steps_per_second": (steps, np.full(steps.size, 9.7)),
            "total_flos": (steps, np.full(steps.size, 1e15)),
        }
    )
    charts, skipped = chart_plan(analysis_of(run, []))
    charted = {ln.name for c in charts for ln in c.lines}
    assert charted == {"train/loss", "eval/loss", "eval/accuracy"} and skipped == []
    page = render_html([analysis_of(run, [])])
    assert "<code>eval/runtime</code>" in page  # still in the metrics table
    # a finding about one of them brings its chart back
    slow = Finding("throughput", "eval slowed", Severity.WARNING, "eval/runtime", 500, 900, "m")
    charts, _ = chart_plan(analysis_of(run, [slow]))
    assert "eval/runtime" in [c.title for c in charts]


def test_lr_log_axis_when_it_jumps_or_spans_decades() -> None:
    steps = every(1000, 1)
    cosine = warmup_cosine(steps, peak=1e-3, warmup=50)
    jump = np.where(steps >= 300, cosine * 100, cosine)
    step_decay = 1e-2 * 0.1 ** (steps // 250)
    assert not schedule_wants_log(make_run({"lr": (steps, cosine)}).metrics["lr"])
    for values in (jump, step_decay):
        series = make_run({"lr": (steps, values)}).metrics["lr"]
        assert schedule_wants_log(series)
        run = make_run({"train/loss": (steps, decaying_loss(steps)), "lr": (steps, values)})
        charts, _ = chart_plan(analysis_of(run, []))
        assert charts[1].title == "Learning rate" and charts[1].log_forced
        desc = render_html([analysis_of(run, [])])
        assert "Learning rate (log scale)" in desc
    # an LR of 0 (a warmup from 0) sits on the bottom edge of the log axis, no NaN drawn
    with_zero = jump.copy()
    with_zero[0] = 0.0
    run = make_run({"train/loss": (steps, decaying_loss(steps)), "lr": (steps, with_zero)})
    page = render_html([analysis_of(run, [])])
    assert "nan" not in page.lower().replace("nan/inf", "")
