"""The command line's terminal options and checks: how much the report says (`--verbose`,
`--quiet`, `--finding`), `--color`, a `--fail-on` value with a did-you-mean, and
`explain`'s text. `cli.py` composes them; kept apart so it stays a table of commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys
from collections.abc import Sequence
from typing import TextIO

from trainspotter.analysis import Analysis
from trainspotter.detectors import DETECTORS
from trainspotter.errors import UsageError, did_you_mean
from trainspotter.model import Severity
from trainspotter.report import wording
from trainspotter.report.terminal_doc import inline_text, render_doc
from trainspotter.report.wording import COLOR_MODES, color_wanted, terminal_width

SEVERITY_CHOICES = [s.label for s in Severity]
"""`--fail-on` values (analyze, watch, gate)."""
FAIL_ON_HELP = "{" + ",".join(SEVERITY_CHOICES) + "}"


def severity_choice(text: str) -> Severity:
    """A `--fail-on` value; a typo gets a did-you-mean (argparse's `choices` has none)."""
    if text not in SEVERITY_CHOICES:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r}{did_you_mean(text, SEVERITY_CHOICES)} "
            f"(choose from {', '.join(SEVERITY_CHOICES)})"
        )
    return Severity.parse(text)


def add_fail_on_flag(command: argparse.ArgumentParser, effect: str) -> None:
    """`--fail-on LEVEL` (analyze, compare, watch, gate): a Severity, or None when not
    given; `effect` is its help, what the level does in that command."""
    command.add_argument("--fail-on", type=severity_choice, metavar=FAIL_ON_HELP, help=effect)


def add_detail_flags(command: argparse.ArgumentParser, *, finding: bool) -> None:
    """How much the terminal report says, and in colour or not (analyze, gate)."""
    amount = command.add_mutually_exclusive_group()
    amount.add_argument(
        "--verbose",
        action="store_true",
        help="every finding in full: evidence, every fix, what was checked, every metric",
    )
    amount.add_argument("--quiet", action="store_true", help="only one verdict line per log")
    if finding:
        amount.add_argument(
            "--finding", metavar="ID", help="show one finding (e.g. F2) in full, with its detector"
        )
    add_color_flag(command)


def add_color_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--color",
        choices=COLOR_MODES,
        default="auto",
        help="colour the terminal output (auto: on a terminal, unless NO_COLOR is set; "
        "FORCE_COLOR forces it)",
    )


def check_finding_id(finding_id: str, analyses: Sequence[Analysis]) -> None:
    """`--finding ID` must name a finding of some log: else a one-line error that lists
    the ids there are (and the closest one)."""
    ids = list(dict.fromkeys(f.id for a in analyses for f in a.findings))
    if finding_id not in ids:
        known = f"findings: {', '.join(ids)}" if ids else "no findings"
        raise UsageError(
            f"--finding: no finding {finding_id!r}{did_you_mean(finding_id, ids)} ({known})"
        )


def param_defaults(params_type: type) -> str:
    fields = dataclasses.fields(params_type) if dataclasses.is_dataclass(params_type) else ()
    return ", ".join(f"{f.name}={f.default!r}" for f in fields)


def explain_text(detector_id: str, color_mode: str, stream: TextIO) -> str:
    """`explain ID`: the summary, the docstring rendered for the terminal, the defaults;
    an unknown id is a usage error with a did-you-mean."""
    detector = DETECTORS.get(detector_id)
    if detector is None:
        hint = did_you_mean(detector_id, list(DETECTORS))
        raise UsageError(
            f"unknown detector {detector_id!r}{hint} (one of: {', '.join(DETECTORS) or 'none'})"
        )
    module = sys.modules[type(detector).__module__]
    doc = inspect.getdoc(type(detector)) or inspect.getdoc(module) or "(undocumented)"
    width = terminal_width(stream)
    head = f"{detector_id}: {inline_text(detector.summary)}"
    text = "\n".join(wording.wrap(head, width, "    ", first_indent="")) + "\n\n"
    text += render_doc(doc, width, color_wanted(color_mode, stream))
    defaults = param_defaults(detector.Params)
    if defaults:
        lines = wording.wrap(f"Defaults: {defaults}", width, "    ", first_indent="")
        text += "\n" + "\n".join(lines) + "\n"
    return text
