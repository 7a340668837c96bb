"""Fixtures for the remote-log and sweep tests: a real S3 server (moto in server mode, a
child process on a free loopback port, stopped by its PID) and the environment that
points the S3 back end at it, as a user's `AWS_*` variables would.

The servers need the `remote` extra and the dev extra's `moto[server]` (`make test`
installs both); without them these tests are skipped, saying which extra is missing.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 60.0
"""Seconds a server may take to answer after it was started (a loaded CI machine)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_answering(url: str, process: subprocess.Popen[bytes]) -> None:
    """Poll `url` until the server answers (any HTTP status), bounded in time."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before answering")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"no answer from {url} within {START_TIMEOUT:.0f} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server we started, by its PID: SIGTERM, then SIGKILL after 10 s."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def start_server(command: list[str], url: str, log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("wb")
    process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    handle.close()
    try:
        wait_until_answering(url, process)
    except RuntimeError:
        stop(process)
        raise
    return process


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


class Bucket:
    """One fresh bucket on the test server, written with boto3 (not the code under test)."""

    def __init__(self, endpoint: str, name: str) -> None:
        import boto3

        self.name = name
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        self.client.create_bucket(Bucket=name)

    def url(self, key: str) -> str:
        return f"s3://{self.name}/{key}"

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.name, Key=key, Body=data)

    def put_tree(self, prefix: str, folder: Path) -> list[str]:
        """Upload every file under `folder` to `prefix/<relative path>`."""
        keys = []
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                key = f"{prefix}/{file.relative_to(folder).as_posix()}"
                self.put(key, file.read_bytes())
                keys.append(key)
        return keys

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.name, Key=key)


@pytest.fixture
def bucket(s3_env: str, request: pytest.FixtureRequest) -> Bucket:
    """A bucket of this test's own (named from the test's id: 3-63 letters and digits)."""
    digest = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16]
    return Bucket(s3_env, f"t{digest}")
