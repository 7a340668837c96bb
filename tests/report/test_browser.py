"""Each example's HTML report in a real browser: it renders, and it fetches nothing.

Needs Debian's `chromium` (.ci/run installs it); skipped with a reason where it is absent,
except under CI=true, where a missing browser fails the run instead of hiding the check.
Set TRAINSPOTTER_SCREENSHOT_DIR to keep the screenshots for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser import capture, chromium_path, measure, render_example, summarize_png
from report_fixtures import (
    analysis_of,
    assert_self_contained,
    divergent_findings,
    divergent_run,
)

from trainspotter.report.html import render_html

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("*/trainer_state.json"))

if chromium_path() is None and os.environ.get("CI") == "true":
    # .ci/run installs chromium: in CI a missing browser is a broken setup, not a skip.
    raise RuntimeError("CI=true but chromium is not installed (.ci/run should install it)")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does)",
    ),
]


def _keep(png: bytes, name: str) -> None:
    target = os.environ.get("TRAINSPOTTER_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / name).write_bytes(png)


def _assert_rendered(png: bytes) -> None:
    summary = summarize_png(png)
    assert (summary.width, summary.height) == (1280, 2000)
    # a blank page has no content rows; a report with charts has hundreds
    assert summary.content_rows > 0.3, summary
    assert summary.nonzero_bytes > 0.005, summary


def test_network_check_catches_a_page_that_fetches(tmp_path: Path) -> None:
    """The control: a page with external resources is caught (nothing leaves the machine:
    every host name resolves to nothing)."""
    page = tmp_path / "control.html"
    page.write_text(
        '<!DOCTYPE html><body style="background:url(http://tracker.invalid/a.png)">'
        '<img src="https://tracker.invalid/b.png"><p>control</p></body>'
    )
    shot = capture(page)
    assert sorted(shot.page_requests) == [
        "http://tracker.invalid/a.png",
        "https://tracker.invalid/b.png",
    ]
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><body></body>")
    assert summarize_png(capture(blank).png).content_rows < 0.01


@pytest.mark.parametrize("folder", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_report_renders_offline(folder: Path, tmp_path: Path) -> None:
    page = tmp_path / f"{folder.name}.html"
    render_example(folder, page)
    assert_self_contained(page.read_text(encoding="utf-8"))
    shot = capture(page)
    assert shot.page_requests == []
    _assert_rendered(shot.png)
    _keep(shot.png, f"{folder.name}.png")


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_synthetic_report_renders_in_both_colour_schemes(dark: bool, tmp_path: Path) -> None:
    page = tmp_path / "synthetic.html"
    page.write_text(render_html([analysis_of(divergent_run(), divergent_findings())]))
    shot = capture(page, dark=dark)
    assert shot.page_requests == []
    _assert_rendered(shot.png)
    _keep(shot.png, f"synthetic-{'dark' if dark else 'light'}.png")


def test_examples_exist_or_say_so() -> None:
    if not EXAMPLES:
        pytest.skip("no examples/*/trainer_state.json yet")
    assert shutil.which("chromium") or Path("/usr/bin/chromium").exists()


WIDTHS = (420, 800, 1400)
MIN_FONT_PX = 11.0
MAX_CHART_FONT_PX = 13 * 1.5
"""The largest chart text (13 px titles) may be drawn at: each chart comes in several
widths, so no window blows a chart's labels up much either."""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("example", ["healthy", "divergence"])
def test_readable_at_each_width(example: str, width: int, tmp_path: Path) -> None:
    """No horizontal overflow and no text under 11 px (chart text measured as drawn:
    its CSS size times the SVG's scale on screen) at 420, 800 and 1400 px."""
    page = tmp_path / f"{example}.html"
    render_example(REPO / "examples" / example, page)
    layout = measure(page, width)
    assert layout.view_width == width
    assert layout.scroll_width <= width, layout.overflowing
    assert layout.overflowing == []
    chart_text = [size for size, _, svg in layout.fonts if svg]
    assert len(chart_text) > 20  # tick labels, titles: the charts were drawn
    too_small = [(size, text) for size, text, _ in layout.fonts if size < MIN_FONT_PX]
    assert too_small == []
    assert max(chart_text) <= MAX_CHART_FONT_PX
    summary = summarize_png(layout.png)
    assert summary.width == width and summary.content_rows > 0.3
    _keep(layout.png, f"{example}-{width}.png")


def test_the_measure_catches_overflow_and_small_text(tmp_path: Path) -> None:
    """The control: a page that overflows and has 8 px text is caught."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><meta name="viewport" content="width=device-width">'
        '<body style="margin:0"><div style="width:900px">wide</div>'
        '<svg viewBox="0 0 960 100" style="width:420px"><text x="0" y="50" '
        'font-size="12">tiny</text></svg></body>'
    )
    layout = measure(page, 420)
    assert layout.scroll_width > 420 and layout.overflowing
    sizes = {text: size for size, text, _ in layout.fonts}
    assert sizes["tiny"] < 6
