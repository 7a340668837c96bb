"""The Action reads logs only inside $GITHUB_WORKSPACE: a pattern (the `paths` input or
the config's `paths`, which a pull request can change) or a committed symlink that leads
outside it is refused, and nothing outside is read, so no file of the runner's (its name
or its values) can reach the job summary, the PR comment or the HTML artifact. The local
CLI, run by the user on their own machine, still reads any path it is given.

Real files, folders and symlinks in tmp_path: an "outside" folder next to the workspace
holds a log whose metric name (`outside_secret_loss`) must appear in no output."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from types import ModuleType

import pytest

SECRET = "outside_secret_loss"


def _jsonl(path: Path, metric: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps({"step": i, metric: 2.0 * math.exp(-i / 20) + 0.01}) for i in range(50))
    path.write_text("\n".join(lines) + "\n")


def _trainer_state(path: Path, metric: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    history = [{"step": i, metric: 2.0 * math.exp(-i / 20) + 0.01} for i in range(1, 51)]
    path.write_text(json.dumps({"log_history": history, "global_step": 50}))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp_path/ws (the workspace, one good log in logs/) and tmp_path/outside (a log and
    a Hugging Face state file that must never be read by the Action)."""
    _jsonl(tmp_path / "ws" / "logs" / "good.jsonl", "inside_loss")
    _jsonl(tmp_path / "outside" / "secret.jsonl", SECRET)
    _trainer_state(tmp_path / "outside" / "trainer_state.json", SECRET)
    return tmp_path


def _env(workspace: Path, **inputs: str) -> dict[str, str]:
    (workspace / "step-summary.md").write_text("")
    (workspace / "output.txt").write_text("")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(workspace / "step-summary.md"),
        "GITHUB_OUTPUT": str(workspace / "output.txt"),
    }
    return env | {f"INPUT_{k.upper()}": v for k, v in inputs.items()}


def _everything_written(workspace: Path, stdout: str) -> str:
    """stdout and every file in the workspace (summary, outputs, report folder)."""
    texts = [stdout]
    for path in sorted(workspace.rglob("*")):
        if path.is_file() and not path.is_symlink():
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def _run(
    entry: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str], **inputs: str
) -> tuple[int, str]:
    code = entry.main([], _env(workspace, **inputs))
    out = capsys.readouterr().out
    return code, out


# --------------------------------------------------- a pattern that leaves the workspace


@pytest.mark.parametrize(
    "pattern",
    ["../outside/*.jsonl", "../outside/**", "logs/../../outside/secret.jsonl", "{outside}/**/*"],
)
def test_a_paths_input_leading_outside_is_refused(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str], pattern: str
) -> None:
    workspace = tree / "ws"
    pattern = pattern.format(outside=tree / "outside")
    code, out = _run(entry, workspace, capsys, paths=f"logs/*.jsonl\n{pattern}")
    assert code == 2
    first = out.splitlines()[0]
    assert first.startswith("::error title=trainspotter could not run::"), out
    assert repr(pattern) in first and "outside the workspace" in first
    assert SECRET not in _everything_written(workspace, out)


def test_config_paths_leading_outside_are_refused(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The config's `paths` is what a pull request (a fork's too) can change."""
    workspace = tree / "ws"
    (workspace / ".trainspotter.yml").write_text("paths: ['logs/*.jsonl', '../outside/**']\n")
    code, out = _run(entry, workspace, capsys)
    assert code == 2
    assert "'../outside/**'" in out and "outside the workspace" in out
    assert SECRET not in _everything_written(workspace, out)


def test_config_baseline_outside_is_not_read(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tree / "ws"
    (workspace / ".trainspotter.yml").write_text("baseline: ../outside/trainer_state.json\n")
    code, out = _run(entry, workspace, capsys, paths="logs/*.jsonl")
    assert code == 2
    assert "outside the workspace" in out
    assert SECRET not in _everything_written(workspace, out)


# ------------------------------------------------------ a symlink that leaves the workspace


def test_a_symlinked_log_leading_outside_is_not_read(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other logs are still checked and reported; the link is the exit-2 error that
    names it and the pattern that matched it."""
    workspace = tree / "ws"
    (workspace / "logs" / "evil.jsonl").symlink_to(tree / "outside" / "secret.jsonl")
    code, out = _run(entry, workspace, capsys, paths="logs/*.jsonl")
    assert code == 2
    errors = [line for line in out.splitlines() if "logs/evil.jsonl" in line]
    assert errors and all("outside the workspace" in line for line in errors), out
    assert any("'logs/*.jsonl'" in line for line in errors), out
    assert "logs/good.jsonl" in out
    assert SECRET not in _everything_written(workspace, out)
    html = workspace / "trainspotter-report" / "html"
    assert sorted(p.name for p in html.iterdir()) == ["index.html", "logs_good.jsonl.html"]


