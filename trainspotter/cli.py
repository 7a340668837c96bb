"""The `trainspotter` command: argument parsing and composition only.

Subcommands:
  analyze PATH...   read each log, run the detectors, print or write a report
  watch PATH...     follow growing logs, print findings as they appear
  compare RUN --baseline RUN  a run against a baseline run: `regression` findings
  detectors         list the detector ids, what each finds, and its defaults
  explain ID        print a detector's documentation (its docstring)
  gate [PATTERN...] the CI gate: expand globs, analyse every log, write every output
  init [FILE]       write a commented .trainspotter.yml holding every default
  check-config      validate a .trainspotter.yml (line-precise errors)

Exit codes (the same in every front end, `trainspotter.verdict`): 0 nothing at or above
fail_on, 1 the gate failed, 2 bad input or a log that could not be checked (one line on
stderr, no traceback; wins over 1), 3 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from trainspotter import __version__
from trainspotter.analysis import Analysis
from trainspotter.batch import analyze_paths, default_jobs
from trainspotter.compare.command import add_compare_parser, run_compare
from trainspotter.config import (
    CONFIG_NAMES,
    GATE_OUTPUTS,
    ConfigError,
    ConfigErrors,
    default_config_yaml,
    load_config,
)
from trainspotter.detectors import DETECTORS
from trainspotter.discover import input_logs
from trainspotter.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    TrainspotterError,
    UsageError,
)
from trainspotter.gate import GateOptions, run_gate
from trainspotter.model import Severity
from trainspotter.readers import READERS
from trainspotter.report import REPORTS, RenderOptions, wording
from trainspotter.report.escape import fence_workflow_commands, message_text
from trainspotter.report.wording import PIPED_WIDTH, color_wanted, terminal_width
from trainspotter.safe_write import replaces_input, write_file
from trainspotter.sweep import add_sweep_flags, sweep_options
from trainspotter.terminal_options import (
    add_color_flag,
    add_detail_flags,
    add_fail_on_flag,
    check_finding_id,
    explain_text,
    param_defaults,
)
from trainspotter.verdict import exit_code

PROG = "trainspotter"
# `--html FILE`, `--json FILE`, ...: extra reports written in the same run, beside --output.
EXTRA_OUTPUTS = ("html", "json", "markdown", "github", "sarif", "codequality", "junit")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in our one-line format with exit code 2: the
    problem and where to read the usage, never argparse's multi-line usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


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
    _add_paths_argument(analyze_cmd)
    _add_report_options(analyze_cmd)
    analyze_cmd.add_argument(
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="analyse up to N logs at once, one process each (default: the number of cores)",
    )
    _add_watch_command(sub)
    _add_report_options(add_compare_parser(sub))

    sub.add_parser("detectors", help="list the detectors and their defaults")
    explain_cmd = sub.add_parser("explain", help="print a detector's documentation")
    explain_cmd.add_argument("detector", metavar="ID", help="a detector id")
    add_color_flag(explain_cmd)
    _add_gate_commands(sub)
    for command in sub.choices.values():
        # `trainspotter analyze x --debug` works too (SUPPRESS: no default to override the
        # top-level flag; main() looks for --debug anywhere before parsing).
        command.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help=("show tracebacks instead of one-line errors"),
        )
    return parser


def _add_report_options(cmd: argparse.ArgumentParser) -> None:
    """The options `analyze` and `compare` share: config, format, reports, fail_on, run."""
    _add_config_option(cmd)
    cmd.add_argument(
        "--format", choices=sorted(READERS), help="force the log format (default: sniffed)"
    )
    cmd.add_argument("--output", choices=list(REPORTS), default="terminal", help="report format")
    cmd.add_argument("--out", metavar="FILE", help="write the report here, not stdout")
    for fmt in EXTRA_OUTPUTS:
        cmd.add_argument(
            f"--{fmt}",
            metavar="FILE",
            dest=f"extra_{fmt}",
            help=f"also write the {fmt} report to FILE (alongside --output)",
        )
    add_fail_on_flag(
        cmd,
        "exit 1 when a finding is at or above this severity (default: the config's "
        "fail_on, else error)",
    )
    _add_run_option(cmd)
    add_detail_flags(cmd, finding=True)


def _add_config_option(cmd: argparse.ArgumentParser) -> None:
    """`--config FILE`, as analyze, compare, watch and gate take it."""
    cmd.add_argument(
        "--config", metavar="FILE", help="settings file (default: ./.trainspotter.yml if present)"
    )


def _add_paths_argument(cmd: argparse.ArgumentParser) -> None:
    """`PATH...`, as analyze and watch take it."""
    cmd.add_argument(
        "paths", nargs="+", metavar="PATH", help="log file or folder, or a glob pattern"
    )


def _add_run_option(cmd: argparse.ArgumentParser) -> None:
    """`--run NAME`, as analyze, compare and watch take it."""
    cmd.add_argument("--run", metavar="NAME", help="pick one run from a multi-run file")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def _add_watch_command(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`watch`: follow growing logs (see `trainspotter.watch`)."""
    watch_cmd = sub.add_parser(
        "watch",
        help="follow growing logs and print findings as they appear",
        description="Follow each log (file, folder or glob; new matches are picked up, missing "
        "files are waited for), read only what is appended, and print every finding that is "
        "new or grew. Ctrl-C stops with a summary (exit 130).",
    )
    _add_paths_argument(watch_cmd)
    watch_cmd.add_argument(
        "--interval", type=_positive_float, default=2.0, metavar="S", help="seconds between polls"
    )
    add_fail_on_flag(
        watch_cmd,
        "exit 1 when a final finding is at or above this severity, and stop watching at "
        "the first one (default: the config's fail_on, else error, without stopping early)",
    )
    watch_cmd.add_argument(
        "--idle-exit",
        type=_positive_float,
        default=None,
        metavar="S",
        help="stop (with the final analysis and summary) once no log grew for S seconds",
    )
    _add_config_option(watch_cmd)
    watch_cmd.add_argument("--format", choices=sorted(READERS), help="force the log format")
    _add_run_option(watch_cmd)
    watch_cmd.add_argument(
        "--exec",
        dest="exec_command",
        nargs=argparse.REMAINDER,
        default=None,
        metavar="CMD",
        help="last option: run CMD ARGS... (no shell) for each new finding, with the "
        "finding's JSON on stdin",
    )
    add_color_flag(watch_cmd)


