"""Snapshots of the terminal report on real examples, at 80 and 120 columns.

Three bundled examples: a healthy run, one that passes with a warning, one that fails.
Each report is compared with tests/snapshots/terminal/<example>-<width>.txt. After a
deliberate change to the terminal layout, regenerate them and review the diff:

    make snapshots      # TRAINSPOTTER_UPDATE_SNAPSHOTS=1 pytest on this module
    git diff tests/snapshots/

The layout's rules are checked on every snapshot independently of the stored text: no
line is wider than the width, no word is broken, a healthy run is at most two lines.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainspotter.analysis import Analysis, analyze
from trainspotter.cli import main
from trainspotter.readers import read_log
from trainspotter.report import REPORTS, RenderOptions

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = REPO / "tests" / "snapshots" / "terminal"
UPDATE = os.environ.get("TRAINSPOTTER_UPDATE_SNAPSHOTS") == "1"
EXAMPLES = {
    "healthy": "examples/healthy/trainer_state.json",
    "warning": "examples/overfitting/trainer_state.json",
    "failing": "examples/divergence/trainer_state.json",
}
WIDTHS = (80, 120)
_CACHE: dict[str, Analysis] = {}


def _analysis(relative: str, monkeypatch: pytest.MonkeyPatch) -> Analysis:
    """The example analysed under its repository-relative path (as the snapshot shows)."""
    if relative not in _CACHE:
        monkeypatch.chdir(REPO)
        _CACHE[relative] = analyze(read_log(Path(relative)))
    return _CACHE[relative]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_terminal_report_snapshot(name: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = REPORTS["terminal"].render(
        [_analysis(EXAMPLES[name], monkeypatch)], RenderOptions(width=width)
    )
    for line in text.splitlines():
        assert len(line) <= width, line
    unwrapped = REPORTS["terminal"].render(
        [_analysis(EXAMPLES[name], monkeypatch)], RenderOptions(width=10_000)
    )
    assert text.split() == unwrapped.split()  # wrapping moved words, never cut one
    if name == "healthy":
        assert len(text.splitlines()) <= 2, text
    snapshot = SNAPSHOTS / f"{name}-{width}.txt"
    if UPDATE:
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.exists(), f"no snapshot {snapshot}: run with TRAINSPOTTER_UPDATE_SNAPSHOTS=1"
    assert text == snapshot.read_text(encoding="utf-8"), (
        f"the terminal report differs from {snapshot.relative_to(REPO)}; if the change is "
        "deliberate, update it (see this module's docstring)"
    )


def test_healthy_run_is_at_most_two_lines_from_the_command_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("COLUMNS", raising=False)
    for example in ("healthy/trainer_state.json", "healthy/metrics.csv", "sgdr_healthy"):
        assert main(["analyze", f"examples/{example}", "--jobs", "1"]) == 0
        out = capsys.readouterr().out
        assert 1 <= len(out.splitlines()) <= 2, out
        assert out.startswith("PASSED  examples/"), out
        assert all(len(line) <= 80 for line in out.splitlines()), out  # piped: 80 columns
