"""Words and numbers every report writes the same way: steps, values, counts, wrapping.

One formatter per kind of thing, so the terminal, `watch`, the gate's log, Markdown and
HTML never disagree ("1,500" here and "1500" there, "1 error" but "2 warning"):

- `step(n)` / `step_span(a, b)`: `step 1500`, `steps 1500-1800`. Steps are written as the
  logs and the detectors' messages and titles write them (no thousands separator, a
  hyphen), so a step found in a report can be searched for in the log as is.
- `value(x)`: a metric value or evidence number: integers as is, floats to 4 significant
  digits (`0.01184`, `2.8e+36`), non-finite as `NaN` / `Inf` / `-Inf`.
- `count(n, noun)`: `1 log`, `2 logs`, `12,040 points`, `0 info` (info is a mass noun):
  counts of things (not steps) get thousands separators.
- `counts_phrase(counts)`: `3 errors, 1 warning` (zeros left out unless all are zero).
- `wrap(text, width, indent)`: lines of at most `width` columns, broken between words only
  (a word longer than a line gets a line of its own, never a break inside it).
- `terminal_width(stream)` and `color_wanted(mode, stream)`: how wide and whether coloured
  a terminal report is (`shutil.get_terminal_size`, 80 when piped; `--color`, `NO_COLOR`,
  `FORCE_COLOR`).

Plain text only: nothing here escapes (each report escapes for its sink, `escape.py`).
"""

from __future__ import annotations

import math
import os
import shutil
import textwrap
from collections.abc import Mapping

PIPED_WIDTH = 80
"""The width of a report that does not go to a terminal."""
MIN_WIDTH = 40
"""Narrower terminals are treated as this wide: a layout with indents needs some room."""
COLOR_MODES = ("auto", "always", "never")

# Nouns whose plural is not noun + "s"; "info" is a mass noun ("3 info").
_PLURALS = {"info": "info", "suppressed": "suppressed", "match": "matches"}


def step(n: int) -> str:
    """`step 1500`."""
    return f"step {int(n)}"


def step_span(start: int, end: int) -> str:
    """`step 1500` for one step, else `steps 1500-1800`."""
    if start == end:
        return step(start)
    return f"steps {int(start)}-{int(end)}"


def value(x: float | int | str) -> str:
    """A number for humans: integers as is, floats to 4 significant digits, non-finite as
    NaN / Inf / -Inf. Strings pass through (callers escape them for their sink)."""
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.3e}"
    return f"{x:.4g}"


def plural(n: int, noun: str) -> str:
    """The noun's form for `n` of it: `log` / `logs`, `info` / `info`."""
    if n == 1:
        return noun
    return _PLURALS.get(noun, noun + "s")


def count(n: int, noun: str) -> str:
    """`1 log`, `2 logs`, `12,040 points`, `0 info`."""
    return f"{n:,} {plural(n, noun)}"


def counts_phrase(counts: Mapping[str, int], *, keep_zeros: bool = False) -> str:
    """`3 errors, 1 warning` from label -> count (in the mapping's order); zeros are left
    out unless `keep_zeros` or every count is zero (`0 errors`)."""
    items = [(label, n) for label, n in counts.items() if n or keep_zeros]
    if not items:
        items = list(counts.items())[:1]
    return ", ".join(count(n, label) for label, n in items)


def wrap(text: str, width: int, indent: str = "", first_indent: str | None = None) -> list[str]:
    """`text` as lines of at most `width` columns (a longer word alone on its line), each
    starting with `indent` (the first with `first_indent` when given)."""
    lines = textwrap.wrap(
        text,
        width=max(width, len(indent) + 10),
        initial_indent=indent if first_indent is None else first_indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [(indent if first_indent is None else first_indent).rstrip()]


def one_line(text: str, width: int) -> str:
    """`text` cut at a word boundary to fit `width` columns, `...` marking the cut."""
    if len(text) <= width:
        return text
    return textwrap.shorten(text, width=max(width, 10), placeholder=" ...")


def terminal_width(stream: object) -> int:
    """The width to wrap a report for `stream`: the terminal's columns (or `COLUMNS`) on a
    terminal, else 80."""
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        columns = os.environ.get("COLUMNS", "")
        return max(int(columns), MIN_WIDTH) if columns.isdigit() else PIPED_WIDTH
    return max(shutil.get_terminal_size((PIPED_WIDTH, 24)).columns, MIN_WIDTH)


def color_wanted(mode: str, stream: object, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output to `stream`: `--color always|never` decide; `auto` means
    a terminal, unless `NO_COLOR` is set (https://no-color.org), and `FORCE_COLOR` (not
    empty, not `0`) forces colour even when piped. NO_COLOR wins over FORCE_COLOR."""
    env = os.environ if environ is None else environ
    if mode == "always":
        return True
    if mode == "never" or env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


__all__ = [
    "COLOR_MODES",
    "PIPED_WIDTH",
    "color_wanted",
    "count",
    "counts_phrase",
    "one_line",
    "plural",
    "step",
    "step_span",
    "terminal_width",
    "value",
    "wrap",
]