def test_a_named_log_that_is_a_symlink_out_is_refused(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tree / "ws"
    (workspace / "logs" / "evil.jsonl").symlink_to(tree / "outside" / "secret.jsonl")
    code, out = _run(entry, workspace, capsys, paths="logs/evil.jsonl")
    assert code == 2
    assert "'logs/evil.jsonl'" in out and "outside the workspace" in out
    assert SECRET not in _everything_written(workspace, out)


@pytest.mark.parametrize("pattern", ["logs/**/*.jsonl", "logs/**", "logs/*/*.jsonl", "**/*"])
def test_a_glob_never_follows_a_folder_symlink_out(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str], pattern: str
) -> None:
    workspace = tree / "ws"
    (workspace / "logs" / "mounted").symlink_to(tree / "outside", target_is_directory=True)
    code, out = _run(entry, workspace, capsys, paths=pattern)
    assert code == 2
    assert any(
        "logs/mounted" in line and "outside the workspace" in line for line in out.splitlines()
    )
    assert SECRET not in _everything_written(workspace, out)


def test_a_folder_log_holding_a_symlink_out_is_not_read(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Hugging Face output folder whose trainer_state.json is a link out: the folder is
    matched (`runs/*`), but the reader would open the file inside it."""
    workspace = tree / "ws"
    (workspace / "runs" / "hf").mkdir(parents=True)
    (workspace / "runs" / "hf" / "trainer_state.json").symlink_to(
        tree / "outside" / "trainer_state.json"
    )
    code, out = _run(entry, workspace, capsys, paths="logs/*.jsonl runs/*")
    assert code == 2
    assert "matched no training log" not in out  # the refusal says why, once
    assert any("runs/hf" in line and "outside the workspace" in line for line in out.splitlines())
    assert SECRET not in _everything_written(workspace, out)


# ------------------------------------------------------------ what stays allowed


def test_links_and_dotdot_that_stay_inside_are_read(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`..` out of the working directory but inside the workspace, an absolute path inside
    it, and a symlink to another folder of the workspace are all fine."""
    workspace = tree / "ws"
    (workspace / "sub").mkdir()
    (workspace / "sub" / "alias").symlink_to(workspace / "logs", target_is_directory=True)
    _jsonl(workspace / "other" / "more.jsonl", "other_loss")
    patterns = f"../logs/*.jsonl alias/*.jsonl {workspace / 'other'}/*.jsonl"
    code, out = _run(entry, workspace, capsys, paths=patterns, working_directory="sub")
    assert code == 0, out
    assert "other_loss" in _everything_written(workspace, out)


def test_the_local_cli_still_reads_any_path(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the user's own machine the user is trusted: `trainspotter gate ../x` reads it."""
    from trainspotter.cli import main

    workspace = tree / "ws"
    _jsonl(tree / "outside" / "second.jsonl", "outside_second_loss")
    (workspace / "logs" / "linked.jsonl").symlink_to(tree / "outside" / "second.jsonl")
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert main(["gate", "../outside/*.jsonl", "logs/*.jsonl", "--outputs", "json"]) == 0
    report = json.loads((workspace / "trainspotter-report" / "trainspotter.json").read_text())
    assert SECRET in json.dumps(report) and "outside_second_loss" in json.dumps(report)
    assert len(report["logs"]) == 3
    assert os.path.islink(workspace / "logs" / "linked.jsonl")


def test_dotdot_after_a_glob_part_does_not_walk_out(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixed part (`logs`) is inside; the `..` after `*` would climb out."""
    workspace = tree / "ws"
    (workspace / "logs" / "sub").mkdir()
    code, out = _run(entry, workspace, capsys, paths="logs/*/../../../outside/*.jsonl")
    assert code == 2
    assert "outside the workspace" in out
    assert SECRET not in _everything_written(workspace, out)


# ------------------------------------------------------------ a URL leads outside too


class _MirrorCalls:
    """Stands in for `remote.mirror()`: records each URL asked for and reads nothing."""

    def __init__(self) -> None:
        self.staged: list[str] = []

    def __call__(self) -> _MirrorCalls:
        return self

    def stage(self, url: str) -> None:
        from trainspotter.remote import RemoteUnavailable

        self.staged.append(url)
        raise RemoteUnavailable(url, "URLs are not read in this test")


@pytest.fixture
def mirror_calls(monkeypatch: pytest.MonkeyPatch) -> _MirrorCalls:
    calls = _MirrorCalls()
    monkeypatch.setattr("trainspotter.discover.mirror", calls)
    return calls


@pytest.mark.parametrize(
    "url",
    ["s3://bucket/runs/*.csv", "https://example.com/run/log.csv", "hf://datasets/org/x/*.jsonl"],
)
def test_a_url_pattern_is_refused_in_the_action(
    entry: ModuleType,
    tree: Path,
    capsys: pytest.CaptureFixture[str],
    mirror_calls: _MirrorCalls,
    url: str,
) -> None:
    """A URL would be fetched with the runner's credentials (the back end reads them from
    its environment): the pattern is the one-line exit-2 error, and nothing is fetched."""
    workspace = tree / "ws"
    code, out = _run(entry, workspace, capsys, paths=f"logs/*.jsonl\n{url}")
    assert code == 2
    first = out.splitlines()[0]
    assert first.startswith("::error title=trainspotter could not run::"), out
    assert repr(url) in first and "is a URL" in first and "outside the workspace" in first
    assert mirror_calls.staged == []


def test_a_url_in_the_config_paths_or_baseline_is_refused(
    entry: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str], mirror_calls: _MirrorCalls
) -> None:
    """The config is what a pull request can change; a signed URL's signature is not shown."""
    workspace = tree / "ws"
    config = workspace / ".trainspotter.yml"
    config.write_text("paths: ['logs/*.jsonl', 's3://bucket/runs/**']\n")
    code, out = _run(entry, workspace, capsys)
    assert code == 2 and "'s3://bucket/runs/**' is a URL" in out, out

    config.write_text("baseline: https://example.com/base.jsonl?X-Amz-Signature=KEY\n")
    code, out = _run(entry, workspace, capsys, paths="logs/*.jsonl")
    assert code == 2
    first = out.splitlines()[0]
    assert "baseline 'https://example.com/base.jsonl' is a URL" in first, out
    assert "KEY" not in out  # the config file itself holds it; no output does
    assert mirror_calls.staged == []


def test_the_local_cli_still_reads_urls(
    tree: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mirror_calls: _MirrorCalls,
) -> None:
    """Not confined: a URL pattern and a URL baseline go to the mirror as before."""
    from trainspotter.cli import main

    workspace = tree / "ws"
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    main(["gate", "s3://bucket/runs/*.csv", "--outputs", "json"])
    (workspace / ".trainspotter.yml").write_text("baseline: s3://bucket/base.csv\n")
    main(["gate", "logs/*.jsonl", "--outputs", "json"])
    assert mirror_calls.staged == ["s3://bucket/runs/*.csv", "s3://bucket/base.csv"]
