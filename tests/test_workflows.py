"""The workflows keep the release promises that actionlint and zizmor do not check.

Every third-party action (in the workflows and in action.yml) is pinned by a full commit
SHA with its tag beside it; the
release publishes to PyPI by trusted publishing only (an OIDC token, no stored secret),
builds the multi-arch image with SBOM and provenance, and calls the Pages workflow.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import trainspotter

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
    return data


def _steps(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (job_id, step) for job_id, job in workflow["jobs"].items() for step in job.get("steps", [])
    ]


@pytest.mark.parametrize("path", [*WORKFLOWS, REPO / "action.yml"], ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_sha_with_its_tag(path: Path) -> None:
    lines = [
        line.split("uses:", 1)[1].strip()
        for line in path.read_text().splitlines()
        if re.match(r"^\s*(- )?uses:", line)
    ]
    assert lines, f"{path.name} uses no action?"
    for ref in lines:
        if ref.startswith("./"):
            continue
        assert PINNED.match(ref), f"{path.name}: `{ref}` is not `owner/repo@<sha> # vX.Y.Z`"


def test_release_runs_on_version_tags_only_and_not_on_the_major_tag() -> None:
    release = _load("release.yml")
    # PyYAML reads the key `on` as True.
    tags = release[True]["push"]["tags"]
    assert tags == ["v[0-9]+.[0-9]+.[0-9]+", "v[0-9]+.[0-9]+.[0-9]+-*"]
    assert release["permissions"] == {"contents": "read"}


def test_pypi_is_trusted_publishing_without_a_stored_token() -> None:
    release = _load("release.yml")
    job = release["jobs"]["pypi"]
    assert job["environment"]["name"] == "pypi"
    assert job["permissions"] == {"id-token": "write"}
    publish = [s for s in job["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi")]
    assert len(publish) == 1
    assert not publish[0].get("with"), "no password/token: PyPI trusts the OIDC token"
    assert "secrets." not in (REPO / ".github/workflows/release.yml").read_text().replace(
        "secrets.GITHUB_TOKEN", ""
    )
    # Only after the tests and the artefact checks.
    assert "dist" in job["needs"]
    assert release["jobs"]["dist"]["needs"] == "test"


def test_image_is_multi_arch_with_sbom_and_provenance() -> None:
    release = _load("release.yml")
    assert release["env"]["IMAGE"] == "ghcr.io/antonsoo/trainspotter"
    build = next(
        s for _, s in _steps(release) if s.get("uses", "").startswith("docker/build-push-action@")
    )
    options = build["with"]
    assert options["platforms"] == "linux/amd64,linux/arm64"
    assert options["push"] is True
    assert options["sbom"] is True
    assert options["provenance"] == "mode=max"
    meta = next(
        s for _, s in _steps(release) if s.get("uses", "").startswith("docker/metadata-action@")
    )
    # action.yml runs ghcr.io/...:X, :X.Y, :X.Y.Z or :sha-<40 hex> for an Action used at
    # vX, vX.Y, vX.Y.Z or a commit SHA: the release must push each of those tags.
    assert meta["with"]["tags"].split() == [
        "type=semver,pattern={{version}}",
        "type=semver,pattern={{major}}.{{minor}}",
        "type=semver,pattern={{major}}",
        "type=sha,format=long",
    ]
    action = (REPO / "action.yml").read_text(encoding="utf-8")
    assert 'version="sha-$ACTION_REF"' in action
    assert "^v([0-9]+(\\.[0-9]+){0,2})$" in action


def test_release_moves_the_major_tag_and_publishes_the_gallery() -> None:
    release = _load("release.yml")
    jobs = release["jobs"]
    assert jobs["major-tag"]["permissions"] == {"contents": "write"}
    assert set(jobs["major-tag"]["needs"]) == {"pypi", "image"}
    assert jobs["pages"]["uses"] == "./.github/workflows/pages.yml"
    pages = _load("pages.yml")
    assert "workflow_call" in pages[True]
    runs = [s.get("run", "") for _, s in _steps(pages)]
    assert any(r.startswith("make site") for r in runs)


def test_changelog_has_a_section_for_this_version_and_unreleased() -> None:
    """release.yml takes the GitHub release's notes from this section; it fails without."""
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.MULTILINE)
    assert headings[:2] == ["Unreleased", trainspotter.__version__]
    assert f"[{trainspotter.__version__}]: https://github.com/antonsoo/trainspotter/" in changelog


def test_action_metadata_is_marketplace_ready() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert action["branding"]["icon"] and action["branding"]["color"]
    assert len(action["description"]) < 125, "the Marketplace refuses 125 characters or more"
