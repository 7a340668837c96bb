"""Escaping for untrusted text (metric names, run names, file names, values from a log).

A log is written by someone else's code. Every report passes each log-derived string
through the escape function of its sink before it reaches the output. One function per
sink, tested with hostile names in tests/report/test_escape.py.
"""

from __future__ import annotations

import math
import re

# C0/C1 control characters and DEL, except none: a log-derived string is one line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# CSI / OSC / single-character escape sequences, removed whole so no fragment survives.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def terminal_text(text: str) -> str:
    """Strip ANSI escape sequences and control characters (incl. CR/LF) from log text."""
    return _CONTROL.sub("", _ANSI.sub("", text))


def format_number(value: float | int | str) -> str:
    """A number for humans: integers as-is, floats to 4 significant digits, non-finite
    as NaN / Inf / -Inf. Strings pass through (callers escape them for their sink)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3e}"
    return f"{value:.4g}"
