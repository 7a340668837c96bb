"""The callback tests train real models with the real frameworks, on the CPU.

They need the `test-integrations` extra (`make test-integrations` installs it; .ci/run
runs that target). Without it they are skipped, except when
TRAINSPOTTER_REQUIRE_INTEGRATIONS=1 (set by `make test-integrations`): then a missing
framework fails, so CI cannot pass by skipping them.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def require(module: str) -> ModuleType:
    """The framework module, or a skip (a failure when integrations are required)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("TRAINSPOTTER_REQUIRE_INTEGRATIONS") == "1":
            pytest.fail(f"{module} is required here but cannot be imported: {exc}")
        pytest.skip(
            f"{module} is not installed (pip install -e '.[test-integrations]')",
            allow_module_level=True,
        )


def read_reports(folder: Path) -> dict[str, Any]:
    """The JSON report a callback wrote into `folder`, after checking its HTML twin."""
    html = (folder / "trainspotter-report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    report: dict[str, Any] = json.loads(
        (folder / "trainspotter-report.json").read_text(encoding="utf-8")
    )
    return report
