"""Comparing analyses made two ways (a local log and its remote copy, or the processes
engine and the Dask engine): each log's full JSON report, its path taken apart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from trainspotter.analysis import Analysis
from trainspotter.report.json_report import analysis_dict


def reports_by_path(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """Source path -> that log's JSON report (as `--output json` writes it) without its
    path; in the analyses' order."""
    out: dict[str, Any] = {}
    for analysis in analyses:
        log = json.loads(json.dumps(analysis_dict(analysis), allow_nan=False))
        out[log["run"].pop("source_path")] = log
    return out
