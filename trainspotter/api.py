"""The public Python API: `trainspotter.analyze(source, config=None) -> Analysis`.

A front end like the CLI: it reads (the reader registry for a path, `readers.memory` for a
DataFrame or records), runs the same check every front end runs (the detectors, then the
config's `ignore` rules) and hands back an `Analysis` that renders itself with the CLI's
own report code, so `to_json()` is byte for byte `analyze --output json` and `to_html()`
the HTML report. Bad input raises `trainspotter.InputError` (a `TrainspotterError`) whose
message is the CLI's one line (`<path>: <problem>`); a bad config raises `ConfigError`;
a source of a type it cannot read raises TypeError.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainspotter import analysis as _analysis
from trainspotter.batch import check_run
from trainspotter.config import Config, load_config
from trainspotter.model import Run
from trainspotter.readers import read_log
from trainspotter.readers.base import ReadOptions
from trainspotter.readers.memory import run_from_frame, run_from_records
from trainspotter.report import REPORTS, RenderOptions

if TYPE_CHECKING:
    import pandas as pd

    Source = str | os.PathLike[str] | Run | pd.DataFrame | Sequence[dict[str, Any]]

ConfigLike = Config | str | os.PathLike[str] | None
"""A Config, the path of a `.trainspotter.yml`, or None for the defaults."""


@dataclasses.dataclass(frozen=True)
class Analysis(_analysis.Analysis):
    """One run's result: `run`, `findings` (ordered: errors first, then chronological),
    `worst` (the highest unsuppressed severity, or None), `chains` (incidents, root cause
    first), `checks` (per detector: the metrics it examined, or why it abstained), and
    the CLI's reports of it."""

    @classmethod
    def of(cls, result: _analysis.Analysis) -> Analysis:
        """The public Analysis of an internal one (same fields)."""
        if isinstance(result, cls):
            return result
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
        return cls(**fields)

    def to_json(self) -> str:
        """The JSON report, as `trainspotter analyze --output json` writes it."""
        return REPORTS["json"].render([self], RenderOptions())

    def to_html(self) -> str:
        """The self-contained HTML report, as `trainspotter analyze --html FILE` writes it."""
        return REPORTS["html"].render([self], RenderOptions())


def resolve_config(config: ConfigLike) -> Config:
    """A Config from what the API was given (a path is loaded and checked)."""
    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    if isinstance(config, str | os.PathLike):
        return load_config(Path(config))
    raise TypeError(
        f"config must be a trainspotter Config, a path to .trainspotter.yml or None, "
        f"not {type(config).__name__}"
    )


def _is_frame(source: object) -> bool:
    # pandas is a dependency, but a DataFrame is recognised without importing it here.
    return type(source).__name__ == "DataFrame" and hasattr(source, "columns")


def to_run(source: object, config: Config, name: str | None = None) -> Run:
    """The Run of any source `analyze` accepts."""
    if isinstance(source, Run):
        return source
    if isinstance(source, str | os.PathLike):
        display = name or os.fspath(source)
        options = ReadOptions(aliases=dict(config.aliases), display_path=display)
        return read_log(Path(source), fmt=config.format_for(display, display), options=options)
    if _is_frame(source):
        return run_from_frame(source, name or "<DataFrame>", config.aliases)  # type: ignore[arg-type]
    if isinstance(source, list | tuple):
        return run_from_records(source, name or "<records>", config.aliases)
    raise TypeError(
        "source must be a path, a trainspotter Run, a pandas DataFrame or a list of dict "
        f"records, not {type(source).__name__}"
    )


def analyze(source: Source, config: ConfigLike = None, *, name: str | None = None) -> Analysis:
    """Analyse one run.

    `source`: the path of a log (file or folder, any format the CLI reads), a `Run`, a
    pandas DataFrame (a step column such as `step`, `global_step` or `iteration`, else
    the index, plus metric columns) or a list of dicts (one per logged row, each with a
    step key). `config`: a `Config`, the path of a `.trainspotter.yml`, or None for the
    defaults. `name`: how reports name the run (default: the path, `<DataFrame>` or
    `<records>`)."""
    chosen = resolve_config(config)
    return Analysis.of(check_run(to_run(source, chosen, name), chosen))


__all__ = ["Analysis", "ConfigLike", "analyze", "check_run", "resolve_config", "to_run"]
