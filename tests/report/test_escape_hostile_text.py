"""D10 and D11 (ADVERSARIAL.md): hostile text stays inert in error messages, Markdown
rendered like GitHub, and every sink (bidi overrides)."""

from __future__ import annotations

import re
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from trainspotter.cli import main
from trainspotter.report.escape import (
    html_text,
    markdown_text,
    message_text,
    sarif_text,
    terminal_text,
    workflow_message,
    workflow_property,
    xml_text,
)

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.parametrize(
    "text",
    [
        "run_www.evil.example",
        "www.evil.example",
        "see http://evil.example/x and https://evil.example",
        "GH-1",
        "fixes #12",
        "owner/repo#3",
        "@octocat and @org/team",
        "mail me@evil.example",
    ],
)
def test_markdown_text_renders_no_link_reference_or_mention(text: str) -> None:
    markdown = f"metric {markdown_text(text)} here\n"
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    assert "<a" not in html and "href" not in html, html
    # GitHub's references and mentions are not in cmark: none of their triggers survive.
    visible = html.replace("\u200b", "")
    assert visible != html or not re.search(r"(?i)(#\d|gh-\d|@\w|www\.)", text)
    assert not re.search(r"(?i)(#\d|gh-\d|@\w)", html)


@pytest.mark.parametrize(
    "sink",
    [terminal_text, html_text, markdown_text, sarif_text, xml_text, workflow_message,
     workflow_property],
)  # fmt: skip
def test_no_sink_keeps_bidi_controls(sink: object) -> None:
    out = sink(f"loss{BIDI}\u2028exe.txt")  # type: ignore[operator]
    assert not set(out) & set(BIDI + "\u2028"), ascii(out)


def test_message_text_shows_controls_escaped_on_one_line() -> None:
    text = "a\n::warning::x\x1b]8;;http://e\x07\x1bc\u202eabc\r"
    out = message_text(text)
    assert out == "a\\n::warning::x\\x1b]8;;http://e\\x07\\x1bc\\u202eabc\\r"
    assert out.isprintable()


@pytest.mark.parametrize(
    ("file_name", "content", "argv", "shown"),
    [
        (
            "c.csv",
            'step,"a\n::warning::injected_loss"\n',
            ["analyze"],
            "a\\n::warning::injected_loss",
        ),
        (
            "x\n::add-mask::x\x1b]8;;e\x07\x1bc\u202e.csv",
            "",
            ["analyze"],
            "x\\n::add-mask::x\\x1b]8;;e\\x07\\x1bc\\u202e.csv",
        ),
        ("k.yml", '"a\\n::warning::x": 1\n', ["check-config"], "a\\n::warning::x: unknown key"),
    ],
    ids=["column", "file-name", "config-key"],
)
def test_hostile_name_in_error_is_one_inert_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    file_name: str,
    content: str,
    argv: list[str],
    shown: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    Path(file_name).write_text(content, encoding="utf-8")
    assert main([*argv, file_name]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("trainspotter: error: "), lines
    assert lines[0].isprintable(), ascii(lines[0])
    assert shown in lines[0]
