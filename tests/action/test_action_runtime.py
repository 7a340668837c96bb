"""The Action end to end in a GitHub Actions runtime (nektos/act; see conftest.py).

Each test is a user's repository (a git checkout with logs), a workflow that says
`uses: antonsoo/trainspotter@v1` (the test's own, or the README's exactly as written), and
the job's result read back: act's exit code and log (annotations, step outcomes, the job
summary), the Action's outputs, the artifact act's server received, and the calls the
GitHub API stand-in recorded (the sticky PR comment).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from act_support import (
    ACTION,
    BASE_REPOSITORY,
    DIVERGENT,
    FORK_REPOSITORY,
    HEALTHY,
    HEALTHY_ONLY,
    PR_NUMBER,
    PREBUILT,
    ActRun,
    Checkout,
    Runtime,
    gate_workflow,
    healthy_checkout,
    readme_workflows,
)
from github_api import READ_ONLY_TOKEN, WRITE_TOKEN, GitHubStandIn

pytestmark = pytest.mark.action

GATE_STEP = "Fail the step by the gate's verdict"
MARKER = "<!-- Sticky Pull Request Commenttrainspotter -->"  # as the action writes it


def _gate_exit(run: ActRun) -> str:
    """The gate's exit code as the job saw it (the Action's `exit-code` output)."""
    return run.outputs()["exit-code"]


def _one_comment(api: GitHubStandIn) -> str:
    assert len(api.comments) == 1, [c.body[:80] for c in api.comments]
    comment = api.comments[0]
    assert comment.number == PR_NUMBER and comment.body.endswith(MARKER)
    return comment.body


def _healthy_pull_request(
    runtime: Runtime, api: GitHubStandIn, tmp_path: Path, **kwargs: str
) -> tuple[Checkout, ActRun]:
    """A repository with the healthy example run, gated on a pull request."""
    checkout = healthy_checkout(tmp_path / "repo")
    run = runtime.pull_request(checkout, HEALTHY_ONLY, tmp_path / "run", api.url, **kwargs)
    return checkout, run


def test_image_pull_fallback_then_prebuilt(prebuilt_image: dict[str, ActRun]) -> None:
    """@v1 runs ghcr.io/antonsoo/trainspotter:1; it cannot be pulled here, so the first
    job builds the Dockerfile, and once an image of that tag is on the runner the job
    uses it without building."""
    built, prebuilt = prebuilt_image["built"], prebuilt_image["prebuilt"]
    for run in (built, prebuilt):
        assert f"Could not pull {PREBUILT}" in run.log
    assert "building the image from the Action's Dockerfile instead" in built.log
    assert "::group::Build the trainspotter image" in built.log
    assert "using the copy already on this runner" in prebuilt.log
    assert "::group::Build the trainspotter image" not in prebuilt.log
    assert _gate_exit(prebuilt) == "0"


def test_failing_pull_request(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    checkout = Checkout(tmp_path / "repo")
    checkout.add("runs/big-lr/trainer_state.json", DIVERGENT)
    checkout.commit("a divergent run")
    workflow = gate_workflow({"paths": "runs/**/trainer_state.json", "fail-on": "error"})
    run = runtime.pull_request(
        checkout,
        workflow,
        tmp_path / "run",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert run.exit_code != 0, "the job must fail"
    assert run.step_outcome(GATE_STEP) == "failure"
    outputs = run.outputs()
    assert outputs["exit-code"] == "1"
    assert outputs["max-severity"] == "error" and int(outputs["errors"]) >= 1
    assert outputs["report-dir"] == "trainspotter-report"
    assert outputs["json"] == "trainspotter-report/trainspotter.json"
    assert outputs["comment-file"] == "trainspotter-report/comment.md"
    errors = run.commands("error")
    assert any("file=runs/big-lr/trainer_state.json" in e and "divergence" in e for e in errors)
    assert any("The gate failed" in e for e in errors)
    assert "trainspotter gate \u274c failed" in run.summaries()
    files = run.artifact()
    assert {"summary.md", "comment.md", "trainspotter.json", "pr-number"} <= set(files)
    assert "html/index.html" in files and any(n.startswith("html/runs_big-lr") for n in files)
    assert files["pr-number"] == f"{PR_NUMBER}\n".encode()
    body = _one_comment(github_api)
    assert body.startswith(files["comment.md"].decode().rstrip("\n"))
    assert "failed" in body and "divergence" in body
    assert github_api.kinds(writes_only=True) == ["create"]

    # A second push to the pull request: the same comment is updated, not a second one.
    checkout.add("runs/baseline/trainer_state.json", HEALTHY)
    checkout.commit("a second run")
    again = runtime.pull_request(
        checkout,
        workflow,
        tmp_path / "run2",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert _gate_exit(again) == "1"
    assert github_api.kinds(writes_only=True) == ["create", "update"]
    body = _one_comment(github_api)
    assert "runs/baseline/trainer\\_state.json" in body or "runs/baseline" in body


def test_passing_pull_request(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    _, run = _healthy_pull_request(runtime, github_api, tmp_path, token=WRITE_TOKEN)
    assert run.exit_code == 0, run.log[-3000:]
    assert run.step_outcome(GATE_STEP) == "success"
    outputs = run.outputs()
    assert (outputs["exit-code"], outputs["errors"]) == ("0", "0")
    assert run.commands("error") == []
    assert "trainspotter gate \u2705 passed" in run.summaries()
    assert "passed" in _one_comment(github_api)


def test_pattern_that_matches_nothing(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    checkout = healthy_checkout(tmp_path / "repo")
    patterns = "examples/healthy/trainer_state.json\nlogs/**/metrics.csv"
    run = runtime.pull_request(
        checkout,
        gate_workflow({"paths": patterns}),
        tmp_path / "run",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert run.exit_code != 0
    assert _gate_exit(run) == "2"
    assert any(
        "logs/**/metrics.csv" in e and "matched no training log" in e for e in run.commands("error")
    )
    body = _one_comment(github_api)
    assert "could not check everything" in body
    assert "trainspotter.json" in run.artifact()  # the healthy log is still reported


def test_fork_pull_request(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    _, run = _healthy_pull_request(
        runtime, github_api, tmp_path, token=READ_ONLY_TOKEN, head_repository=FORK_REPOSITORY
    )
    assert run.exit_code == 0, run.log[-3000:]
    assert any("comes from a fork" in n for n in run.commands("notice"))
    assert github_api.calls == []
    files = run.artifact()
    assert files["pr-number"] == f"{PR_NUMBER}\n".encode()
    assert b"passed" in files["comment.md"]


def test_token_that_may_not_comment(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    """No `pull-requests: write`: the comment fails, a notice says why, and the job's
    result is still the gate's."""
    _, run = _healthy_pull_request(runtime, github_api, tmp_path, token=READ_ONLY_TOKEN)
    assert run.exit_code == 0, run.log[-3000:]
    assert [c.status for c in github_api.calls if c.kind == "create"] == [403]
    assert github_api.comments == []
    assert any("Posting the pull-request comment failed" in n for n in run.commands("notice"))


