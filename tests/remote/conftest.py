"""Fixtures for the remote-log and sweep tests: a real S3 server (moto in server mode, a
child process on a free loopback port, stopped by its PID) and the environment that
points the S3 back end at it, as a user's `AWS_*` variables would.

The servers need the `remote` extra and the dev extra's `moto[server]` (`make test`
installs both); without them these tests are skipped, saying which extra is missing.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator

import pytest
from remote_support import Bucket, free_port, start_server, stop


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto S3 server for the session: its endpoint URL."""
    pytest.importorskip("moto.server", reason="needs moto[server] (the dev extra)")
    pytest.importorskip("s3fs", reason="needs s3fs (the 'remote' extra)")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    process = start_server(command, endpoint + "/", log)
    try:
        yield endpoint
    finally:
        stop(process)


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Credentials and the endpoint in the environment, where botocore looks for them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    return s3_endpoint


@pytest.fixture
def bucket(s3_env: str, request: pytest.FixtureRequest) -> Bucket:
    """A bucket of this test's own (named from the test's id: 3-63 letters and digits)."""
    digest = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16]
    return Bucket(s3_env, f"t{digest}")
