"""The `trainspotter` command: argument parsing and composition only.

Subcommands:
  analyze PATH...   read each log, run the detectors, print or write a report
  detectors         list the detector ids, what each finds, and its defaults
  explain ID        print a detector's documentation (its docstring)

Exit codes (the same in every front end): 0 nothing at or above --fail-on, 1 the gate
failed, 2 bad input or usage (one line on stderr, no traceback), 3 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from trainspotter import __version__
from trainspotter.analysis import Analysis, analyze
from trainspotter.detectors import DETECTORS
from trainspotter.errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    TrainspotterError,
    UsageError,
)
from trainspotter.model import Severity
from trainspotter.readers import READERS, ReadOptions, read_log
from trainspotter.report import REPORTS, RenderOptions

PROG = "trainspotter"


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in our one-line format with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to generate the README's CLI reference)."""
    parser = _Parser(
        prog=PROG,
        description="Diagnose what went wrong in a training run from the log it already writes.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks instead of one-line errors"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    analyze_cmd = sub.add_parser(
        "analyze",
        help="analyse one or more training logs",
        description="Read each log (file or folder), run every detector and report.",
    )
    analyze_cmd.add_argument("paths", nargs="+", metavar="PATH", help="log file or folder")
    analyze_cmd.add_argument(
        "--format", choices=sorted(READERS), help="force the log format (default: sniffed)"
    )
    analyze_cmd.add_argument(
        "--output", choices=list(REPORTS), default="terminal", help="report format"
    )
    analyze_cmd.add_argument("--out", metavar="FILE", help="write the report here, not stdout")
    analyze_cmd.add_argument(
        "--fail-on",
        choices=[s.label for s in Severity],
        default="error",
        help="exit 1 when a finding is at or above this severity (default: error)",
    )
    analyze_cmd.add_argument("--run", metavar="NAME", help="pick one run from a multi-run file")
    analyze_cmd.add_argument("--verbose", action="store_true", help="also list every metric")

    sub.add_parser("detectors", help="list the detectors and their defaults")
    explain_cmd = sub.add_parser("explain", help="print a detector's documentation")
    explain_cmd.add_argument("detector", metavar="ID", help="a detector id")
    return parser


def _use_color(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ


def _write_output(text: str, out: str | None, inputs: Sequence[Path]) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    target = Path(out)
    resolved = target.resolve()
    if any(resolved == p.resolve() for p in inputs):
        raise UsageError(f"--out {out} would overwrite an input log")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None


def cmd_analyze(args: argparse.Namespace) -> int:
    """Read, analyse, render; exit by the worst severity."""
    fail_on = Severity.parse(args.fail_on)
    options = ReadOptions(run_name=args.run)
    analyses: list[Analysis] = []
    for path in args.paths:
        run = read_log(path, fmt=args.format, options=dataclasses.replace(options, display_path=path))
        analyses.append(analyze(run))
    color = args.out is None and args.output == "terminal" and _use_color(sys.stdout)
    render = RenderOptions(color=color, fail_on=fail_on, verbose=args.verbose)
    text = REPORTS[args.output].render(analyses, render)
    _write_output(text, args.out, [Path(p) for p in args.paths])
    worst = [a.worst for a in analyses if a.worst is not None]
    return EXIT_GATE_FAILED if worst and max(worst) >= fail_on else EXIT_OK


def _defaults(params_type: type) -> str:
    fields = dataclasses.fields(params_type) if dataclasses.is_dataclass(params_type) else ()
    return ", ".join(f"{f.name}={f.default!r}" for f in fields)


def cmd_detectors(args: argparse.Namespace) -> int:
    """One block per detector: id, summary, defaults."""
    for name, detector in DETECTORS.items():
        print(f"{name}: {detector.summary}")
        defaults = _defaults(detector.Params)
        if defaults:
            print(f"    defaults: {defaults}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    """The detector's docstring, which is its documentation."""
    detector = DETECTORS.get(args.detector)
    if detector is None:
        raise UsageError(
            f"unknown detector {args.detector!r} (one of: {', '.join(DETECTORS) or 'none'})"
        )
    module = sys.modules[type(detector).__module__]
    doc = inspect.getdoc(type(detector)) or inspect.getdoc(module) or "(undocumented)"
    print(f"{args.detector}: {detector.summary}\n\n{doc}")
    defaults = _defaults(detector.Params)
    if defaults:
        print(f"\nDefaults: {defaults}")
    return EXIT_OK


COMMANDS = {"analyze": cmd_analyze, "detectors": cmd_detectors, "explain": cmd_explain}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: returns the exit code (never raises for bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except TrainspotterError as exc:
        if debug:
            traceback.print_exc()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output (e.g. `| head`) went away: not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a raw traceback
        if debug:
            traceback.print_exc()
        print(
            f"{PROG}: internal error: {type(exc).__name__}: {exc} "
            "(a bug in trainspotter; rerun with --debug and report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]