def test_config_error_after_a_passing_push(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    """The comment said "passed"; then a typo in .trainspotter.yml: the check is red, so the
    comment and the artifact must now say the gate could not run."""
    checkout = healthy_checkout(tmp_path / "repo")
    workflow = HEALTHY_ONLY
    first = runtime.pull_request(
        checkout,
        workflow,
        tmp_path / "run1",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert first.exit_code == 0 and "passed" in _one_comment(github_api)
    checkout.add(".trainspotter.yml", "fail_on: eror\n")
    checkout.commit("a typo in the config")
    second = runtime.pull_request(
        checkout,
        workflow,
        tmp_path / "run2",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert second.exit_code != 0
    assert _gate_exit(second) == "2"
    assert any("could not run" in e and "fail_on" in e for e in second.commands("error"))
    body = _one_comment(github_api)
    assert "could not run" in body and "passed" not in body
    files = second.artifact()
    assert b"could not run" in files["comment.md"]
    assert files["pr-number"] == f"{PR_NUMBER}\n".encode()
    assert "trainspotter could not run" in second.summaries()


def test_action_from_a_local_path_builds_and_a_broken_build_says_so(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    """`uses: ./path` builds the Dockerfile (no pull); when the image cannot be built the
    job fails and the artifact and comment say the gate could not run."""
    checkout = healthy_checkout(tmp_path / "repo")
    skip = shutil.ignore_patterns("examples", "tests", "docs", "benchmarks", ".github")
    shutil.copytree(runtime.action_dir, checkout.root / "vendored" / "trainspotter", ignore=skip)
    checkout.commit("the action, vendored")
    workflow = gate_workflow(
        {"paths": "examples/healthy/trainer_state.json"}, uses="./vendored/trainspotter"
    )
    run = runtime.pull_request(
        checkout,
        workflow,
        tmp_path / "run1",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert run.exit_code == 0, run.log[-3000:]
    assert "docker pull" not in run.log and "::group::Build the trainspotter image" in run.log

    dockerfile = checkout.root / "vendored" / "trainspotter" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN false\n")
    checkout.commit("a Dockerfile that cannot be built")
    broken = runtime.pull_request(
        checkout,
        workflow,
        tmp_path / "run2",
        github_api.url,
        token=WRITE_TOKEN,
    )
    assert broken.exit_code != 0
    assert run.step_outcome("Get the trainspotter image") == "success"
    assert broken.step_outcome("Get the trainspotter image") == "failure"
    body = _one_comment(github_api)
    assert "could not run" in body and "passed" not in body
    assert b"could not run" in broken.artifact()["comment.md"]


# ------------------------------------------------------------------- the README's workflows


def _readme_checkout(root: Path) -> Checkout:
    """A typical Hugging Face project: Trainer output folders with checkpoints."""
    checkout = Checkout(root)
    checkout.add("train.py", "# the training script\n")
    checkout.add("output/lr-3e-4/trainer_state.json", DIVERGENT)
    checkout.add("output/lr-3e-4/checkpoint-200/trainer_state.json", DIVERGENT)
    checkout.commit("training output")
    return checkout


def _comment_job(
    runtime: Runtime, checkout: Checkout, gate: ActRun, api: GitHubStandIn, run_dir: Path
) -> ActRun:
    """The README's workflow_run job, as GitHub starts it when the gate's run (here: run
    4242, with the artifact act's server received) completes."""
    run_id = 4242
    api.artifacts[run_id] = {"trainspotter-report": gate.artifact_zip()}
    owner, name = BASE_REPOSITORY.split("/")
    event = {
        "action": "completed",
        "workflow_run": {
            "id": run_id,
            "name": "training-gate",
            "event": "pull_request",
            "conclusion": "failure",
        },
        "repository": {"full_name": BASE_REPOSITORY, "name": name, "owner": {"login": owner}},
    }
    return runtime.run(
        checkout,
        readme_workflows()["training-gate-comment.yml"],
        "workflow_run",
        run_dir,
        api_url=api.url,
        token=WRITE_TOKEN,
        payload=event,
        workflow_name="training-gate-comment.yml",
    )


def test_readme_workflows_as_written(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    """The README's two workflows, exactly as the README shows them, in a repository laid
    out like most Hugging Face projects: the gate checks the run (exit 1 for its findings,
    not 2 for a pattern that found nothing), comments on a same-repository PR, and the
    workflow_run job then updates that same comment."""
    workflows = readme_workflows()
    assert set(workflows) == {"training-gate.yml", "training-gate-comment.yml"}
    assert f"uses: {ACTION}" in workflows["training-gate.yml"]
    checkout = _readme_checkout(tmp_path / "repo")
    gate = runtime.pull_request(
        checkout,
        workflows["training-gate.yml"],
        tmp_path / "gate",
        github_api.url,
        token=WRITE_TOKEN,
        workflow_name="training-gate.yml",
    )
    assert gate.exit_code != 0
    assert re.search(r"Fail the step by the gate's verdict.*\n.*exit status 1", gate.log)
    assert any("file=output/lr-3e-4/trainer_state.json" in e for e in gate.commands("error"))
    assert "could not check" not in gate.log
    first = _one_comment(github_api)
    assert "failed" in first

    comment = _comment_job(runtime, checkout, gate, github_api, tmp_path / "comment")
    assert comment.exit_code == 0, comment.log[-3000:]
    assert github_api.kinds(writes_only=True) == ["create", "update"]
    assert _one_comment(github_api) == first


def test_readme_fork_recipe_with_comment_false(
    runtime: Runtime, prebuilt_image: object, github_api: GitHubStandIn, tmp_path: Path
) -> None:
    """The README's recipe for fork PRs: the gate job with `comment: false` (as the README
    allows) on a fork's PR posts nothing, yet its artifact holds comment.md and pr-number,
    and the workflow_run job posts them with the base repository's token."""
    workflows = readme_workflows()
    gate_yml = workflows["training-gate.yml"]
    with_line = re.search(r"uses: antonsoo/trainspotter@v1\n(?:.*\n)*?( +)with:\n", gate_yml)
    assert with_line is not None, gate_yml
    gate_yml = gate_yml.replace(
        with_line[0], f'{with_line[0]}{with_line[1]}  comment: "false"\n', 1
    )
    assert yaml.safe_load(gate_yml)["jobs"]["gate"]["steps"][1]["with"]["comment"] == "false"
    checkout = _readme_checkout(tmp_path / "repo")
    gate = runtime.pull_request(
        checkout,
        gate_yml,
        tmp_path / "gate",
        github_api.url,
        token=READ_ONLY_TOKEN,
        head_repository=FORK_REPOSITORY,
        workflow_name="training-gate.yml",
    )
    assert gate.exit_code != 0
    assert github_api.calls == []
    files = gate.artifact()
    assert files["pr-number"] == f"{PR_NUMBER}\n".encode()
    assert b"failed" in files["comment.md"]

    comment = _comment_job(runtime, checkout, gate, github_api, tmp_path / "comment")
    assert comment.exit_code == 0, comment.log[-3000:]
    assert [c.kind for c in github_api.calls][:2] == ["artifacts", "download"]
    body = _one_comment(github_api)
    assert body.startswith(files["comment.md"].decode().rstrip("\n"))
