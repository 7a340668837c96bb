"""The Markdown report's loss chart: a Mermaid `xychart-beta` block GitHub draws itself.

Checked with a strict parser of the emitted subset (mermaid_subset.py) on the real
divergence example; Mermaid's own CLI renders it in test_mermaid_render.py.
"""

from __future__ import annotations

import html as html_module
import re
from pathlib import Path

import cmarkgfm
import numpy as np
from mermaid_subset import NUMBER, mermaid_blocks, parse_xychart
from report_fixtures import HOSTILE_TEXT, analysis_of, divergent_findings, divergent_run
from synth import decaying_loss, every, make_run

from trainspotter.analysis import Analysis, analyze
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log
from trainspotter.report.markdown import SUMMARY_LIMIT_BYTES, render_markdown
from trainspotter.report.mermaid_chart import SLOTS, caption, loss_chart, mermaid_number

REPO = Path(__file__).resolve().parents[2]


def _slot_steps(low: float, high: float) -> np.ndarray:
    return low + (high - low) * np.arange(SLOTS) / (SLOTS - 1)


def test_divergence_example_has_a_valid_chart_with_the_flagged_range() -> None:
    analysis = analyze(read_log(REPO / "examples" / "divergence"))
    text = render_markdown([analysis])
    blocks = mermaid_blocks(text)
    assert len(blocks) == 1
    chart = parse_xychart(blocks[0])
    assert chart.x_range == (1.0, 399.0)
    flags, train, _eval = chart.lines  # flag marker, train loss, eval loss
    assert len(chart.palette) == 3 and chart.palette[0] == "#d1242f"
    steps = _slot_steps(*chart.x_range)
    top, bottom = chart.y_range[1], chart.y_range[0]
    flagged = steps[np.asarray(flags) == top]
    # the LR jump (F1, step 300) starts the flagged range; it runs to the end of the log
    assert abs(flagged.min() - 300) <= 2.5 and flagged.max() == 399
    assert all(v == bottom for v, s in zip(flags, steps, strict=True) if s < 297)
    # the loss is +Inf/NaN from step 380: drawn on the top edge, said in the caption
    assert all(v == top for v, s in zip(train, steps, strict=True) if s >= 381)
    assert "NaN/Inf at steps 380-399 drawn at the top edge" in text
    assert "blue: train/loss, orange: eval/loss" in text
    # before the jump the (log10) loss lives far below the top: the axis is not flat
    assert max(v for v, s in zip(train, steps, strict=True) if s < 290) < bottom + 5
    assert "(log10)" in chart.title and chart.y_title == "log10 loss"


def test_a_spike_is_drawn_at_its_step() -> None:
    """M4 points sit in the slot of their own step, so one spike survives 40 buckets."""
    steps = every(4000, 1)
    loss = decaying_loss(steps, start=2.0, floor=0.5)
    loss[2345] = 40.0
    run = make_run({"train/loss": (steps, loss)})
    spike = Finding("spikes", "spike", Severity.ERROR, "train/loss", 2345, 2345, "m")
    chart = loss_chart(run, [spike])
    assert chart is not None
    parsed = parse_xychart(mermaid_blocks(chart.block)[0])
    flags, line = parsed.lines
    peak_step = _slot_steps(*parsed.x_range)[int(np.argmax(line))]
    assert abs(peak_step - 2345) <= 4000 / SLOTS
    assert flags[int(np.argmax(line))] == parsed.y_range[1]


def test_gaps_and_nonfinite_ranges() -> None:
    steps = np.concatenate((np.arange(0, 300), np.arange(700, 1000)))
    loss = decaying_loss(steps)
    loss[-50:] = np.nan
    chart = loss_chart(make_run({"train/loss": (steps, loss)}), [])
    assert chart is not None and chart.flagged == () and chart.nonfinite_steps == (950, 999)
    parsed = parse_xychart(mermaid_blocks(chart.block)[0])
    assert len(parsed.lines) == 1 and len(parsed.palette) == 1
    assert "flagged" not in parsed.title
    assert "NaN/Inf at steps 950-999" in caption(chart)


