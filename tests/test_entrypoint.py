"""The container's `entrypoint.py` run on the host: the Action mode (inputs from INPUT_*,
the gate, $GITHUB_STEP_SUMMARY and $GITHUB_OUTPUT), its errors, and the CLI/shell modes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from workspace_support import DIVERGENT, HEALTHY, REPO


def _parse_outputs(text: str) -> dict[str, str]:
    sys.path.insert(0, str(REPO / "tests" / "container"))
    try:
        from container_support import parse_github_output
    finally:
        sys.path.pop(0)
    return parse_github_output(text)


def test_entrypoint_action_mode(
    entry: ModuleType,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    summary, output = workspace / "summary.md", workspace / "output.txt"
    summary.write_text("earlier step\n")
    output.write_text("")
    monkeypatch.chdir(workspace)
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "INPUT_PATHS": f"{DIVERGENT}\n  {HEALTHY} ",
        "INPUT_FAIL_ON": "error",
        "INPUT_WORKING_DIRECTORY": ".",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_RUN_ID": "42",
    }
    assert entry.main([], env) == 1
    outputs = _parse_outputs(output.read_text())
    assert outputs["max-severity"] == "error"
    assert int(outputs["errors"]) > 0
    assert outputs["report-dir"] == "trainspotter-report"
    assert outputs["json"] == "trainspotter-report/trainspotter.json"
    assert outputs["comment-file"] == "trainspotter-report/comment.md"
    assert outputs["exit-code"] == "1"
    text = summary.read_text()
    assert text.startswith("earlier step\n**trainspotter gate")
    assert "[this workflow run](https://github.com/o/r/actions/runs/42)" in text
    assert "::stop-commands::" in capsys.readouterr().out


def test_entrypoint_action_mode_errors(
    entry: ModuleType,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    output = workspace / "output.txt"
    base = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(output),
    }
    for extra, fragment in [
        ({"INPUT_FAIL_ON": "fatal"}, "input fail-on"),
        ({"INPUT_WORKING_DIRECTORY": "../.."}, "must be inside the workspace"),
        ({"INPUT_COMMENT": "maybe", "INPUT_PATHS": HEALTHY}, "input comment"),
        ({"INPUT_FORMAT": "parquet", "INPUT_PATHS": HEALTHY}, "input format"),
        ({}, "no log patterns"),
    ]:
        output.write_text("")
        assert entry.main([], base | extra) == 2
        out = capsys.readouterr().out
        assert out.startswith("::error title=trainspotter could not run::"), out
        assert fragment in out
        assert _parse_outputs(output.read_text())["exit-code"] == "2"


def test_entrypoint_outside_github_is_the_cli(
    entry: ModuleType,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(workspace)
    assert entry.main(["analyze", DIVERGENT, "--fail-on", "error"], {}) == 1
    assert "::" not in capsys.readouterr().out
    shell = subprocess.run(
        [sys.executable, str(REPO / "entrypoint.py"), "sh", "-c", "echo from-a-shell"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout == "from-a-shell\n"


def test_output_blocks_cannot_be_broken_by_values(entry: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "out"
    tricky = "line1\nghadelimiter_x\nmax-severity=none"
    entry.write_outputs(str(path), {"report-dir": tricky, "errors": "3"})
    assert _parse_outputs(path.read_text()) == {"report-dir": tricky, "errors": "3"}
