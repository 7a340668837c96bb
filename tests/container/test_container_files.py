"""Static checks of the container's files (no engine needed): the lock file covers the
package's dependencies, the Dockerfile keeps its contract, and action.yml, entrypoint.py
and the README agree on inputs and outputs."""

from __future__ import annotations

import re
import tomllib

import yaml
from container_support import REPO

ENTRYPOINT_OUTPUTS = {
    "max-severity",
    "errors",
    "warnings",
    "infos",
    "report-dir",
    "json",
    "comment-file",
    "exit-code",
}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_lock_file_pins_every_dependency_with_hashes() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    for extra in ("tensorboard", "fast"):  # the image reads TensorBoard and parses JSONL fast
        wanted |= {_name(r) for r in project["optional-dependencies"][extra]}
    lock = (REPO / "requirements" / "docker.txt").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock, re.MULTILINE)
    pinned = {name.lower().replace("_", "-") for name, _ in pins}
    assert wanted <= pinned, f"not in requirements/docker.txt (run `make lock`): {wanted - pinned}"
    blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", lock.split("\n", 2)[2])
    for block in blocks:
        assert "--hash=sha256:" in block, block.splitlines()[0]
    assert "make lock" in lock.splitlines()[1]


def test_dockerfile_contract() -> None:
    lines = [
        line
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "ARG BASE_IMAGE=python:3.12-slim"
    assert lines[1].startswith("FROM ${BASE_IMAGE}")
    text = (REPO / "Dockerfile").read_text()
    assert "# syntax=" not in text, "a syntax line pulls a frontend from Docker Hub"
    assert "--require-hashes" in text and "requirements/docker.txt" in text
    assert re.search(r"^USER (?!0|root)", text, re.MULTILINE)
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") :][:1] == ["*"], ".dockerignore must start from nothing"


def test_action_inputs_reach_the_entrypoint_and_outputs_come_back() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    inputs = set(action["inputs"])
    assert inputs == {
        "paths",
        "config",
        "fail-on",
        "comment",
        "artifact-name",
        "format",
        "working-directory",
    }
    gate = next(step for step in action["runs"]["steps"] if step.get("id") == "gate")
    entrypoint = (REPO / "entrypoint.py").read_text()
    for name in inputs:
        variable = "INPUT_" + name.upper().replace("-", "_")
        assert gate["env"][variable] == "${{ inputs." + name + " }}"
        assert f"--env {variable}" in gate["run"]
        assert f'"{variable}"' in entrypoint, variable
    for name, spec in action["outputs"].items():
        assert spec["value"] == "${{ steps.gate.outputs." + name + " }}"
        assert name in ENTRYPOINT_OUTPUTS
        assert f'"{name}"' in entrypoint, name
    steps = [step["uses"] for step in action["runs"]["steps"] if "uses" in step]
    assert [ref.split("@")[0] for ref in steps] == [
        "actions/upload-artifact",
        "marocchino/sticky-pull-request-comment",
    ]
    # Pinned by commit: a moved tag would run someone else's code with the user's token.
    assert all(re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", ref) for ref in steps), steps
    last = action["runs"]["steps"][-1]
    assert last["if"] == "always()" and "GATE_EXIT" in last["run"]


def test_readme_documents_the_action() -> None:
    readme = (REPO / "README.md").read_text()
    for needle in (
        "pull-requests: write",
        "workflow_run",
        "fork",
        'entrypoint: [""]',
        "docker run --rm",
        "## `.trainspotter.yml` reference",
    ):
        assert needle in readme, needle
    action = yaml.safe_load((REPO / "action.yml").read_text())
    for name in action["inputs"]:
        assert f"| `{name}` |" in readme, name
