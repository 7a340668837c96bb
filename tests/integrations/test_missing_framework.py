"""Importing an integration without its framework says how to install it."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [("transformers", "transformers", "transformers"), ("lightning", "lightning", "lightning")],
)
def test_import_without_the_framework_names_the_extra(
    module: str, blocked: str, extra: str
) -> None:
    # A fresh interpreter where the framework cannot be imported, installed or not.
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"
        "try:\n"
        f"    import trainspotter.integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f"pip install 'trainspotter[{extra}]'" in done.stdout
    assert "Traceback" not in done.stderr
