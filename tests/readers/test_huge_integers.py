"""D2 (ADVERSARIAL.md): an integer too big for a float in a CSV cell (step or metric) is
read as +-Inf and handled like any non-finite value, not an OverflowError (exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainspotter.cli import main

HUGE = "1" + "0" * 400


@pytest.mark.parametrize(
    ("rows", "expected_exit"),
    [
        (f"1,1.0\n{HUGE},2.0\n", 0),  # the step column: row numbers are used instead
        (f"1,1.0\n2,{HUGE}\n3,1.0\n", 1),  # a metric: +Inf, a divergence finding
        (f"1,1.0\n2,-{HUGE}\n3,1.0\n", 1),
    ],
)
def test_huge_integer_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: str, expected_exit: int
) -> None:
    path = tmp_path / "x.csv"
    path.write_text("step,loss\n" + rows, encoding="utf-8")
    assert main(["analyze", str(path)]) == expected_exit, capsys.readouterr().err
    assert "internal error" not in capsys.readouterr().err
