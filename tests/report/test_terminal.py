"""The terminal report with hostile log text: no escape sequence, no CI workflow command."""

from __future__ import annotations

import re

import pytest

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


@pytest.mark.parametrize(
    "options",
    [
        RenderOptions(),
        RenderOptions(quiet=True),
        RenderOptions(width=40),
        RenderOptions(finding="F1"),
        RenderOptions(color=True, width=120),
    ],
    ids=["terse", "quiet", "narrow", "finding", "colour"],
)
def test_hostile_log_text_is_inert_in_every_layout(
    hostile: Analysis, options: RenderOptions
) -> None:
    text = REPORTS["terminal"].render([hostile], options)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)  # our own colours only
    assert "\x1b" not in plain and "\r" not in text and "\x00" not in text
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", text)
    for line in plain.splitlines():
        assert not line.lstrip().startswith(("::", "##[")), line
