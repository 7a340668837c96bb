"""A strict parser of the Mermaid `xychart-beta` subset the Markdown report emits.

It accepts exactly what `trainspotter.report.mermaid_chart` writes and rejects anything
else, so a test fails on a block Mermaid might read differently: the numbers follow
Mermaid's own lexer (`[+-]?(\\d+(\\.\\d+)?|\\.\\d+)`: no exponent, no NaN), a quoted string
holds no `"` or newline, every line series has the same length and stays inside the
declared y range, and the `init` directive is JSON with one colour per series.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

NUMBER = r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)"
QUOTED = r'"([^"\n]*)"'
_INIT = re.compile(r"%%\{init: (\{.*\})\}%%")
_TITLE = re.compile(rf"    title {QUOTED}")
_AXIS = re.compile(rf"    ([xy])-axis {QUOTED} ({NUMBER}) --> ({NUMBER})")
_LINE = re.compile(rf"    line \[({NUMBER}(?:, {NUMBER})*)\]")
_BLOCK = re.compile(r"^```mermaid\n(.*?)\n```$", re.S | re.M)


@dataclass(frozen=True)
class XyChart:
    palette: tuple[str, ...]
    title: str
    x_title: str
    x_range: tuple[float, float]
    y_title: str
    y_range: tuple[float, float]
    lines: tuple[tuple[float, ...], ...]


def mermaid_blocks(markdown: str) -> list[str]:
    """The bodies of the ```mermaid fences (the fence lines excluded)."""
    return _BLOCK.findall(markdown)


def parse_xychart(block: str) -> XyChart:
    """The chart, or ValueError naming the first line outside the subset."""
    lines = block.split("\n")
    if len(lines) < 6:
        raise ValueError(f"too few lines: {len(lines)}")
    init = _INIT.fullmatch(lines[0])
    if init is None:
        raise ValueError(f"line 1 is not an init directive: {lines[0]!r}")
    config = json.loads(init.group(1))
    palette = tuple(
        c.strip() for c in config["themeVariables"]["xyChart"]["plotColorPalette"].split(",")
    )
    if not all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in palette):
        raise ValueError(f"palette: {palette}")
    if lines[1] != "xychart-beta":
        raise ValueError(f"line 2: {lines[1]!r}")
    title = _TITLE.fullmatch(lines[2])
    x_axis = _AXIS.fullmatch(lines[3])
    y_axis = _AXIS.fullmatch(lines[4])
    if title is None or x_axis is None or y_axis is None:
        raise ValueError(f"title/axes: {lines[2:5]!r}")
    if x_axis.group(1) != "x" or y_axis.group(1) != "y":
        raise ValueError("axes out of order")
    x_range = (float(x_axis.group(3)), float(x_axis.group(4)))
    y_range = (float(y_axis.group(3)), float(y_axis.group(4)))
    if not (x_range[0] < x_range[1] and y_range[0] < y_range[1]):
        raise ValueError(f"empty range: x {x_range}, y {y_range}")
    series = []
    for number, line in enumerate(lines[5:], start=6):
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(f"line {number}: {line!r}")
        values = tuple(float(v) for v in match.group(1).split(", "))
        if any(not y_range[0] <= v <= y_range[1] for v in values):
            raise ValueError(f"line {number}: a value outside the y range {y_range}")
        series.append(values)
    if len({len(s) for s in series}) != 1:
        raise ValueError("series of different lengths")
    if len(palette) != len(series):
        raise ValueError(f"{len(palette)} colours for {len(series)} series")
    return XyChart(
        palette,
        title.group(1),
        x_axis.group(2),
        x_range,
        y_axis.group(2),
        y_range,
        tuple(series),
    )
