"""The package's shape: one direction of flow, and modules small enough to read whole."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "trainspotter"
SIZE_LIMIT = 500
"""Lines per module, unless its docstring says why it is one unit: "One module over ~500
lines on purpose: <why>" (detectors/stats.py)."""
ONE_UNIT = "over ~500 lines on purpose:"


def _imported_modules(path: Path) -> set[str]:
    """Every module a source file imports, at any depth (function-local imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_importing_the_gate_loads_no_module_that_imports_it() -> None:
    """`gate` sits at the end of the flow (discover -> batch -> gate): nothing it loads
    may import it back, not even inside a function."""
    probe = (
        "import json, sys, trainspotter.gate; "
        "print(json.dumps({n: getattr(m, '__file__', None) for n, m in sys.modules.items() "
        "if n.startswith('trainspotter')}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: dict[str, str | None] = json.loads(done.stdout)
    assert "trainspotter.discover" in loaded and "trainspotter.batch" in loaded
    importers = sorted(
        name
        for name, file in loaded.items()
        if name != "trainspotter.gate"
        and file is not None
        and "trainspotter.gate" in _imported_modules(Path(file))
    )
    assert importers == []


@pytest.mark.parametrize(
    "module", ["batch", "discover", "verdict", "paths", "watch", "watch_output"]
)
def test_the_core_of_the_flow_never_imports_a_front_end(module: str) -> None:
    front_ends = {"trainspotter.gate", "trainspotter.cli"}
    assert not _imported_modules(PACKAGE / f"{module}.py") & front_ends


def _one_unit(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return ONE_UNIT in " ".join(doc.split())


def test_no_module_is_over_the_size_limit_without_saying_why() -> None:
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > SIZE_LIMIT and not _one_unit(path):
            too_long.append(f"{relative}: {lines} lines")
    assert too_long == []
