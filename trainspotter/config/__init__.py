""".trainspotter.yml: the gate's settings, their defaults, validation and JSON Schema.

A package split by job, each module with one reason to change:
- `settings`: the validated `Config` (with `DetectorSettings`, `IgnoreRule`,
  `ReportSettings`), path globs, and the names shared with the CLI and the schema;
- `params`: each detector's parameters read off its `Params` dataclass, and their ranges;
- `parse`: the YAML walker, `parse_config` and `load_config` (errors name file:line:key);
- `generated`: the JSON Schema, `trainspotter init`'s default file and the reference
  in docs/configuration.md. Checking a config never needs it, so it is imported only when one of its
  names is asked for (`from trainspotter.config import config_schema` still works).

The package names no detector: everything detector-specific is read off the registry.
`python -m trainspotter.config --write` regenerates the shipped schema and
docs/configuration.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trainspotter.config.params import (
    MAX_INT_PARAM,
    WINDOW_POINTS,
    ParamRange,
    ParamSpec,
    describe_type,
    detector_params,
    field_docs,
    param_pairs,
    param_range,
    param_ranges,
)
from trainspotter.config.parse import (
    IGNORE_KEYS,
    REPORT_KEYS,
    TOP_LEVEL_KEYS,
    find_config,
    load_config,
    parse_config,
)
from trainspotter.config.settings import (
    ARTIFACT_NAME_FORBIDDEN,
    CONFIG_NAMES,
    DEFAULT_ARTIFACT_NAME,
    DEFAULT_OUTPUTS,
    DEFAULT_REPORT_DIR,
    GATE_OUTPUTS,
    RESERVED_DETECTOR_KEYS,
    SEVERITY_LABELS,
    Config,
    ConfigError,
    DetectorSettings,
    IgnoreRule,
    ReportSettings,
    glob_problem,
    path_matches,
    path_pattern_regex,
)

if TYPE_CHECKING:
    from trainspotter.config.generated import (
        README_END,
        README_START,
        SCHEMA_PATH,
        config_schema,
        default_config_yaml,
        reference_markdown,
        replace_readme_reference,
        schema_text,
    )

_GENERATED = frozenset(
    {
        "README_END",
        "README_START",
        "SCHEMA_PATH",
        "config_schema",
        "default_config_yaml",
        "reference_markdown",
        "replace_readme_reference",
        "schema_text",
    }
)


def __getattr__(name: str) -> Any:
    """The generators' names, imported on first use (PEP 562)."""
    if name in _GENERATED:
        return getattr(importlib.import_module("trainspotter.config.generated"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ARTIFACT_NAME_FORBIDDEN",
    "CONFIG_NAMES",
    "DEFAULT_ARTIFACT_NAME",
    "DEFAULT_OUTPUTS",
    "DEFAULT_REPORT_DIR",
    "GATE_OUTPUTS",
    "IGNORE_KEYS",
    "MAX_INT_PARAM",
    "README_END",
    "README_START",
    "REPORT_KEYS",
    "RESERVED_DETECTOR_KEYS",
    "SCHEMA_PATH",
    "SEVERITY_LABELS",
    "TOP_LEVEL_KEYS",
    "WINDOW_POINTS",
    "Config",
    "ConfigError",
    "DetectorSettings",
    "IgnoreRule",
    "ParamRange",
    "ParamSpec",
    "ReportSettings",
    "config_schema",
    "default_config_yaml",
    "describe_type",
    "detector_params",
    "field_docs",
    "find_config",
    "glob_problem",
    "load_config",
    "param_pairs",
    "param_range",
    "param_ranges",
    "parse_config",
    "path_matches",
    "path_pattern_regex",
    "reference_markdown",
    "replace_readme_reference",
    "schema_text",
]
