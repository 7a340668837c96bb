"""The Markdown report: headline, tables, details, safety against log text, the 1 MiB cap."""

from __future__ import annotations

import re

import cmarkgfm
from cmarkgfm.cmark import Options
from mermaid_subset import mermaid_blocks
from report_fixtures import HOSTILE, analysis_of, divergent_run

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import REPORTS, RenderOptions
from trainspotter.report.markdown import SUMMARY_LIMIT_BYTES, render_markdown

OUR_TAGS = re.compile(r"</?(details|summary)>")


def test_headline_table_and_details(divergent: Analysis) -> None:
    text = REPORTS["markdown"].render([divergent], RenderOptions())
    first = text.splitlines()[0]
    assert first == "## trainspotter: \U0001f534 failed (1 error, 1 warning, 1 info)"
    # the headline names the log and its root cause, then the incident as JSON chains it
    assert (
        "- \U0001f534 **runs/divergent/trainer\\_state.json**: failed (1 error, 1 warning, "
        "1 info): root cause lr jumped 30x at step 1800 (F1 lr\\_schedule \u2192 F2 divergence)"
    ) in text
    assert "| id | severity | steps | detector | title |" in text
    # The incident reads in chain order: the LR jump (its root cause) is F1, the NaN F2.
    assert "| F1 | \U0001f7e1 warning | step 1800 | lr\\_schedule |" in text
    assert "| F2 | \U0001f534 error | steps 1810-2100 | divergence |" in text
    # one collapsed section per log that needs attention
    assert text.count("<details>") == 1 and text.count("</details>") == 1
    assert "1. Lower the learning rate." in text
    root = "**Root cause:** lr jumped 30x at step 1800 (F1 lr\\_schedule \u2192 F2 divergence)"
    assert root in text
    # details blocks: our tags alone on their lines, Markdown content separated by blank lines
    for block in re.findall(r"<details>.*?</details>", text, flags=re.S):
        assert "\n\n" in block


def test_verdict_follows_fail_on(divergent: Analysis) -> None:
    warning_only = analysis_of(
        divergent.run, [f for f in divergent.findings if f.severity is not Severity.ERROR]
    )
    passed = render_markdown([warning_only], fail_on=Severity.ERROR).splitlines()[0]
    assert passed == (
        "## trainspotter: \U0001f7e1 passed with warnings (0 errors, 1 warning, 1 info)"
    )
    failed = render_markdown([warning_only], fail_on=Severity.WARNING).splitlines()[0]
    assert failed.startswith("## trainspotter: \U0001f7e1 failed (")


def test_root_cause_row_comes_first(divergent: Analysis) -> None:
    text = render_markdown([divergent])
    rows = [line for line in text.splitlines() if re.match(r"\| F\d", line)]
    assert "lr\\_schedule" in rows[0]


def test_healthy_logs_one_line_each_failing_ones_a_section(
    divergent: Analysis, healthy: Analysis
) -> None:
    text = render_markdown([divergent, healthy])
    assert text.splitlines()[0].startswith("## trainspotter: \U0001f534 failed (1 of 2 logs, ")
    assert text.count("\n### ") == 1
    healthy_lines = [line for line in text.splitlines() if "runs/healthy" in line]
    assert healthy_lines == ["- \u2705 runs/healthy/metrics.csv: passed, 1990 steps, no findings"]
    # the headline (verdict, counts, each log's line) comes before any section
    assert text.index("runs/healthy") < text.index("\n### ")


def test_healthy_headline(healthy: Analysis) -> None:
    text = render_markdown([healthy])
    assert text.startswith("## trainspotter: \u2705 passed: no findings\n")
    assert "```mermaid" not in text and "<details>" not in text
    assert len(text.splitlines()) <= 3


def test_log_text_cannot_inject(hostile: Analysis) -> None:
    text = render_markdown([hostile])
    without_ours = OUR_TAGS.sub("", text)
    # no raw HTML tag, no link or image syntax, no autolink, mention or issue reference
    assert re.search(r"(?<!\\)<[A-Za-z/!?]", without_ours) is None
    assert re.search(r"(?<!\\)\]\(", without_ours) is None
    assert "://" not in text and re.search(r"@[A-Za-z0-9]", text) is None
    # (outside the chart's code block, whose colours GitHub does not link)
    outside_chart = re.sub(r"```mermaid\n.*?\n```", "", text, flags=re.S)
    assert re.search(r"(?<!\\)#\d", outside_chart) is None and "www." not in text
    assert "\x1b" not in text and "\r" not in text and "\x00" not in text
    # every table row keeps its five cells: pipes from the log are escaped
    for line in text.splitlines():
        if line.startswith("| F"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 6, line
    # no log-derived text inside our HTML: summaries hold only counts and our words
    for summary in re.findall(r"<summary>(.*?)</summary>", text):
        assert re.fullmatch(r"\d+ findings?: evidence, fixes and what was checked", summary)
    assert "\\<script\\>alert(1)\\</script\\>" in text
    assert HOSTILE[0] not in text


def test_stays_under_the_summary_limit_and_says_so() -> None:
    run = divergent_run()
    findings = [
        Finding(
            detector="spikes",
            title=f"spike {i} " + "x" * 150,
            severity=Severity.WARNING,
            metric="train/loss",
            step_start=i,
            step_end=i + 1,
            message="m" * 400,
            evidence={"ratio": 3.0, "note": "y" * 200},
            fixes=("lower the LR " * 10,),
        )
        for i in range(8000)
    ]
    text = render_markdown([analysis_of(run, findings)])
    size = len(text.encode("utf-8"))
    assert size < SUMMARY_LIMIT_BYTES
    assert "**Truncated**" in text and "detail blocks left out" in text
    assert len(mermaid_blocks(text)) == 1
    assert text.count("<details>") == text.count("</details>")
    # the headline and table header survive truncation
    assert text.startswith("## trainspotter:") and "| id | severity |" in text


def test_small_limit_cuts_rows_too(divergent: Analysis) -> None:
    text = render_markdown([divergent], limit_bytes=8 * 1024 + 400 + 600)
    assert "**Truncated**" in text


def _render_like_github(markdown: str) -> str:
    """cmark-gfm (GitHub's Markdown engine) with its GFM extensions and raw HTML allowed,
    so any HTML that got through would show up in the output."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


ALLOWED_TAGS = {
    "h2", "h3", "p", "strong", "em", "del", "code", "pre", "ol", "ul", "li", "blockquote",
    "table", "thead", "tbody", "tr", "th", "td", "details", "summary",
}  # fmt: skip


def test_rendered_by_cmark_gfm_no_log_html_or_link_survives(hostile: Analysis) -> None:
    html = _render_like_github(render_markdown([hostile]))
    tags = set(re.findall(r"<([a-z0-9]+)[\s>]", html))
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS  # no <a>, <script>, <b>, <img>
    assert "href=" not in html and "src=" not in html
    for row in re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)[1:]:
        assert row.count("<td") == 5, row  # log pipes did not split a cell
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text


def test_rendered_by_cmark_gfm_real_report(divergent: Analysis, healthy: Analysis) -> None:
    html = _render_like_github(render_markdown([divergent, healthy]))
    assert html.count("<details>") == 1 and html.count("<table>") == 1
    assert "<h3>\U0001f534 runs/divergent/trainer_state.json</h3>" in html
    assert '<pre lang="mermaid"><code>%%{init:' in html
    assert "<li>Lower the learning rate.</li>" in html
