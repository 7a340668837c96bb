"""Escaping for untrusted text (metric names, run names, file names, values from a log).

A log is written by someone else's code. Every report passes each log-derived string
through the escape function of its sink before it reaches the output. One function per
sink, tested with hostile names in tests/report/test_escape.py:

- terminal: `terminal_text` (and `runner_inert_lines` for a whole printed report)
- one-line messages on stderr (`trainspotter: error: ...`): `message_text`
- HTML and inline SVG: `html_text`
- Markdown for GitHub (job summary, PR comment): `markdown_text`
- GitHub workflow commands: `workflow_message`, `workflow_property`, and
  `fence_workflow_commands` around a whole printed report in GitHub Actions
- SARIF plain-text messages: `sarif_text`
- XML (JUnit): `xml_text` (the XML writer escapes markup; this removes what XML forbids)

JSON needs no function of its own: `json.dumps` escapes everything. This module formats
numbers (`format_number`) but does not decide layout.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Callable

from trainspotter.report import wording

# Bidirectional formatting characters (embeddings, overrides, isolates, marks): they make
# a name display in a different order than it is (`run\u202etxt.exe`), so no sink keeps
# them; U+2028/U+2029 end a line for some readers.
_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
# C0/C1 control characters and DEL, except none: a log-derived string is one line.
_CONTROL = re.compile(rf"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_CONTROL_EXCEPT_NEWLINES = re.compile(
    rf"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]"
)
# CSI / OSC / single-character escape sequences, removed whole so no fragment survives.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def terminal_text(text: str) -> str:
    """Strip ANSI escape sequences and control characters (incl. CR/LF) from log text."""
    return _CONTROL.sub("", _ANSI.sub("", text))


def message_text(text: str) -> str:
    """A one-line message (an error naming a file, a column, a config key) for stderr:
    control, bidi and line-separator characters shown as Python escapes (`\\n`,
    `\\x1b`, `\\u202e`), so the message stays one line that starts with our prefix (no
    `::command::` of a CI runner, no terminal escape sequence) and still says which name
    was meant."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def code_span_text(text: str) -> str:
    """Log text for inside a Markdown code span (a path in the gate's lists): escape
    sequences, control, bidi and line-separator characters removed, so the span stays
    one line that reads in its real order, and backticks turned into `'`, so nothing can
    close it; a code span renders no HTML, links or mentions."""
    return terminal_text(text).replace("`", "'")


def format_number(value: float | int | str) -> str:
    """A number for humans, as every report writes it (`wording.value`)."""
    return wording.value(value)


_ZERO_WIDTH_SPACE = "\u200b"
# CI runners read workflow commands from any line of a job's output that starts, after
# leading whitespace, with `::` (or the older `##[`).
_RUNNER_COMMAND_START = re.compile(r"(?m)^([ \t]*)(:(?=:)|#(?=#\[))")


def runner_inert_lines(text: str) -> str:
    """Printed text (several lines, our layout with log text inside) made inert for a CI
    log: a zero-width space after the first character of any line that would start with
    `::` or `##[`. Our own lines never start so; a wrapped line that starts with a word
    from the log would. For text printed to stdout outside the gate's stop-commands fence.
    """
    return _RUNNER_COMMAND_START.sub(lambda m: m.group(1) + m.group(2) + _ZERO_WIDTH_SPACE, text)


# --- HTML -------------------------------------------------------------------------------


def html_text(text: str) -> str:
    """Log text for HTML (element content and quoted attribute values, inline SVG too):
    ANSI sequences and control characters removed, then `& < > " '` escaped. Nothing a
    log writes can open a tag, close an attribute or start a script."""
    return html.escape(terminal_text(text), quote=True)


def html_name(text: str, limit: int = 120) -> str:
    """A log-derived name (metric, key, path) for HTML: shortened to `limit` characters,
    escaped, and `(empty)` when nothing printable is left."""
    return html_text(shorten(text, limit)) or "<i>(empty)</i>"


# --- Markdown (GitHub job summaries and PR comments) -------------------------------------

