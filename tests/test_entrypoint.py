"""The container's `entrypoint.py` run on the host: the Action mode (inputs from INPUT_*,
the gate, $GITHUB_STEP_SUMMARY and $GITHUB_OUTPUT), its errors, and the CLI/shell modes.
Also the two paths where the PR comment and the artifact used to go wrong: the comment file
when this job does not post it (a `workflow_run` job posts it for fork PRs), and a gate that
cannot start (the comment and the artifact must say "could not run", never keep an earlier
"passed")."""

from __future__ import annotations

import shutil
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


# ---------------------------------------------------------------- comment and "could not run"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A workspace holding the two example logs (only the logs)."""
    for log in (HEALTHY, DIVERGENT):
        if not (REPO / log).is_file():
            pytest.skip(f"{log} is not generated yet")
        (tmp_path / log).parent.mkdir(parents=True)
        shutil.copyfile(REPO / log, tmp_path / log)
    return tmp_path


def _env(checkout: Path, **inputs: str) -> dict[str, str]:
    (checkout / "summary.md").write_text("")
    (checkout / "output.txt").write_text("")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_STEP_SUMMARY": str(checkout / "summary.md"),
        "GITHUB_OUTPUT": str(checkout / "output.txt"),
    }
    return env | {f"INPUT_{k.upper()}": v for k, v in inputs.items()}


def _outputs(checkout: Path) -> dict[str, str]:
    return _parse_outputs((checkout / "output.txt").read_text())


def test_comment_false_still_writes_the_comment_file(
    entry: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`comment: false` means "do not post from this job", not "write no comment": the
    README's workflow_run recipe posts the comment.md of the artifact."""
    assert entry.main([], _env(checkout, paths=DIVERGENT, comment="false")) == 1
    outputs = _outputs(checkout)
    assert outputs["comment"] == "false"
    assert outputs["comment-file"] == "trainspotter-report/comment.md"
    comment = (checkout / outputs["comment-file"]).read_text()
    assert comment.startswith("**trainspotter gate \u274c failed")


def test_config_error_after_a_passing_run_replaces_the_comment(
    entry: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in .trainspotter.yml: exit 2, and the report folder, the outputs, the job
    summary and comment.md all say the gate could not run (not the last run's verdict)."""
    assert entry.main([], _env(checkout, paths=HEALTHY)) == 0
    comment_file = checkout / _outputs(checkout)["comment-file"]
    assert "passed" in comment_file.read_text()
    capsys.readouterr()

    (checkout / ".trainspotter.yml").write_text("fail_on: error\nreport:\n  outptus: [json]\n")
    assert entry.main([], _env(checkout, paths=HEALTHY)) == 2
    outputs = _outputs(checkout)
    assert outputs["exit-code"] == "2"
    assert outputs["report-dir"] == "trainspotter-report"
    assert outputs["comment-file"] == "trainspotter-report/comment.md"
    assert outputs["artifact-name"] == "trainspotter-report"
    assert outputs["comment"] == "true"
    for text in (
        comment_file.read_text(),
        (checkout / "trainspotter-report" / "summary.md").read_text(),
        (checkout / "summary.md").read_text(),
    ):
        assert text.startswith("**trainspotter could not run** \u26a0\ufe0f"), text
        assert "passed" not in text
        assert "outptus" in text
    assert capsys.readouterr().out.startswith("::error title=trainspotter could not run::")


def test_bad_input_keeps_the_inputs_it_could_read(
    entry: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(checkout, paths=HEALTHY, fail_on="fatal", comment="false", artifact_name="gate-a")
    assert entry.main([], env) == 2
    outputs = _outputs(checkout)
    assert (outputs["comment"], outputs["artifact-name"]) == ("false", "gate-a")
    assert "input fail-on" in (checkout / outputs["comment-file"]).read_text()


def test_internal_error_also_says_could_not_run(
    entry: ModuleType,
    checkout: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import trainspotter.gate

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(trainspotter.gate, "run_gate", broken)
    assert entry.main([], _env(checkout, paths=HEALTHY)) == 3
    outputs = _outputs(checkout)
    assert outputs["exit-code"] == "3"
    text = (checkout / outputs["comment-file"]).read_text()
    assert "could not run" in text and "RuntimeError" in text
