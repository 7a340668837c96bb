"""The real image, built from the Dockerfile and run the way GitHub and GitLab run it.

Marked `container`: they need a Docker engine (see conftest.py) and skip without one.
The GitHub way mirrors action.yml's `docker run`: the workspace at /github/workspace,
the step-summary and output files mounted, GITHUB_* and INPUT_* variables, the runner's
uid, no network.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from container_support import Workspace, release_build, run

import trainspotter

pytestmark = pytest.mark.container

MAX_IMAGE_BYTES = 400 * 1000 * 1000
HEALTHY = "examples/healthy/trainer_state.json"
DIVERGENT = "examples/divergence/trainer_state.json"


def test_image_is_small_unprivileged_and_has_no_build_tools(docker_client: Any, image: Any) -> None:
    assert image.attrs["Size"] < MAX_IMAGE_BYTES, f"image is {image.attrs['Size'] / 1e6:.0f} MB"
    assert image.attrs["Config"]["User"] not in ("", "0", "root", "0:0")
    ran = run(
        docker_client,
        image,
        [
            "sh",
            "-c",
            "id -u; for t in gcc cc g++ make /opt/trainspotter/bin/pip; do "
            "command -v $t || true; done",
        ],
    )
    assert ran.exit_code == 0, ran.stderr
    lines = ran.stdout.split()
    assert lines[0] != "0", "the image must not run as root"
    assert lines[1:] == [], f"build tools left in the image: {lines[1:]}"


def test_shell_first_argument_runs_a_shell(docker_client: Any, image: Any) -> None:
    """A GitLab job with `image:` runs its script through sh/bash."""
    ran = run(docker_client, image, ["bash", "-c", "trainspotter --version && echo shell-ok"])
    assert ran.exit_code == 0, ran.stderr
    assert f"trainspotter {trainspotter.__version__}" in ran.stdout
    assert "shell-ok" in ran.stdout


def test_release_image_reports_the_package_version(docker_client: Any, image: Any) -> None:
    """The image release.yml's build step makes (context, Dockerfile, build args read from
    the workflow) says the version the wheel says: `--version` as the image's command,
    the way release.yml checks the pushed image."""
    assert release_build().platforms == ("linux/amd64", "linux/arm64")
    ran = run(docker_client, image, ["--version"])
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout.strip() == f"trainspotter {trainspotter.__version__}"


@pytest.mark.parametrize(
    ("log", "fail_on", "expected_exit", "expected_worst"),
    [
        (HEALTHY, "error", 0, None),
        (HEALTHY, "warning", 0, None),
        (HEALTHY, "info", None, None),
        (DIVERGENT, "error", 1, "error"),
        (DIVERGENT, "warning", 1, "error"),
        (DIVERGENT, "info", 1, "error"),
    ],
)
def test_github_way(
    docker_client: Any,
    image: Any,
    workspace: Workspace,
    log: str,
    fail_on: str,
    expected_exit: int | None,
    expected_worst: str | None,
) -> None:
    ran = run(
        docker_client,
        image,
        None,
        volumes=workspace.volumes(),
        environment=workspace.environment(paths=log, fail_on=fail_on),
        user=workspace.user,
        working_dir="/github/workspace",
    )
    assert ran.exit_code in (0, 1), ran.stdout + ran.stderr
    outputs = workspace.outputs()
    worst = outputs["max-severity"]
    # The exit code is exactly the comparison of the worst severity with fail-on.
    order = ["none", "info", "warning", "error"]
    should_fail = order.index(worst) >= order.index(fail_on)
    assert ran.exit_code == (1 if should_fail else 0)
    if expected_exit is not None:
        assert ran.exit_code == expected_exit
    if expected_worst is not None:
        assert worst == expected_worst
    assert outputs["exit-code"] == str(ran.exit_code)
    counts = {k: int(outputs[k]) for k in ("errors", "warnings", "infos")}
    if log == HEALTHY:
        assert counts["errors"] == 0 and counts["warnings"] == 0
    else:
        assert counts["errors"] > 0

    # Outputs: paths relative to the workspace, pointing at what was written.
    assert outputs["report-dir"] == "trainspotter-report"
    assert outputs["json"] == "trainspotter-report/trainspotter.json"
    assert outputs["comment-file"] == "trainspotter-report/comment.md"
    assert outputs["artifact-name"] == "trainspotter-report"
    report_dir = workspace.root / outputs["report-dir"]
    data = json.loads((workspace.root / outputs["json"]).read_text())
    assert data["run"]["source_path"] == log
    page_name = re.sub(r"[^A-Za-z0-9._-]+", "_", log) + ".html"
    pages = sorted(p.name for p in (report_dir / "html").glob("*.html"))
    assert pages == sorted(["index.html", page_name])
    page = (report_dir / "html" / page_name).read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page.lower()
    assert (workspace.root / outputs["comment-file"]).read_text().strip()

    # The job summary was appended, and says the verdict.
    summary = workspace.summary.read_text()
    assert "trainspotter gate" in summary
    assert ("failed" if should_fail else "passed") in summary
    assert "https://github.com/octo-org/trainspotter-demo/actions/runs/123456" in summary

    # stdout: the human log fenced off from workflow commands, then our annotations.
    match = re.search(r"^::stop-commands::([0-9a-f]{32})$", ran.stdout, re.MULTILINE)
    assert match, ran.stdout[:500]
    token = match.group(1)
    fenced, after = ran.stdout.split(f"\n::{token}::\n", 1)
    assert "trainspotter gate: 1 log checked" in fenced
    annotations = [line for line in after.splitlines() if line.startswith("::")]
    if log == DIVERGENT:
        assert any(line.startswith(f"::error file={log},") for line in annotations), after
    assert all(re.match(r"::(error|warning|notice) ", line) for line in annotations)

    # Files written belong to the runner's user, not to root or the image's user.
    assert report_dir.stat().st_uid == workspace.uid


def test_github_way_with_config_and_suppression(
    docker_client: Any, image: Any, workspace: Workspace
) -> None:
    """`.trainspotter.yml` in the working directory: paths, fail_on and an ignore rule
    that suppresses every divergence finding (reported, but no longer failing)."""
    (workspace.root / ".trainspotter.yml").write_text(
        "paths: ['examples/*/trainer_state.json']\n"
        "fail_on: error\n"
        "ignore:\n"
        "  - {detector: '*', path: 'examples/divergence/**', reason: 'known bad resume, fixed'}\n"
        "report:\n  artifact_name: training-gate\n"
    )
    if os.getuid() == 0:
        os.chown(workspace.root / ".trainspotter.yml", workspace.uid, workspace.gid)
    ran = run(
        docker_client,
        image,
        None,
        volumes=workspace.volumes(),
        environment=workspace.environment(),
        user=workspace.user,
        working_dir="/github/workspace",
    )
    assert ran.exit_code == 0, ran.stdout[-2000:] + ran.stderr
    outputs = workspace.outputs()
    assert outputs["errors"] == "0"
    assert outputs["artifact-name"] == "training-gate"
    data = json.loads((workspace.root / outputs["json"]).read_text())
    divergent = next(log for log in data["logs"] if "divergence" in log["run"]["source_path"])
    assert divergent["findings"], "suppressed findings are still reported"
    assert {f["suppressed"] for f in divergent["findings"]} == {"known bad resume, fixed"}
    html_pages = list((workspace.root / outputs["report-dir"] / "html").glob("*.html"))
    assert len(html_pages) == 3  # two logs and the index


def test_github_way_bad_config_is_exit_2_with_an_annotation(
    docker_client: Any, image: Any, workspace: Workspace
) -> None:
    (workspace.root / ".trainspotter.yml").write_text("paths: [examples/**]\nfail_on: eror\n")
    ran = run(
        docker_client,
        image,
        None,
        volumes=workspace.volumes(),
        environment=workspace.environment(),
        user=workspace.user,
        working_dir="/github/workspace",
    )
    assert ran.exit_code == 2
    assert "::error title=trainspotter could not run::" in ran.stdout
    assert ".trainspotter.yml:2: fail_on: 'eror' is not one of" in ran.stdout
    assert "did you mean 'error'" in ran.stdout
    assert workspace.outputs()["exit-code"] == "2"
    assert "could not run" in workspace.summary.read_text()


def test_github_way_unreadable_log_is_exit_2(
    docker_client: Any, image: Any, workspace: Workspace
) -> None:
    broken = workspace.root / "examples" / "broken" / "trainer_state.json"
    broken.parent.mkdir()
    broken.write_text('{"log_history": [')
    ran = run(
        docker_client,
        image,
        None,
        volumes=workspace.volumes(),
        environment=workspace.environment(paths="examples/*/trainer_state.json"),
        working_dir="/github/workspace",
        user="0:0",
    )
    assert ran.exit_code == 2, ran.stdout[-2000:]
    outputs = workspace.outputs()
    assert outputs["errors"] != "0", "the readable logs are still analysed"
    assert (
        "::error file=examples/broken/trainer_state.json,title=trainspotter%3A not checked::"
        in ran.stdout
    )


def test_gitlab_way_codequality(docker_client: Any, image: Any, workspace: Workspace) -> None:
    """`docker run` outside GitHub: the CLI, a Code Quality report, the exit code."""
    ran = run(
        docker_client,
        image,
        [
            "analyze",
            "examples/**/trainer_state.json",
            "--fail-on",
            "error",
            "--output",
            "codequality",
            "--out",
            "gl-code-quality-report.json",
        ],
        volumes={str(workspace.root): {"bind": "/builds/project", "mode": "rw"}},
        environment={"CI": "true", "GITLAB_CI": "true"},
        user=workspace.user,
        working_dir="/builds/project",
    )
    assert ran.exit_code == 1, ran.stderr
    raw = (workspace.root / "gl-code-quality-report.json").read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf")
    issues = json.loads(raw)
    assert issues and isinstance(issues, list)
    for issue in issues:
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["location"]["path"].startswith("examples/")
    assert {i["location"]["path"] for i in issues} >= {DIVERGENT}
    assert "::" not in ran.stdout, "no workflow commands outside GitHub"


def test_gitlab_way_gate_with_junit_and_codequality(
    docker_client: Any, image: Any, workspace: Workspace
) -> None:
    ran = run(
        docker_client,
        image,
        ["gate", HEALTHY, "--outputs", "codequality,junit,json", "--report-dir", "reports"],
        volumes={str(workspace.root): {"bind": "/builds/project", "mode": "rw"}},
        environment={"CI": "true", "GITLAB_CI": "true"},
        user=workspace.user,
        working_dir="/builds/project",
    )
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    written = sorted(p.name for p in (workspace.root / "reports").iterdir())
    assert written == ["gl-code-quality-report.json", "junit.xml", "trainspotter.json"]
    assert "::" not in ran.stdout
