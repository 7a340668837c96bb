"""The GitLab CI template users `include:` (ci/gitlab/trainspotter.gitlab-ci.yml).

Its script lines run here, as GitLab's runner runs them (one shell, each line must exit
0), with the installed `trainspotter` in place of the image's, on real examples: the exit
code is the gate's, and the Code Quality and JUnit reports are where its `artifacts:
reports:` say. The README's GitLab snippets name the same template and image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

import trainspotter

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "ci" / "gitlab" / "trainspotter.gitlab-ci.yml"
IMAGE = "ghcr.io/antonsoo/trainspotter"


def _job() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))["trainspotter"]
    return job


def _run_script(workdir: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """The job's `script:` in one bash with `-e`, as GitLab's shell executor runs it."""
    script = "\n".join(["set -e", *_job()["script"]])
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(workdir),
        **_job()["variables"],
        **variables,
    }
    return subprocess.run(
        ["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("divergence", "healthy"):
        shutil.copytree(REPO / "examples" / name, tmp_path / "runs" / name)
    return tmp_path


def test_the_image_is_the_one_release_publishes_at_the_major_tag() -> None:
    job = _job()
    major = trainspotter.__version__.split(".")[0]
    assert job["variables"]["TRAINSPOTTER_IMAGE"] == f"{IMAGE}:{major}"
    assert job["image"] == {"name": "${TRAINSPOTTER_IMAGE}", "entrypoint": [""]}
    release = yaml.safe_load((REPO / ".github/workflows/release.yml").read_text())
    assert release["env"]["IMAGE"] == IMAGE


def test_a_failing_run_fails_the_job_and_leaves_the_reports_gitlab_reads(project: Path) -> None:
    ran = _run_script(project, TRAINSPOTTER_PATHS="runs/**/trainer_state.json")
    assert ran.returncode == 1, ran.stderr
    reports = _job()["artifacts"]["reports"]
    quality = json.loads((project / reports["codequality"]).read_text(encoding="utf-8"))
    divergent = [
        q for q in quality if q["location"]["path"] == "runs/divergence/trainer_state.json"
    ]
    assert "critical" in {q["severity"] for q in divergent}, divergent
    junit = ET.parse(project / reports["junit"]).getroot()
    assert list(junit.iter("failure")), "no failing test case"
    for path in _job()["artifacts"]["paths"]:
        assert (project / path / "html" / "index.html").is_file()


def test_a_healthy_run_passes_and_the_variables_reach_the_gate(project: Path) -> None:
    (project / "gate.yml").write_text("fail_on: info\n")
    healthy = "runs/healthy/trainer_state.json"
    assert _run_script(project, TRAINSPOTTER_PATHS=healthy).returncode == 0
    # The healthy run's info notes fail an `info` gate, set by variable or by config.
    assert (
        _run_script(project, TRAINSPOTTER_PATHS=healthy, TRAINSPOTTER_FAIL_ON="info").returncode
        == 1
    )
    assert (
        _run_script(project, TRAINSPOTTER_PATHS=healthy, TRAINSPOTTER_CONFIG="gate.yml").returncode
        == 1
    )


def test_patterns_reach_the_gate_unexpanded(project: Path) -> None:
    """`set -f`: a pattern the shell would expand (to nothing useful) goes to the gate."""
    (project / "runs" / "decoy.txt").write_text("not a log\n")
    ran = _run_script(project, TRAINSPOTTER_PATHS="runs/*")
    # The gate sees `runs/*`: folders it recognises are logs, other files are skipped.
    assert ran.returncode == 1, ran.stderr
    summary = (project / "trainspotter-report" / "summary.md").read_text(encoding="utf-8")
    assert "decoy.txt" in summary
    assert "runs/healthy" in summary and "runs/divergence" in summary


def test_the_readme_includes_this_template_from_the_major_tag() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    url = f"https://raw.githubusercontent.com/antonsoo/trainspotter/v1/{TEMPLATE.relative_to(REPO)}"
    assert readme.count(f"- remote: {url}") >= 2
    assert "registry.example.com" not in readme
    assert os.path.isfile(REPO / TEMPLATE.relative_to(REPO))
