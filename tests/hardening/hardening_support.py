"""Helpers for the hardening tests (issue 11, ../shared/ADVERSARIAL.md D1-D19): a folder
another user can use, the CLI run in a subprocess (optionally as `nobody`, since root
bypasses file permissions), and small real-shaped logs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534
HEALTHY_CSV = "step,loss\n" + "".join(f"{i},{2.0 / (1 + 0.05 * i):.5f}\n" for i in range(1, 61))
"""A falling loss: nothing above info."""
TIMEOUT = 60
"""Seconds a subprocess may take before the test fails (a hang is the defect)."""


def unprivileged_prefix() -> list[str]:
    """The command prefix that runs a program as `nobody` when we are root (permissions
    mean nothing to root); none when we are not root. Skips when it is impossible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop privileges to test permissions")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A fresh folder under the system temp folder that `nobody` may use (pytest's
    tmp_path lies under a root-only folder)."""
    folder = Path(tempfile.mkdtemp(prefix="trainspotter-hardening-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        for path in folder.rglob("*"):  # locked test files and folders: unlock to remove
            if not path.is_symlink():
                path.chmod(0o777)
        shutil.rmtree(folder, ignore_errors=True)


def run_cli(
    args: Sequence[str],
    cwd: Path,
    *,
    unprivileged: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """`python -m trainspotter ARGS` in `cwd` (as nobody with `unprivileged`), outside
    GitHub Actions unless `env` says otherwise."""
    return _run(["-m", "trainspotter", *args], cwd, unprivileged, env or {}, timeout)


def run_entrypoint(
    env: dict[str, str], cwd: Path, *, unprivileged: bool = False
) -> subprocess.CompletedProcess[str]:
    """The container's entrypoint.py, as the Action runs it, with `env` (as nobody with
    `unprivileged`)."""
    return _run([str(REPO / "entrypoint.py")], cwd, unprivileged, env, TIMEOUT * 2)


def _run(
    args: list[str], cwd: Path, unprivileged: bool, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    prefix = unprivileged_prefix() if unprivileged else []
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environment |= {"PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [*prefix, sys.executable, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def reported_paths(report: Path) -> list[str]:
    """The log paths a gate's trainspotter.json reports (one log: the top-level run)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    runs = [data["run"]] if "run" in data else [log["run"] for log in data["logs"]]
    return [run["source_path"] for run in runs]


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The stderr of an exit-2 run: exactly one `trainspotter: error:` line, no traceback."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("trainspotter: error: "), result.stderr
    return lines[0]
