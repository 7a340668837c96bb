"""`trainspotter compare CANDIDATE --baseline BASELINE`: the arguments and the work.

`cli.py` wires it like every subcommand and reports the result as `analyze` does (every
report format, the same exit rule). The baseline is the config's `baseline:` when
`--baseline` is not given; `rules:` apply either way.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from trainspotter.analysis import Analysis
from trainspotter.batch import analyze_paths
from trainspotter.compare.apply import compare_analyses
from trainspotter.config import Config, load_config
from trainspotter.errors import InputError, UsageError
from trainspotter.model import Severity


def add_compare_parser(sub: Any) -> argparse.ArgumentParser:
    """The `compare` subcommand with its own arguments (`sub` is the CLI's subparsers
    action); the CLI adds the report options it shares with `analyze`."""
    cmd: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="compare a run with a baseline run (a stored run from main)",
        description="Read both logs, align them by step (or epoch/tokens when logged) and "
        "report the candidate's own findings plus `regression` findings: final or best eval "
        "metrics worse than the baseline's beyond the runs' noise (or the configured "
        "margin), a loss curve worse over a sustained stretch, slower steps, findings the "
        "baseline does not have, and failed `rules:`. Exit codes as analyze.",
    )
    cmd.add_argument("candidate", metavar="CANDIDATE", help="the run to check (file or folder)")
    cmd.add_argument(
        "--baseline",
        metavar="BASELINE",
        help="the run to compare with (default: the config's `baseline`)",
    )
    return cmd


def load_baseline(
    path: str, config: Config, fmt: str | None = None, base: Path | None = None
) -> Analysis:
    """The baseline log's analysis (`path` relative to `base`, default the working
    folder); one run only (a baseline of several runs is ambiguous)."""
    analyses = analyze_paths([path], config, jobs=1, fmt=fmt, base=base)
    if len(analyses) != 1:
        raise InputError(path, f"holds {len(analyses)} runs; a baseline must be one run")
    return analyses[0]


def compare_paths(
    candidate: str,
    baseline: str | None,
    config: Config,
    *,
    fmt: str | None = None,
    run_name: str | None = None,
) -> list[Analysis]:
    """Each run of the candidate log, compared with the baseline and the rules."""
    reference = load_baseline(baseline, config, fmt) if baseline is not None else None
    analyses = analyze_paths([candidate], config, jobs=1, fmt=fmt, run_name=run_name)
    return [compare_analyses(a, reference, config) for a in analyses]


def run_compare(args: argparse.Namespace) -> tuple[list[Analysis], Severity, str]:
    """The compared analyses, the gate's level and the baseline used, for `args` (parsed
    by the CLI)."""
    config = load_config(args.config)
    baseline = args.baseline or config.baseline
    if baseline is None:
        raise UsageError("compare needs --baseline BASELINE (or `baseline:` in the config)")
    fail_on: Severity = args.fail_on or config.fail_on
    analyses = compare_paths(args.candidate, baseline, config, fmt=args.format, run_name=args.run)
    return analyses, fail_on, baseline
