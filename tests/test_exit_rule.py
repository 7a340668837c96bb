"""The exit rule, once for every front end (`trainspotter.verdict`):

2 when a log could not be checked, else 1 when an unsuppressed finding is at or above
fail_on, else 0; fail_on comes from the flag (`--fail-on`, the Action's `fail-on` input),
else the config's `fail_on`, else error. Each cell runs the real front end (the CLI's
`analyze`, `gate` and `watch`, the container's entrypoint in Action mode) on bundled
example runs whose worst severity is known (`examples/expected.json`, and the reports
pinned in tests/test_examples.py): healthy (info: its converged tail), overfitting
(warning), divergence (error), the healthy run with its info suppressed by `ignore`
(none), and the divergent run beside a file that is not a log (could not check).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from workspace_support import EXAMPLES, need_examples

from trainspotter.cli import main
from trainspotter.model import Severity

FLAG = Severity.WARNING
"""fail_on given on the command line (the config then says CONFIG: the flag must win)."""
CONFIG = Severity.INFO
"""fail_on given in .trainspotter.yml."""
DEFAULT = Severity.ERROR

# worst -> (example run, suppress its info finding)
RUNS: dict[str, tuple[str, bool]] = {
    "none": ("healthy", True),
    "info": ("healthy", False),
    "warning": ("overfitting", False),
    "error": ("divergence", False),
    "unreadable": ("divergence", False),
}
LEVELS = {"none": None, "info": Severity.INFO, "warning": Severity.WARNING}
LEVELS["error"] = LEVELS["unreadable"] = Severity.ERROR
FRONT_ENDS = ("analyze", "gate", "watch", "entrypoint")


def _expected(worst: str, fail_on: Severity) -> int:
    if worst == "unreadable":
        return 2  # could not check a log: wins over the failed gate of the divergent run
    level = LEVELS[worst]
    return 1 if level is not None and level >= fail_on else 0


def _workspace(root: Path, worst: str, source: str) -> list[str]:
    """Lay out the run (and the junk file) and the config; return the paths to check."""
    example, suppress = RUNS[worst]
    need_examples(example)
    (root / "run").mkdir()
    shutil.copy(EXAMPLES / example / "trainer_state.json", root / "run" / "trainer_state.json")
    paths = ["run/trainer_state.json"]
    if worst == "unreadable":
        (root / "broken.log").write_bytes(b"\x00\x01\x02 not a training log\n")
        paths.append("broken.log")
    config = ["report:", "  outputs: [summary, json]"]
    if source in ("flag", "config"):
        config.append(f"fail_on: {CONFIG.label}")
    if suppress:
        config += ["ignore:", "  - detector: plateau", "    reason: the converged tail"]
    (root / ".trainspotter.yml").write_text("\n".join(config) + "\n")
    return paths


def _run(front_end: str, paths: list[str], flag: str | None, root: Path, entry: ModuleType) -> int:
    fail_on = ["--fail-on", flag] if flag else []
    if front_end == "analyze":
        return main(["analyze", *paths, *fail_on, "--jobs", "1"])
    if front_end == "gate":
        return main(["gate", *paths, *fail_on, "--jobs", "1", "--no-github"])
    if front_end == "watch":
        timing = ["--interval", "0.05", "--idle-exit", "0.2"]
        return main(["watch", *paths, *fail_on, *timing])
    outputs = root / "github-output.txt"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(root),
        "GITHUB_OUTPUT": str(outputs),
        "INPUT_PATHS": "\n".join(paths),
        "INPUT_FAIL_ON": flag or "",
    }
    code = int(entry.main([], env))
    written = re.search(r"^exit-code<<(\S+)\n(.*)\n\1$", outputs.read_text(), re.MULTILINE)
    assert written is not None and written.group(2) == str(code)  # the Action's output
    return code


@pytest.mark.parametrize("worst", list(RUNS))
@pytest.mark.parametrize("source", ["flag", "config", "default"])
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_exit_rule(
    front_end: str,
    source: str,
    worst: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    entry: ModuleType,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    paths = _workspace(tmp_path, worst, source)
    fail_on = {"flag": FLAG, "config": CONFIG, "default": DEFAULT}[source]
    flag = FLAG.label if source == "flag" else None
    assert _run(front_end, paths, flag, tmp_path, entry) == _expected(worst, fail_on)