def _add_gate_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`gate`, `init` and `check-config`: the CI front end and its config file."""
    gate_cmd = sub.add_parser(
        "gate",
        help="the CI gate: analyse every log the patterns match and write every output",
        description="Expand the glob patterns (default: the config's `paths`), analyse each "
        "log, print the terminal report (and GitHub annotations inside GitHub Actions), "
        "write the summary, comment, JSON and HTML reports to the report folder, and exit "
        "0 (pass), 1 (a finding at or above fail_on) or 2 (a log could not be checked).",
    )
    gate_cmd.add_argument("patterns", nargs="*", metavar="PATTERN", help="glob pattern of logs")
    _add_config_option(gate_cmd)
    add_fail_on_flag(gate_cmd, "override the config's fail_on")
    gate_cmd.add_argument("--format", choices=sorted(READERS), help="force the log format")
    gate_cmd.add_argument(
        "--report-dir", metavar="DIR", help="override the config's report.directory"
    )
    gate_cmd.add_argument(
        "--outputs",
        metavar="LIST",
        help=f"comma-separated outputs, overriding report.outputs ({','.join(GATE_OUTPUTS)})",
    )
    gate_cmd.add_argument(
        "--allow-empty", action="store_true", help="a pattern matching nothing is not an error"
    )
    add_sweep_flags(gate_cmd, _positive_int)
    add_detail_flags(gate_cmd, finding=False)
    gate_cmd.add_argument(
        "--github",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="GitHub Actions mode: annotations and stop-commands fencing "
        "(default: on when GITHUB_ACTIONS=true)",
    )
    init_cmd = sub.add_parser("init", help="write a commented config file with every default")
    init_cmd.add_argument(
        "file", nargs="?", default=CONFIG_NAMES[0], metavar="FILE", help="default: %(default)s"
    )
    check_cmd = sub.add_parser("check-config", help="validate a config file")
    check_cmd.add_argument("file", nargs="?", metavar="FILE", help="default: ./.trainspotter.yml")


def _write_output(text: str, out: str | None, inputs: Sequence[Path]) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    if replaces_input(Path(out), inputs):
        raise UsageError(f"{out} would overwrite an input log")
    write_file(Path(out), text)


def cmd_analyze(args: argparse.Namespace) -> int:
    """Read, analyse, render; exit by the shared rule (`trainspotter.verdict`). An
    unreadable log raises (exit 2) before anything is rendered."""
    config = load_config(args.config)
    fail_on = args.fail_on or config.fail_on
    analyses: list[Analysis] = analyze_paths(
        args.paths,
        config,
        fmt=args.format,
        run_name=args.run,
        jobs=args.jobs or default_jobs(),
        progress=sys.stderr if sys.stderr.isatty() else None,
    )
    return _report(analyses, args, fail_on, input_logs(args.paths))


def _report(
    analyses: list[Analysis], args: argparse.Namespace, fail_on: Severity, inputs: list[Path]
) -> int:
    """Render `--output` (and every `--html FILE`, ...) as analyze and compare do, and
    exit by the shared rule."""
    to_terminal = args.out is None and args.output == "terminal"
    if args.finding is not None:
        if args.output != "terminal":
            raise UsageError("--finding works with the terminal report (--output terminal)")
        check_finding_id(args.finding, analyses)
    render = RenderOptions(
        color=to_terminal and color_wanted(args.color, sys.stdout),
        fail_on=fail_on,
        verbose=args.verbose,
        quiet=args.quiet,
        finding=args.finding,
        width=terminal_width(sys.stdout) if to_terminal else PIPED_WIDTH,
    )
    text = REPORTS[args.output].render(analyses, render)
    if args.out is None and args.output != "github" and os.environ.get("GITHUB_ACTIONS") == "true":
        text = fence_workflow_commands(text)  # log-derived text must not issue commands
    _write_output(text, args.out, inputs)
    plain = dataclasses.replace(render, color=False)
    for fmt in EXTRA_OUTPUTS:
        extra_path = getattr(args, f"extra_{fmt}")
        if extra_path is not None:
            _write_output(REPORTS[fmt].render(analyses, plain), extra_path, inputs)
    return exit_code(analyses, fail_on)


def cmd_compare(args: argparse.Namespace) -> int:
    """A candidate against a baseline (`trainspotter.compare`), reported as analyze."""
    analyses, fail_on, baseline = run_compare(args)
    return _report(analyses, args, fail_on, [Path(args.candidate), Path(baseline)])


def cmd_watch(args: argparse.Namespace) -> int:
    """Follow the logs until --fail-on, --idle-exit or a signal (see `trainspotter.watch`)."""
    from trainspotter.watch import WatchOptions, validate, watch

    if args.exec_command == []:  # `--exec` given, nothing after it
        raise UsageError("--exec needs a command")
    options = validate(
        WatchOptions(
            patterns=tuple(args.paths),
            config=load_config(args.config),
            fmt=args.format,
            run_name=args.run,
            interval=args.interval,
            fail_on=args.fail_on,
            exec_command=tuple(args.exec_command or ()),
            idle_exit=args.idle_exit,
            color=color_wanted(args.color, sys.stdout),
            width=terminal_width(sys.stdout),
        )
    )
    return watch(options)


def cmd_explain(args: argparse.Namespace) -> int:
    """The detector's docstring, which is its documentation, for the terminal."""
    sys.stdout.write(explain_text(args.detector, args.color, sys.stdout))
    return EXIT_OK


