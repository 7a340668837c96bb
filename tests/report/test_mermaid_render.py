"""Mermaid's own CLI (`@mermaid-js/mermaid-cli`) renders the Markdown report's chart.

`make mermaid-cli` installs the pinned CLI into .cache/mermaid-cli (npm, about 100 s the
first time) with puppeteer pointed at Debian's chromium; .ci/run does it before `make
test`. Skipped with the reason where it is not installed, except under
TRAINSPOTTER_REQUIRE_MERMAID=1, where a missing CLI fails. TRAINSPOTTER_MERMAID_CLI_DIR
names another install folder.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from mermaid_subset import mermaid_blocks, parse_xychart

from trainspotter.analysis import analyze
from trainspotter.readers import read_log
from trainspotter.report.markdown import render_markdown

REPO = Path(__file__).resolve().parents[2]
CLI_DIR = Path(os.environ.get("TRAINSPOTTER_MERMAID_CLI_DIR", REPO / ".cache" / "mermaid-cli"))
MMDC = CLI_DIR / "node_modules" / ".bin" / "mmdc"
PUPPETEER_CONFIG = CLI_DIR / "puppeteer.json"

if os.environ.get("TRAINSPOTTER_REQUIRE_MERMAID") == "1" and not MMDC.exists():
    raise RuntimeError(f"TRAINSPOTTER_REQUIRE_MERMAID=1 but {MMDC} is missing (make mermaid-cli)")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (MMDC.exists() and PUPPETEER_CONFIG.exists()),
        reason=f"Mermaid's CLI is not installed in {CLI_DIR} (run `make mermaid-cli`: npm, ~100 s)",
    ),
]


def _render(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MMDC), "--quiet", "-p", str(PUPPETEER_CONFIG), "-i", str(source), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_mermaid_cli_renders_the_divergence_chart_to_svg(tmp_path: Path) -> None:
    text = render_markdown([analyze(read_log(REPO / "examples" / "divergence"))])
    (block,) = mermaid_blocks(text)
    chart = parse_xychart(block)
    source = tmp_path / "chart.mmd"
    source.write_text(block + "\n", encoding="utf-8")
    done = _render(source, tmp_path / "chart.svg")
    assert done.returncode == 0, done.stderr
    svg = (tmp_path / "chart.svg").read_text(encoding="utf-8")
    assert 'aria-roledescription="xychart"' in svg
    # one drawn path per series, in the palette's colours, and our title
    for colour in chart.palette:
        assert re.search(rf'stroke="{colour}"', svg, flags=re.I), colour
    assert chart.title in svg


def test_mermaid_cli_rejects_a_broken_block(tmp_path: Path) -> None:
    """The control: the CLI fails on what Mermaid cannot parse (an exponent number), so
    the test above would catch a block GitHub could not draw."""
    source = tmp_path / "bad.mmd"
    source.write_text('xychart-beta\n    title "x"\n    line [1, 2e-5]\n', encoding="utf-8")
    done = _render(source, tmp_path / "bad.svg")
    assert done.returncode != 0
    assert "Parse error" in done.stderr
