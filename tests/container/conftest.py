"""Fixtures for the `container` tests: a Docker engine, the image built from the real
Dockerfile, and a workspace laid out the way GitHub mounts one.

The engine is whatever `DOCKER_HOST` (or the default socket) reaches. Without one the
tests skip with the reason, so `make test` passes on a machine without Docker; with
TRAINSPOTTER_REQUIRE_ENGINE=1 (set by `make test-container` and CI) a missing engine
is a failure instead. TRAINSPOTTER_TEST_BASE_IMAGE picks the base image passed as the
Dockerfile's BASE_IMAGE (`make test-container` passes the local debootstrap image;
default: the Dockerfile's own default). The image is built the way release.yml's
build step builds the published one (`release_build`), for this machine's platform.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from container_support import REPO, RUNNER_UID, Workspace, release_build

IMAGE_TAG = "trainspotter:container-test"
SIZE_REPORT = REPO / ".pytest_cache" / "container-image-size.txt"


def _engine() -> Any:
    try:
        import docker
    except ImportError:
        return "the `docker` package is not installed (pip install -e '.[dev]')"
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:
        host = os.environ.get("DOCKER_HOST", "the default socket")
        kind = type(exc).__name__
        return f"no Docker engine reachable at {host} ({kind}); run `make test-container`"
    return client


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """A Docker SDK client, or a skip (a failure under TRAINSPOTTER_REQUIRE_ENGINE=1)."""
    client = _engine()
    if isinstance(client, str):
        if os.environ.get("TRAINSPOTTER_REQUIRE_ENGINE") == "1":
            pytest.fail(client)
        pytest.skip(client)
    return client


@pytest.fixture(scope="session")
def image(docker_client: Any) -> Any:
    """The image built as release.yml's build step builds it (its context, Dockerfile and
    build args), for this machine's platform only; layers cached by the engine."""
    release = release_build()
    buildargs = dict(release.build_args)
    base = os.environ.get("TRAINSPOTTER_TEST_BASE_IMAGE")
    if base:
        buildargs["BASE_IMAGE"] = base
    # TRAINSPOTTER_BUILD_NETWORK=host: for an engine started without a bridge (a second
    # engine beside one that owns docker0); the build's pip still needs PyPI.
    network = os.environ.get("TRAINSPOTTER_BUILD_NETWORK") or None
    built, _logs = docker_client.images.build(
        path=str(release.context),
        dockerfile=release.dockerfile,
        tag=IMAGE_TAG,
        buildargs=buildargs,
        network_mode=network,
        rm=True,
        forcerm=True,
    )
    size_mb = built.attrs["Size"] / 1e6
    SIZE_REPORT.parent.mkdir(exist_ok=True)
    SIZE_REPORT.write_text(f"{IMAGE_TAG} on {base or 'the default base'}: {size_mb:.0f} MB\n")
    print(f"\n{IMAGE_TAG} (base {base or 'default'}): {size_mb:.0f} MB")
    return built


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """Two example runs copied into a fresh workspace, owned like a runner's checkout."""
    root = tmp_path / "workspace"
    for name in ("healthy", "divergence"):
        source = REPO / "examples" / name
        if not (source / "trainer_state.json").is_file():
            pytest.skip(f"examples/{name}/trainer_state.json is missing")
        shutil.copytree(source, root / "examples" / name)
    files = tmp_path / "file_commands"
    files.mkdir()
    (files / "step_summary").write_text("")
    (files / "output").write_text("")
    # As root (CI here), hand everything to the hosted runner's uid, like a real checkout;
    # otherwise run as ourselves.
    uid, gid = (RUNNER_UID, RUNNER_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())
    if os.getuid() == 0:
        for path in [root, files, *root.rglob("*"), *files.rglob("*")]:
            os.chown(path, uid, gid)
    yield Workspace(root, files, uid, gid)
    if os.getuid() == 0:  # files the container wrote belong to uid 1001: still ours to delete
        shutil.rmtree(root, ignore_errors=True)