def cmd_detectors(args: argparse.Namespace) -> int:
    """One block per detector: id, summary, defaults."""
    for name, detector in DETECTORS.items():
        print(f"{name}: {detector.summary}")
        defaults = param_defaults(detector.Params)
        if defaults:
            print(f"    defaults: {defaults}")
    return EXIT_OK


def cmd_gate(args: argparse.Namespace) -> int:
    """The CI gate (see `trainspotter.gate`)."""
    config = load_config(args.config)
    if args.allow_empty:
        config = dataclasses.replace(config, allow_empty=True)
    outputs = None
    if args.outputs is not None:
        outputs = tuple(o.strip() for o in args.outputs.split(",") if o.strip())
        unknown = [o for o in outputs if o not in GATE_OUTPUTS]
        if unknown:
            raise UsageError(
                f"--outputs: unknown {', '.join(unknown)} (one of: {', '.join(GATE_OUTPUTS)})"
            )
    github = args.github if args.github is not None else os.environ.get("GITHUB_ACTIONS") == "true"
    options = GateOptions(
        patterns=tuple(args.patterns),
        config=config,
        fail_on=args.fail_on,
        format=args.format,
        report_dir=Path(args.report_dir) if args.report_dir else None,
        outputs=outputs,
        github=github,
        color=color_wanted(args.color, sys.stdout),
        verbose=args.verbose,
        quiet=args.quiet,
        width=terminal_width(sys.stdout),
        progress=sys.stderr if sys.stderr.isatty() else None,
        **sweep_options(args),
    )
    return run_gate(options, sys.stdout, sys.stderr).exit_code


