"""The README's "Python API" snippets, for the tests that run them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
INTEGRATION = "trainspotter.integrations"


def api_snippets() -> list[str]:
    """The ```python blocks of the README's "## Python API" section, in order."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Python API\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.DOTALL)


def core_snippets() -> list[str]:
    """The snippets that need no training framework."""
    return [s for s in api_snippets() if INTEGRATION not in s]


def integration_snippets() -> list[str]:
    """The callback snippets."""
    return [s for s in api_snippets() if INTEGRATION in s]
