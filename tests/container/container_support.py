"""Helpers of the container tests: running the image, and the GitHub runner's files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RELEASE_WORKFLOW = REPO / ".github" / "workflows" / "release.yml"
RUNNER_UID = 1001
"""The user id of GitHub's hosted runner, which owns the workspace there."""


@dataclass(frozen=True)
class ReleaseBuild:
    """How release.yml's docker/build-push-action step builds the published image."""

    context: Path
    dockerfile: str
    build_args: dict[str, str]
    platforms: tuple[str, ...]


def release_build() -> ReleaseBuild:
    """The build step of release.yml, read from the workflow (not restated here)."""
    workflow = yaml.safe_load(RELEASE_WORKFLOW.read_text(encoding="utf-8"))
    steps = [
        step
        for job in workflow["jobs"].values()
        for step in job.get("steps", [])
        if str(step.get("uses", "")).startswith("docker/build-push-action@")
    ]
    if len(steps) != 1:
        raise AssertionError(f"release.yml has {len(steps)} build-push-action steps, not 1")
    options = steps[0]["with"]
    unsupported = set(options) - {
        "context", "file", "build-args", "platforms", "push", "tags", "labels",
        "annotations", "sbom", "provenance",
    }  # fmt: skip
    if unsupported:  # an option that changes the image must be mirrored in conftest.py
        raise AssertionError(f"release.yml build options the tests ignore: {sorted(unsupported)}")
    args = dict(
        line.split("=", 1) for line in str(options.get("build-args", "")).splitlines() if line
    )
    return ReleaseBuild(
        context=(REPO / options.get("context", ".")).resolve(),
        dockerfile=options.get("file", "Dockerfile"),
        build_args=args,
        platforms=tuple(options["platforms"].split(",")),
    )


@dataclass
class Ran:
    """One finished container run."""

    exit_code: int
    stdout: str
    stderr: str


def run(
    client: Any,
    image: Any,
    command: list[str] | None,
    *,
    volumes: Mapping[str, Mapping[str, str]] | None = None,
    environment: Mapping[str, str] | None = None,
    user: str | None = None,
    working_dir: str | None = None,
    network_disabled: bool = True,
) -> Ran:
    """Run the image to completion and collect its exit code and output."""
    container = client.containers.run(
        image.id,
        command,
        volumes=dict(volumes or {}),
        environment=dict(environment or {}),
        user=user,
        working_dir=working_dir,
        network_disabled=network_disabled,
        detach=True,
    )
    try:
        status = container.wait(timeout=300)
        stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
        stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    return Ran(int(status["StatusCode"]), stdout, stderr)


@dataclass
class Workspace:
    """A repository checkout as the Action mounts it, plus the runner's command files."""

    root: Path
    files: Path
    uid: int
    gid: int

    @property
    def summary(self) -> Path:
        return self.files / "step_summary"

    @property
    def output(self) -> Path:
        return self.files / "output"

    @property
    def user(self) -> str:
        return f"{self.uid}:{self.gid}"

    def volumes(self) -> dict[str, dict[str, str]]:
        return {
            str(self.root): {"bind": "/github/workspace", "mode": "rw"},
            str(self.summary): {"bind": "/github/file_commands/step_summary", "mode": "rw"},
            str(self.output): {"bind": "/github/file_commands/output", "mode": "rw"},
        }

    def environment(self, **inputs: str) -> dict[str, str]:
        env = {
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_WORKSPACE": "/github/workspace",
            "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary",
            "GITHUB_OUTPUT": "/github/file_commands/output",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_REPOSITORY": "octo-org/trainspotter-demo",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": "123456",
            "GITHUB_SHA": "0" * 40,
        }
        env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
        return env

    def outputs(self) -> dict[str, str]:
        """$GITHUB_OUTPUT parsed as the runner parses it (`name=value` and heredocs)."""
        return parse_github_output(self.output.read_text(encoding="utf-8"))


def parse_github_output(text: str) -> dict[str, str]:
    """The runner's reading of a $GITHUB_OUTPUT file."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body: list[str] = []
            while lines[i] != delimiter:
                body.append(lines[i])
                i += 1
            i += 1
            values[name] = "\n".join(body)
        else:
            name, value = line.split("=", 1)
            values[name] = value
    return values
