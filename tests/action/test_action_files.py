"""Static checks of the Action and the README's workflows (no engine, no act): the
workflows a user copies pass the same lints as ours, and the image the gate runs is the one
the image step resolved (by ID: no fixed tag that two versions of the Action could share).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from act_support import ACTION, REPO, readme_workflows

BIN = Path(sys.executable).parent
README_ZIZMOR = """\
# The README's examples reference actions by tag, as their READMEs publish them (a user's
# copy may pin them by SHA); every other audit applies as to our own workflows.
rules:
  unpinned-uses:
    config:
      policies:
        "*": ref-pin
"""


@pytest.fixture
def readme_checkout(tmp_path: Path) -> Path:
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in readme_workflows().items():
        (folder / name).write_text(text, encoding="utf-8")
    (tmp_path / "zizmor.yml").write_text(README_ZIZMOR, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        ["check-jsonschema", "--builtin-schema", "vendor.github-workflows"],
        ["actionlint", "-no-color"],
        ["zizmor", "--offline", "--quiet", "--config", "zizmor.yml"],
    ],
    ids=["check-jsonschema", "actionlint", "zizmor"],
)
def test_readme_workflows_pass_the_lints(readme_checkout: Path, command: list[str]) -> None:
    tool = BIN / command[0]
    if not tool.is_file():
        pytest.skip(f"{command[0]} is not installed (pip install -e '.[dev]')")
    files = sorted(str(p) for p in (readme_checkout / ".github" / "workflows").glob("*.yml"))
    target = [str(readme_checkout / ".github" / "workflows")] if command[0] == "zizmor" else files
    ran = subprocess.run(
        [str(tool), *command[1:], *target], capture_output=True, text=True, cwd=readme_checkout
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_readme_workflows_use_the_published_action() -> None:
    workflows = readme_workflows()
    assert set(workflows) == {"training-gate.yml", "training-gate-comment.yml"}
    gate = yaml.safe_load(workflows["training-gate.yml"])
    steps = gate["jobs"]["gate"]["steps"]
    action = next(step for step in steps if step.get("uses", "").startswith("antonsoo/"))
    assert action["uses"] == ACTION
    patterns = action["with"]["paths"].split()
    assert len(patterns) == 1, "each pattern must find a log: the example keeps to one"


def test_the_gate_runs_the_image_the_image_step_resolved() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    steps = {step.get("id"): step for step in action["runs"]["steps"]}
    image_step, gate = steps["image"], steps["gate"]
    assert gate["env"]["IMAGE"] == "${{ steps.image.outputs.id }}"
    assert '"$IMAGE" || rc=$?' in gate["run"]
    assert "trainspotter-action:local" not in (REPO / "action.yml").read_text()
    for needed in ("github.action_ref", "github.action_repository", "github.action_path"):
        assert needed in str(image_step["env"])
    assert "ghcr.io/" in image_step["run"] and "--iidfile" in image_step["run"]
