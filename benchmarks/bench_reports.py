"""Report-side speed for `make bench` (run_all.py's `reports` case).

Tests check what the reports contain (size caps, downsampling, escaping); how fast they
are is measured here, never asserted in a test (a timed assertion fails on a busy
machine and says nothing on a quiet one):

1. the HTML page of a 1M-step run (benchmarks/logs.py's curves): seconds and bytes;
2. `m4_indices` choosing the drawn points of a 1M-point series;
3. every escaping sink on 200 KB and 400 KB of hostile text: seconds for each, and the
   ratio between the two sizes (about 2 for a linear pass; a quadratic regex would show
   about 4).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import logs
import numpy as np

HOSTILE_UNIT = "\x1b]" + "a://www.x @y #1 [z](w) <b> | % \n\r" * 3


def _seconds(work: Callable[[], object], times: int) -> float:
    """The fastest of `times` runs (the least disturbed one on a shared machine)."""
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def case_reports(quick: bool) -> dict[str, Any]:
    """The three measurements, as plain numbers."""
    from trainspotter.analysis import analyze
    from trainspotter.model import Run, Series
    from trainspotter.report import REPORTS, RenderOptions, escape
    from trainspotter.report.downsample import m4_indices

    times = 1 if quick else 3
    steps = 100_000 if quick else 1_000_000
    c = logs.curves(steps)
    metrics = {}
    for name in ("loss", "lr", "grad_norm", "step_time"):
        metrics[name], _ = Series.build(c["step"].astype(np.int64), c[name])
    analysis = analyze(Run(metrics=metrics, source_format="csv", source_path="bench.csv"))
    pages: list[str] = []

    def render() -> None:
        pages.append(REPORTS["html"].render([analysis], RenderOptions()))

    html_s = _seconds(render, times)
    x = np.arange(steps, dtype=np.int64)
    y = np.random.default_rng(0).normal(size=steps)
    m4_s = _seconds(lambda: m4_indices(x, y, 900), times)
    escaping = []
    for name, sink in escape.SINKS.items():
        small = HOSTILE_UNIT * 2_000
        large = small * 2
        s_small = _seconds(functools.partial(sink, small), times)
        s_large = _seconds(functools.partial(sink, large), times)
        escaping.append(
            {
                "sink": name,
                "kb": len(small) // 1024,
                "seconds": s_small,
                "seconds_2x": s_large,
                "ratio": s_large / s_small if s_small > 0 else float("nan"),
            }
        )
    return {
        "steps": steps,
        "html_seconds": html_s,
        "html_bytes": len(pages[-1].encode("utf-8")),
        "m4_seconds": m4_s,
        "escaping": escaping,
    }


def reports_table(result: dict[str, Any]) -> list[str]:
    """The markdown lines for run_all's output."""
    out = [
        "",
        "## Reports: HTML page, downsampling, escaping",
        "",
        "| what | size | seconds |",
        "|---|---:|---:|",
        f"| HTML page of a {result['steps']:,}-step run | {result['html_bytes']:,} bytes | "
        f"{result['html_seconds']:.2f} |",
        f"| m4_indices, {result['steps']:,} points to 900 columns | - | "
        f"{result['m4_seconds']:.3f} |",
        "",
        "| escaping sink | text | seconds | seconds at 2x | ratio (2 = linear) |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["escaping"]:
        out.append(
            f"| {row['sink']} | {row['kb']} KB | {row['seconds']:.4f} | "
            f"{row['seconds_2x']:.4f} | {row['ratio']:.2f} |"
        )
    return out