def cmd_init(args: argparse.Namespace) -> int:
    """Write the commented default config; never overwrite a file."""
    target = Path(args.file)
    try:
        with target.open("x", encoding="utf-8") as fh:
            fh.write(default_config_yaml())
    except FileExistsError:
        raise UsageError(f"{args.file} already exists; not overwriting it") from None
    except OSError as exc:
        raise UsageError(f"cannot write {args.file}: {exc.strerror or exc}") from None
    print(
        f"wrote {args.file}: every setting with its default; check it with "
        f"`{PROG} check-config {args.file}`"
    )
    return EXIT_OK


def cmd_check_config(args: argparse.Namespace) -> int:
    """Validate a config file: one line and exit 0, or every mistake (one line each,
    `FILE:LINE: KEY: PROBLEM`, sorted by line) and exit 2."""
    if args.file is None and not any(Path(n).is_file() for n in CONFIG_NAMES):
        raise ConfigError(CONFIG_NAMES[0], None, "", "no config file in the working folder")
    try:
        config = load_config(args.file)
    except ConfigErrors as exc:
        for error in exc.errors:
            print(f"{PROG}: error: {message_text(str(error))}", file=sys.stderr)
        if len(exc.errors) > 1:
            print(f"{PROG}: {wording.count(len(exc.errors), 'mistake')} found", file=sys.stderr)
        return EXIT_BAD_INPUT
    disabled = sum(1 for s in config.detectors.values() if not s.enabled)
    print(
        f"{config.source}: OK ({len(config.paths)} path patterns, fail_on={config.fail_on.label}, "
        f"{len(config.detectors)} detector sections, {disabled} disabled, "
        f"{len(config.ignore)} ignore rules)"
    )
    return EXIT_OK


COMMANDS = {
    "analyze": cmd_analyze,
    "compare": cmd_compare,
    "detectors": cmd_detectors,
    "explain": cmd_explain,
    "gate": cmd_gate,
    "init": cmd_init,
    "check-config": cmd_check_config,
    "watch": cmd_watch,
}


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
        print(f"{PROG}: error: {message_text(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output (e.g. `| head`) went away: not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(
            f"{PROG}: internal error: {type(exc).__name__}: {message_text(str(exc))} "
            "(a bug in trainspotter; rerun with --debug and report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]
