"""trainspotter: diagnose what went wrong in a training run from the log it already writes.

The flow runs one way: readers -> `Run` -> detectors -> findings -> reports -> front ends.
The Python API (a front end, typed: the package ships `py.typed`):

- `analyze(source, config=None) -> Analysis`: a log's path, a `Run`, a pandas DataFrame
  or a list of dict records (`trainspotter.api`);
- `Monitor`: findings while a run trains, point by point (`trainspotter.monitor`);
- the callbacks in `trainspotter.integrations` (transformers, Lightning).

Bad input raises `InputError` (a `TrainspotterError`), a bad config `ConfigError`.
The names are imported on first use (PEP 562), so `import trainspotter` stays cheap and
the modules that read `__version__` do not import the whole package back.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The one place the version is written: pyproject.toml reads it (setuptools `dynamic`),
# `trainspotter --version`, the reports and the release workflow's tag check use it.
__version__ = "1.0.0"

if TYPE_CHECKING:
    from trainspotter.api import Analysis, analyze
    from trainspotter.config import Config, ConfigError, load_config
    from trainspotter.errors import InputError, TrainspotterError
    from trainspotter.model import Finding, Run, Series, Severity
    from trainspotter.monitor import Monitor

_EXPORTS = {
    "Analysis": "trainspotter.api",
    "analyze": "trainspotter.api",
    "Config": "trainspotter.config",
    "ConfigError": "trainspotter.config",
    "load_config": "trainspotter.config",
    "InputError": "trainspotter.errors",
    "TrainspotterError": "trainspotter.errors",
    "Finding": "trainspotter.model",
    "Run": "trainspotter.model",
    "Series": "trainspotter.model",
    "Severity": "trainspotter.model",
    "Monitor": "trainspotter.monitor",
}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "Analysis",
    "Config",
    "ConfigError",
    "Finding",
    "InputError",
    "Monitor",
    "Run",
    "Series",
    "Severity",
    "TrainspotterError",
    "__version__",
    "analyze",
    "load_config",
]