# The ASCII characters that start inline syntax anywhere in a line (code, emphasis,
# links and images via `[`, raw HTML and autolinks via `<`, entities, table cells,
# strikethrough, math), escaped with a backslash (CommonMark lets a backslash escape any
# ASCII punctuation). Block syntax (`#`, `-`, `+`, `1.`) only acts at the start of a line,
# where a report never puts log text, so `(`, `#`, `+` and `!` stay readable.
# One translation table (a single pass in C): the specials get a backslash, and `@` a
# zero-width space after it, so GitHub sees no @user/@org/team mention.
_MARKDOWN_TABLE = {ord(c): "\\" + c for c in "\\`*_[]<>|~&$"} | {ord("@"): "@" + _ZERO_WIDTH_SPACE}
# Text GitHub turns into a link or a cross-reference without any syntax: scheme:// and
# www. autolinks (also after `_` or another word character: cmark-gfm links
# `run\_www.x`), #123 and GH-123 issue references.
_WWW = re.compile(r"(?i)(www)\.")
_ISSUE_REF = re.compile(r"(?i)(#|gh-)(?=\d)")


def markdown_text(text: str) -> str:
    """Log text for GitHub-flavoured Markdown, inline (a table cell, a heading, a list).

    Control characters and newlines removed (the text cannot end a table row or start a
    block); Markdown and HTML punctuation backslash-escaped (no raw HTML, no emphasis, no
    `[text](url)` link, no `|` cell break); a zero-width space after `@`, inside `://`,
    after `www` and after `#` or `GH-` before a digit, so GitHub makes no mention,
    autolink or issue reference of it. Use it in Markdown contexts only, never inside an HTML block.
    """
    out = terminal_text(text).translate(_MARKDOWN_TABLE)
    out = out.replace("://", ":" + _ZERO_WIDTH_SPACE + "//")
    out = _WWW.sub(r"\1" + _ZERO_WIDTH_SPACE + ".", out)
    return _ISSUE_REF.sub(r"\1" + _ZERO_WIDTH_SPACE, out)


# --- GitHub Actions workflow commands ----------------------------------------------------


def workflow_message(text: str) -> str:
    """The message part of a workflow command (`::error ...::MESSAGE`): ANSI sequences and
    control characters other than CR/LF removed, then `%`, CR and LF percent-encoded, so
    the command stays one line and no log text can start a command of its own."""
    cleaned = _CONTROL_EXCEPT_NEWLINES.sub("", _ANSI.sub("", text))
    return cleaned.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value of a workflow command (`file=`, `title=`): the message escaping
    plus `:` and `,`, which would otherwise end the value or the property list."""
    return workflow_message(text).replace(":", "%3A").replace(",", "%2C")


def fence_workflow_commands(text: str) -> str:
    """Text for a GitHub Actions log with workflow commands switched off around it:
    `::stop-commands::<fresh random token>`, the text, `::<token>::`. Nothing inside
    (a metric name, a path) can issue a command, and the token cannot be guessed."""
    token = secrets.token_hex(16)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


# --- SARIF ------------------------------------------------------------------------------

_SARIF_TABLE = {ord(c): "\\" + c for c in "\\[]"}


def sarif_text(text: str) -> str:
    """Log text for a SARIF plain-text message: ANSI sequences and control characters
    removed; `\\`, `[` and `]` backslash-escaped, so the text cannot form an embedded link
    (`[text](target)`, SARIF 2.1.0 section 3.11.6) that a viewer would render."""
    return terminal_text(text).translate(_SARIF_TABLE)


# --- XML (JUnit) -------------------------------------------------------------------------

# Characters XML 1.0 forbids anywhere (even as character references).
_XML_ILLEGAL = re.compile("[\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Log text made legal for XML 1.0 (for an XML writer that escapes `& < > "`
    itself): ANSI sequences, control characters, surrogates and U+FFFE/U+FFFF removed."""
    return _XML_ILLEGAL.sub("", terminal_text(text))


SINKS: dict[str, Callable[[str], str]] = {
    "terminal_text": terminal_text,
    "code_span_text": code_span_text,
    "html_text": html_text,
    "markdown_text": markdown_text,
    "workflow_message": workflow_message,
    "workflow_property": workflow_property,
    "sarif_text": sarif_text,
    "xml_text": xml_text,
}
"""Every sink that makes log text inert for one output, by name (for the hostile-text
tests and the escaping benchmark)."""


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters, cut with an ellipsis; apply before escaping so an
    escape sequence is never cut in half."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"
