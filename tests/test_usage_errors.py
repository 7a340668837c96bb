"""D18 (ADVERSARIAL.md): a usage error is one line naming the problem and `--help`, exit 2."""

from __future__ import annotations

import pytest

from trainspotter.cli import main


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "the following arguments are required: command (see 'trainspotter --help')"),
        (["analyze"], "required: PATH (see 'trainspotter analyze --help')"),
        (["analyze", "x.csv", "--output", "nope"], "invalid choice: 'nope'"),
        (["analyze", "x.csv", "--bogus"], "unrecognized arguments: --bogus"),
        (["gate", "--fail-on", "never"], "(see 'trainspotter gate --help')"),
        (["nosuchcommand"], "invalid choice: 'nosuchcommand'"),
    ],
)
def test_usage_error_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("trainspotter: error: "), captured.err
    assert captured.err.count("\n") == 1, captured.err
    assert fragment in captured.err
    assert "--help" in captured.err
