"""The terminal report with hostile log text: no escape sequence, no CI workflow command."""

from __future__ import annotations

from trainspotter.analysis import Analysis
from trainspotter.report import REPORTS, RenderOptions


def test_hostile_log_text_is_inert(hostile: Analysis) -> None:
    text = REPORTS["terminal"].render([hostile], RenderOptions(verbose=True))
    assert "\x1b" not in text and "\r" not in text and "\x00" not in text
    for line in text.splitlines():
        assert not line.lstrip().startswith(("::", "##[")), line
    assert "add-mask" in text  # shown, defused


def test_counts_line_for_several_logs(divergent: Analysis, healthy: Analysis) -> None:
    text = REPORTS["terminal"].render([divergent, healthy], RenderOptions())
    assert "\n2 logs: 1 failed, 1 passed; 1 error, 1 warning, 1 info\n" in text
    assert "steps 1810-2100" in text
