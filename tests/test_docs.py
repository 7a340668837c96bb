"""The README tells the truth about the CLI: every command and detector is documented."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainspotter.cli import build_parser
from trainspotter.detectors import DETECTORS
from trainspotter.readers import READERS
from trainspotter.report import REPORTS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _subcommands() -> list[str]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("no subcommands")


def test_every_subcommand_is_in_the_readme() -> None:
    for command in _subcommands():
        assert f"trainspotter {command}" in README, command


def test_every_detector_format_and_output_is_in_the_readme() -> None:
    for name in DETECTORS:
        assert f"| `{name}` |" in README, name
    for name in READERS:
        assert f"`{name}`" in README, name
    for name in REPORTS:
        assert f"`{name}`" in README, name


def test_every_analyze_option_is_in_the_readme() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    analyze = sub.choices["analyze"]
    for action in analyze._actions:
        for option in action.option_strings:
            if option.startswith("--") and option != "--help":
                assert option in README, option
