"""Every shell command in the README is exercised.

The README's fenced `sh` blocks are extracted and each command is either run, here and
offline, in a temporary copy of the examples (the `trainspotter` commands, with their
expected exit code), or, when it cannot run in a test, listed in NOT_RUN with the reason
and checked as far as it can be without running it (the make target exists, the package
and extra exist, the image is the one release.yml publishes, the container's arguments
parse). A README command that is in neither set fails the test. `text` blocks are
synopses, not commands: every option they show must exist.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import trainspotter
from trainspotter.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)


def _blocks(language: str) -> list[str]:
    return [body for _, lang, body in FENCE.findall(README) if lang == language]


def _commands(body: str) -> list[str]:
    """The block's commands: comments dropped, backslash continuations joined."""
    commands: list[str] = []
    pending = ""
    for raw in body.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        words = shlex.split(line, comments=True)
        if words:
            commands.append(shlex.join(words))
    return commands


SHELL_COMMANDS = [c for body in _blocks("sh") for c in _commands(body)]

# Run offline in a copy of examples/: command -> expected exit code.
RUN: dict[str, int] = {
    "trainspotter analyze examples/divergence/trainer_state.json --html report.html": 1,
    "trainspotter analyze examples/healthy/trainer_state.json examples/healthy/metrics.csv": 0,
    "trainspotter explain lr_schedule": 0,
}


def _pyproject() -> dict[str, object]:
    data: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text())
    return data


def _check_pypi_package(words: list[str]) -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    requirement = words[-1]
    name, _, extra = requirement.partition("[")
    assert name == project["name"] == "trainspotter"
    if extra:
        assert extra.rstrip("]") in project["optional-dependencies"]


def _check_image(reference: str) -> None:
    release = yaml.safe_load((REPO / ".github/workflows/release.yml").read_text())
    image, _, tag = reference.partition(":")
    assert image == release["env"]["IMAGE"]
    # metadata-action's `{{major}}` tag of this version
    assert tag == trainspotter.__version__.split(".")[0]


def _check_docker(words: list[str]) -> None:
    if words[1] == "pull":
        _check_image(words[2])
    elif words[1] == "build":
        assert words[-1] == "." and (REPO / "Dockerfile").is_file()
    else:
        assert words[1:5] == ["run", "--rm", "-v", "$PWD:/work"], words
        _check_image(words[5])
        build_parser().parse_args(words[6:])  # the image's arguments are a valid command


def _check_make(words: list[str]) -> None:
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", *words[1:]],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")},  # under make test
    )
    assert dry.returncode == 0, dry.stderr


# Commands a test cannot run, why, and what is checked instead.
NOT_RUN: dict[str, tuple[str, Callable[[list[str]], None]]] = {
    "pipx install trainspotter": ("installs from PyPI (network)", _check_pypi_package),
    "pip install 'trainspotter[tensorboard]'": (
        "installs from PyPI (network)",
        _check_pypi_package,
    ),
    "docker pull ghcr.io/antonsoo/trainspotter:1": (
        "pulls from GHCR (network, a Docker engine)",
        _check_docker,
    ),
    "docker build -t trainspotter .": (
        "needs a Docker engine: `make test-container` builds it (as release.yml does)",
        _check_docker,
    ),
    "make demo": ("creates .venv-run from PyPI (network); its analysis runs in RUN", _check_make),
    "make test": ("is this test suite", _check_make),
    "make bench": ("minutes of CPU, on demand (benchmarks/)", _check_make),
    "make test-container": ("root and a Docker engine; .ci/run runs it", _check_make),
    "make test-action": (
        "root, a Docker engine and ../shared/actions; .ci/run runs it",
        _check_make,
    ),
    "make test-integrations": ("installs torch and the frameworks; .ci/run runs it", _check_make),
    "make lock": ("resolves against PyPI (network)", _check_make),
    "make mermaid-cli": ("installs from npm (network); .ci/run runs it", _check_make),
    "make site": ("creates .venv-run from PyPI; tests/test_site.py runs its script", _check_make),
}


def _justification(command: str) -> tuple[str, Callable[[list[str]], None]] | None:
    if command in NOT_RUN:
        return NOT_RUN[command]
    if command.startswith("docker run "):
        return ("needs a Docker engine and the published image", _check_docker)
    return None


def test_every_readme_command_is_run_or_justified() -> None:
    assert SHELL_COMMANDS, "no sh block found in the README"
    unknown = [c for c in SHELL_COMMANDS if c not in RUN and _justification(c) is None]
    assert not unknown, f"README commands no test runs or checks: {unknown}"
    # and nothing listed here that the README no longer has
    assert set(RUN) | set(NOT_RUN) <= set(SHELL_COMMANDS)


@pytest.mark.parametrize("command", sorted(RUN))
def test_readme_command_runs(command: str, tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    words = shlex.split(command)
    assert words[0] == "trainspotter"
    ran = subprocess.run(
        [str(Path(sys.executable).parent / "trainspotter"), *words[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == RUN[command], ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr
    if "--html" in words:
        page = tmp_path / words[words.index("--html") + 1]
        assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    "command", [c for c in SHELL_COMMANDS if c not in RUN], ids=lambda c: c[:60]
)
def test_readme_command_not_run_is_checked(command: str) -> None:
    justified = _justification(command)
    assert justified is not None, command
    check = justified[1]
    check(shlex.split(command))


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_synopsis_options_exist() -> None:
    """The `text` synopses: each `trainspotter SUB ... --option` names a real option."""
    subparsers = _subparsers()
    checked = 0
    for body in _blocks("text"):
        command = None
        for line in body.splitlines():
            match = re.match(r"\s*(?:trainspotter|python -m trainspotter) (\S+)", line)
            if match and match.group(1) in subparsers:
                command = match.group(1)
            elif match or not line.startswith(" "):
                command = None
            if command is None:
                continue
            known = {o for a in subparsers[command]._actions for o in a.option_strings}
            for option in re.findall(r"--(?:\[no-\])?[\w-]+", line.split("#")[0]):
                names = (
                    [option.replace("[no-]", ""), option.replace("[no-]", "no-")]
                    if "[no-]" in option
                    else [option]
                )
                for name in names:
                    assert name in known, f"`{name}` is not an option of `trainspotter {command}`"
                    checked += 1
    assert checked > 20, f"only {checked} synopsis options found: did the blocks move?"
