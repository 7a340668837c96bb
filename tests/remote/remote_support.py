"""Support for the remote and sweep tests: servers started and stopped by PID, a bucket
written with the store's own client, and comparing analyses made two ways (a local log
and its remote copy, or the processes engine and the Dask engine) by each log's full JSON
report.

(Here rather than in conftest.py: `from conftest import ...` can find another folder's
conftest module.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from trainspotter.analysis import Analysis
from trainspotter.report.json_report import analysis_dict


def reports_by_path(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """Source path -> that log's JSON report (as `--output json` writes it) without its
    path; in the analyses' order."""
    out: dict[str, Any] = {}
    for analysis in analyses:
        log = json.loads(json.dumps(analysis_dict(analysis), allow_nan=False))
        out[log["run"].pop("source_path")] = log
    return out


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


@contextlib.contextmanager
def serving(command: Callable[[int], list[str]], probe: str, folder: Path) -> Iterator[str]:
    """A server on a free loopback port (`command(port)` starts it), answering at
    `probe`, its output in `folder/server.log`: its endpoint URL while the block runs,
    then stopped by its PID."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    process = start_server(command(port), endpoint + probe, folder / "server.log")
    try:
        yield endpoint
    finally:
        stop(process)


class Bucket:
    """One fresh bucket on a test server, written with the store's own client (not the
    code under test): boto3 for S3 (`S3Bucket`), google-cloud-storage for GCS
    (`GcsBucket`)."""

    scheme = ""
    serves_ranges = True
    """Whether a range read gets just those bytes (else the server sends the whole object)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def url(self, key: str) -> str:
        return f"{self.scheme}://{self.name}/{key}"

    def put(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def put_tree(self, prefix: str, folder: Path) -> list[str]:
        """Upload every file under `folder` to `prefix/<relative path>`."""
        keys = []
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                key = f"{prefix}/{file.relative_to(folder).as_posix()}"
                self.put(key, file.read_bytes())
                keys.append(key)
        return keys


class S3Bucket(Bucket):
    scheme = "s3"

    def __init__(self, endpoint: str, name: str) -> None:
        import boto3

        super().__init__(name)
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        self.client.create_bucket(Bucket=name)

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.name, Key=key, Body=data)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.name, Key=key)


class GcsBucket(Bucket):
    scheme = "gs"

    def __init__(self, endpoint: str, name: str) -> None:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        super().__init__(name)
        client = storage.Client(
            project="test",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": endpoint},
        )
        self.bucket = client.create_bucket(name)

    def put(self, key: str, data: bytes) -> None:
        self.bucket.blob(key).upload_from_string(data)

    def delete(self, key: str) -> None:
        self.bucket.blob(key).delete()


class HfRepo(Bucket):
    """A dataset repository on a local Hugging Face Hub mirror (olah), held as the git
    repository it serves: each put or delete is a commit, as a push to the Hub is. Named
    with its revision (`@main`): olah answers the revision-less repository lookup from the
    upstream Hub only, which these tests never reach."""

    scheme = "hf"
    serves_ranges = False  # olah sends a local repository's file whole, whatever the Range

    def __init__(self, mirrors: Path, repo: str) -> None:
        super().__init__(f"datasets/org/{repo}@main")
        self.folder = mirrors / "datasets" / "org" / repo
        self.folder.mkdir(parents=True)
        self._git("init", "--quiet", "--initial-branch=main")
        self._git("commit", "--quiet", "--allow-empty", "--message=created")

    def _git(self, *args: str) -> None:
        identity = ("-c", "user.name=test", "-c", "user.email=test@localhost")
        subprocess.run(["git", *identity, *args], cwd=self.folder, check=True)

    def put(self, key: str, data: bytes) -> None:
        target = self.folder / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self._git("add", "--", key)
        self._git("commit", "--quiet", f"--message=put {key}")

    def delete(self, key: str) -> None:
        self._git("rm", "--quiet", "--", key)
        self._git("commit", "--quiet", f"--message=delete {key}")
