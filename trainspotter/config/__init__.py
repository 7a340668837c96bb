""".trainspotter.yml: the gate's settings, their defaults, validation and JSON Schema.

A package split by job, each module with one reason to change:
- `settings`: the validated `Config` (with `DetectorSettings`, `IgnoreRule`,
  `ReportSettings`), path globs, and the names shared with the CLI and the schema;
- `params`: each detector's parameters read off its `Params` dataclass, and their ranges;
- `yaml_walker`: typed reads of YAML nodes whose errors name file:line:key;
- `parse` (with `compare_keys`): which keys there are, `parse_config` and `load_config`;
- the generators, which checking a config never needs, so each is imported only when one
  of its names is asked for (`from trainspotter.config import config_schema` still
  works): `schema` (the JSON Schema), `init_file` (`trainspotter init`'s commented
  default file) and `reference` (the reference in docs/configuration.md, from the schema).

The package names no detector: everything detector-specific is read off the registry.
`python -m trainspotter.config --write` regenerates the shipped schema and
docs/configuration.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trainspotter.config import params, parse, settings
from trainspotter.config.params import *  # noqa: F403
from trainspotter.config.parse import *  # noqa: F403
from trainspotter.config.settings import *  # noqa: F403

if TYPE_CHECKING:
    from trainspotter.config.init_file import default_config_yaml
    from trainspotter.config.reference import (
        README_END,
        README_START,
        reference_markdown,
        replace_readme_reference,
    )
    from trainspotter.config.schema import SCHEMA_PATH, config_schema, schema_text

# The generators' names are imported on first use (PEP 562): checking a config never needs
# them. The rest is what each module names in its own `__all__`.
__all__ = [
    "README_END",
    "README_START",
    "SCHEMA_PATH",
    "config_schema",
    "default_config_yaml",
    "reference_markdown",
    "replace_readme_reference",
    "schema_text",
]
_GENERATED = frozenset(__all__)
_GENERATORS = ("schema", "init_file", "reference")
__all__ += settings.__all__
__all__ += params.__all__
__all__ += parse.__all__


def __getattr__(name: str) -> Any:
    """The generators' names, imported on first use."""
    if name in _GENERATED:
        for generator in _GENERATORS:
            module = importlib.import_module(f"trainspotter.config.{generator}")
            if name in module.__all__:
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
