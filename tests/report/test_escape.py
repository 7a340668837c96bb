"""Escaping of log-derived text for every sink, and number formatting."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainspotter.report.escape import (
    format_number,
    html_name,
    html_text,
    markdown_text,
    runner_inert_lines,
    sarif_text,
    shorten,
    terminal_text,
    workflow_message,
    workflow_property,
    xml_text,
)

HOSTILE = [
    "<script>alert(1)</script>",
    "::add-mask::x",
    "a\n::error::pwned",
    "@org/team",
    "[x](javascript:alert(1))",
    "\x1b[2J",
    "ok\x1b]0;title\x07name",
    "cr\rreturn",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_text_has_no_control_characters(text: str) -> None:
    out = terminal_text(text)
    assert "\x1b" not in out and "\n" not in out and "\r" not in out and "\x07" not in out


def test_terminal_text_removes_whole_escape_sequences() -> None:
    assert terminal_text("\x1b[2Jloss\x1b[31m") == "loss"
    assert terminal_text("ok\x1b]0;title\x07name") == "okname"
    assert terminal_text("a\n::error::pwned") == "a::error::pwned"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Inf"),
        (float("-inf"), "-Inf"),
        (0.41234567, "0.4123"),
        (1234567.0, "1.235e+06"),
        (0.0001234, "1.234e-04"),
        (12, "12"),
        (123456, "123456"),  # a step or a count in evidence: as the log writes it
        ("text", "text"),
    ],
)
def test_format_number(value: float | int | str, text: str) -> None:
    assert format_number(value) == text


# --- one sink at a time, hostile names ---------------------------------------------------

HOSTILE_ALL = [*HOSTILE, "%0A::warning::x", "https://evil.example www.evil.example #12", "a|b"]


@pytest.mark.parametrize("text", HOSTILE_ALL)
def test_html_text_escapes_markup_and_controls(text: str) -> None:
    out = html_text(text)
    assert "<" not in out and ">" not in out and '"' not in out and "'" not in out
    assert "\x1b" not in out and "\n" not in out and "\r" not in out
    assert html.unescape(out) == terminal_text(text)


def test_html_text_example() -> None:
    assert html_text("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert html_name("\x1b[2J") == "<i>(empty)</i>"


@pytest.mark.parametrize("text", HOSTILE_ALL)
def test_markdown_text_is_inert(text: str) -> None:
    out = markdown_text(text)
    assert "\n" not in out and "\r" not in out and "\x1b" not in out
    # every markup character is backslash-escaped
    for char in "<>[]|`*_&~$":
        assert re.search(r"(?<!\\)" + re.escape(char), out) is None, (char, out)
    # no mention, autolink or issue reference survives
    assert re.search(r"@[A-Za-z0-9]", out) is None
    assert "://" not in out and re.search(r"(?i)www\.", out) is None
    assert re.search(r"#\d", out) is None


def test_markdown_text_examples() -> None:
    assert markdown_text("@org/team") == "@\u200borg/team"
    assert markdown_text("[x](javascript:alert(1))") == r"\[x\](javascript:alert(1))"
    assert markdown_text("![img](http://x)") == "!\\[img\\](http:\u200b//x)"
    assert markdown_text("a|b") == r"a\|b"
    assert markdown_text("<b>") == r"\<b\>"
    assert markdown_text("plain text 1.5") == "plain text 1.5"


@pytest.mark.parametrize("text", HOSTILE_ALL)
def test_workflow_escaping_keeps_one_line(text: str) -> None:
    for out in (workflow_message(text), workflow_property(text)):
        assert "\n" not in out and "\r" not in out and "\x1b" not in out
    prop = workflow_property(text)
    assert ":" not in prop and "," not in prop


def test_workflow_escaping_examples() -> None:
    assert workflow_message("a\n::error::pwned") == "a%0A::error::pwned"
    assert workflow_message("100%\r\n") == "100%25%0D%0A"
    assert workflow_message("%0A") == "%250A"
    assert workflow_property("a:b,c%") == "a%3Ab%2Cc%25"


@given(st.text())
def test_workflow_message_never_breaks_the_line(text: str) -> None:
    out = workflow_message(text)
    assert "\n" not in out and "\r" not in out and "\x1b" not in out
    decoded = out.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
    if not re.search(r"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f]", text):
        assert decoded == text  # printable text round-trips exactly


@given(st.text())
def test_markdown_text_never_breaks_the_line(text: str) -> None:
    out = markdown_text(text)
    assert "\n" not in out and "\r" not in out
    assert re.search(r"(?<!\\)[<>\[\]|`]", out) is None


def test_sarif_text_escapes_embedded_links() -> None:
    assert sarif_text("[x](1) \\ a") == "\\[x\\](1) \\\\ a"
    assert sarif_text("a\n\x1b[2Jb") == "ab"


@pytest.mark.parametrize("text", HOSTILE_ALL)
def test_xml_text_is_legal_xml(text: str) -> None:
    element = ET.Element("x", attr=xml_text(text))
    element.text = xml_text(text + "\ufffe\ud800")
    parsed = ET.fromstring(ET.tostring(element, encoding="unicode"))
    assert (parsed.text or "") == xml_text(text)


def test_shorten() -> None:
    assert shorten("abcdef", 4) == "abc\u2026"
    assert shorten("abc", 4) == "abc"


def test_runner_inert_lines() -> None:
    text = "F1 ok\n    ::add-mask::x jumped\n::error::pwned\n  ##[group]x\nfine :: here"
    out = runner_inert_lines(text)
    for line in out.splitlines():
        assert not line.lstrip().startswith(("::", "##["))
    assert out.replace("\u200b", "") == text
