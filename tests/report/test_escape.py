"""Terminal escaping of log-derived text, and number formatting."""

from __future__ import annotations

import pytest

from trainspotter.report.escape import format_number, terminal_text

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
        (123456, "123,456"),
        ("text", "text"),
    ],
)
def test_format_number(value: float | int | str, text: str) -> None:
    assert format_number(value) == text
