"""trainspotter: diagnose what went wrong in a training run from the log it already writes.

The flow runs one way: readers -> `Run` -> detectors -> findings -> reports -> front ends.
"""

# The one place the version is written: pyproject.toml reads it (setuptools `dynamic`),
# `trainspotter --version`, the reports and the release workflow's tag check use it.
__version__ = "1.0.0"
