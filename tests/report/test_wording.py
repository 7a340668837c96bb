"""One formatter for steps, values and counts; wrapping never cuts a word; colour rules."""

from __future__ import annotations

import io

import pytest

from trainspotter.model import Severity
from trainspotter.report import wording
from trainspotter.report.common import counts_phrase, plural
from trainspotter.report.escape import format_number


def test_steps_have_no_thousands_separator_anywhere() -> None:
    assert wording.step(1500) == "step 1500"
    assert wording.step_span(1500, 1500) == "step 1500"
    assert wording.step_span(12000, 13500) == "steps 12000-13500"
    # the reports' shared helpers and the evidence formatter say it the same way
    assert format_number(12000) == "12000"
    assert wording.value(12000) == "12000"


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (0.011843, "0.01184"),
        (2.8e36, "2.800e+36"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Inf"),
        (0, "0"),
        (True, "True"),
        ("yes", "yes"),
    ],
)
def test_values(x: float | int | str, shown: str) -> None:
    assert wording.value(x) == shown == format_number(x)


def test_counts_and_plurals() -> None:
    assert wording.count(1, "log") == "1 log"
    assert wording.count(2, "log") == "2 logs"
    assert wording.count(12040, "point") == "12,040 points"
    assert wording.count(3, "info") == "3 info"
    assert wording.count(1, "poll") == "1 poll"
    assert wording.counts_phrase({"error": 1, "warning": 2, "info": 0}) == "1 error, 2 warnings"
    assert wording.counts_phrase({"error": 0, "warning": 0}) == "0 errors"
    assert plural(2, "warning") == "2 warnings"
    counts = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 0}
    assert counts_phrase(counts) == "1 error, 2 warnings, 0 info"


def test_wrap_never_cuts_a_word() -> None:
    long_word = "x" * 50
    text = f"short words then {long_word} and more words after it " * 3
    for width in (20, 40, 80):
        lines = wording.wrap(text, width, "  ")
        assert " ".join(line.strip() for line in lines).split() == text.split()
        for line in lines:
            assert len(line) <= width or line.strip() == long_word


def test_one_line_cuts_at_a_word() -> None:
    cut = wording.one_line("alpha beta gamma delta epsilon", 20)
    assert len(cut) <= 20 and cut.endswith("...") and cut.startswith("alpha beta")


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("mode", "tty", "env", "coloured"),
    [
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"NO_COLOR": ""}, True),  # no-color.org: set and not empty
        ("auto", False, {"FORCE_COLOR": "1"}, True),
        ("auto", False, {"FORCE_COLOR": "0"}, False),
        ("auto", False, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        ("always", False, {"NO_COLOR": "1"}, True),
        ("never", True, {"FORCE_COLOR": "1"}, False),
    ],
)
def test_color_rules(mode: str, tty: bool, env: dict[str, str], coloured: bool) -> None:
    assert wording.color_wanted(mode, _Stream(tty), env) is coloured


def test_width_is_80_when_piped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert wording.terminal_width(_Stream(False)) == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert wording.terminal_width(_Stream(False)) == 132
