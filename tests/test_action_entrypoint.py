"""The Action's entrypoint (`entrypoint.py`, run on the host) on the two paths where the
PR comment and the artifact used to go wrong: the comment file when this job does not post
it (a `workflow_run` job posts it for fork PRs), and a gate that cannot start (the
comment and the artifact must say "could not run", never keep an earlier "passed")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_gate import DIVERGENT, HEALTHY, REPO, _entrypoint, _parse_outputs


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
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`comment: false` means "do not post from this job", not "write no comment": the
    README's workflow_run recipe posts the comment.md of the artifact."""
    entry = _entrypoint()
    assert entry.main([], _env(checkout, paths=DIVERGENT, comment="false")) == 1
    outputs = _outputs(checkout)
    assert outputs["comment"] == "false"
    assert outputs["comment-file"] == "trainspotter-report/comment.md"
    comment = (checkout / outputs["comment-file"]).read_text()
    assert comment.startswith("**trainspotter gate \u274c failed")


def test_config_error_after_a_passing_run_replaces_the_comment(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in .trainspotter.yml: exit 2, and the report folder, the outputs, the job
    summary and comment.md all say the gate could not run (not the last run's verdict)."""
    entry = _entrypoint()
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
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = _entrypoint()
    env = _env(checkout, paths=HEALTHY, fail_on="fatal", comment="false", artifact_name="gate-a")
    assert entry.main([], env) == 2
    outputs = _outputs(checkout)
    assert (outputs["comment"], outputs["artifact-name"]) == ("false", "gate-a")
    assert "input fail-on" in (checkout / outputs["comment-file"]).read_text()


def test_internal_error_also_says_could_not_run(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import trainspotter.gate

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(trainspotter.gate, "run_gate", broken)
    entry = _entrypoint()
    assert entry.main([], _env(checkout, paths=HEALTHY)) == 3
    outputs = _outputs(checkout)
    assert outputs["exit-code"] == "3"
    text = (checkout / outputs["comment-file"]).read_text()
    assert "could not run" in text and "RuntimeError" in text
