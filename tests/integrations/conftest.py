"""The callback tests train real models with the real frameworks, on the CPU.

They need the `test-integrations` extra (`make test-integrations` installs it; .ci/run
runs that target). Without it they are skipped, except when
TRAINSPOTTER_REQUIRE_INTEGRATIONS=1 (set by `make test-integrations`): then a missing
framework fails, so CI cannot pass by skipping them.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str) -> ModuleType:
    """The framework module, or a skip (a failure when integrations are required)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("TRAINSPOTTER_REQUIRE_INTEGRATIONS") == "1":
            pytest.fail(f"{module} is required here but cannot be imported: {exc}")
        pytest.skip(f"{module} is not installed (pip install -e '.[test-integrations]')")