def test_no_loss_no_chart() -> None:
    steps = every(100, 1)
    run = make_run({"lr": (steps, np.full(steps.size, 0.1))})
    assert loss_chart(run, []) is None
    only_one = make_run({"train/loss": (np.array([5]), np.array([1.0]))})
    assert loss_chart(only_one, []) is None


def test_mermaid_numbers_follow_the_mermaid_lexer() -> None:
    for value in (1e-7, 3.2e20, -0.0, 0.0, 123456.7, -2.5e-3, 1.0, 37.0, 0.30000000000000004):
        text = mermaid_number(value)
        assert re.fullmatch(NUMBER, text), (value, text)
        assert abs(float(text) - value) <= abs(value) * 1e-3


def test_hostile_loss_names_stay_out_of_the_block() -> None:
    """The block holds our words and numbers only; the names go to the escaped caption."""
    steps = every(500, 5)
    name = 'x_loss"]\n```\n%%{init: {}}%%\n<img src=x onerror=alert(1)> @org/team ' + HOSTILE_TEXT
    run = make_run({name: (steps, decaying_loss(steps))})
    finding = Finding("spikes", name, Severity.ERROR, name, 100, 120, HOSTILE_TEXT)
    text = render_markdown([analysis_of(run, [finding])])
    (block,) = mermaid_blocks(text)
    parse_xychart(block)
    assert "x_loss" not in block and "onerror" not in block
    html = cmarkgfm.github_flavored_markdown_to_html(text)
    assert html.count('<pre lang="mermaid">') == 1 and html.count("</pre>") == 1
    code = re.search(r'<pre lang="mermaid"><code>(.*?)</code></pre>', html, flags=re.S)
    assert code is not None and html_module.unescape(code.group(1)).rstrip("\n") == block
    caption_line = next(line for line in text.splitlines() if line.startswith("*blue: "))
    assert "x\\_loss" in caption_line and "\\<img" in caption_line and "@\u200borg" in caption_line


def _analyses(count: int) -> list[Analysis]:
    """Half failing (the divergent run, 3 findings), half healthy, distinct paths."""
    failing = divergent_run(n_steps=1000)
    healthy = make_run({"train/loss": (every(1000, 10), decaying_loss(every(1000, 10)))})
    out = []
    for i in range(count):
        run = failing if i % 2 == 0 else healthy
        analysis = analysis_of(
            run, divergent_findings(1000) if i % 2 == 0 else [], ran=["spikes", "divergence"]
        )
        out.append(
            Analysis(
                run=type(run)(
                    metrics=run.metrics,
                    source_format=run.source_format,
                    source_path=f"runs/{i:04d}/trainer_state.json",
                    meta=dict(run.meta),
                ),
                findings=analysis.findings,
                chains=analysis.chains,
                detectors_run=analysis.detectors_run,
            )
        )
    return out


def test_a_thousand_logs_stay_under_the_summary_and_comment_limits() -> None:
    analyses = _analyses(1000)
    summary = render_markdown(analyses)
    assert len(summary.encode("utf-8")) < SUMMARY_LIMIT_BYTES
    assert summary.count("<details>") == summary.count("</details>") > 0
    assert summary.startswith("## trainspotter: \U0001f534 failed (500 of 1000 logs, ")
    assert len(mermaid_blocks(summary)) == 10
    for block in mermaid_blocks(summary):
        parse_xychart(block)
    comment = render_markdown(analyses, limit_bytes=60_000)
    assert len(comment) < 65_536 and len(comment.encode("utf-8")) <= 60_000
    assert comment.count("<details>") == comment.count("</details>")
    assert "**Truncated**" in comment and "log sections" in comment
    # the headline's first lines survive: ten failing logs with root causes, ten healthy
    assert comment.count(": root cause lr jumped 30x") >= 10
    assert comment.count(": passed, ") >= 10
