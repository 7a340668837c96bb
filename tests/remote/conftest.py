"""Fixtures for the remote-log and sweep tests: real stores on loopback ports, each a
child process stopped by its PID (moto in server mode for S3, gcp-storage-emulator for
GCS, the olah Hugging Face Hub mirror serving local git repositories for hf://), and the
environment that points each back end at its server, as a user's variables would.

The servers need the `remote` extra and the dev extra's `moto[server]`,
`gcp-storage-emulator` and `olah` (`make test` installs them); without them these tests
are skipped, saying which extra is missing.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from remote_support import Bucket, GcsBucket, HfRepo, S3Bucket, serving


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto S3 server for the session: its endpoint URL."""
    pytest.importorskip("moto.server", reason="needs moto[server] (the dev extra)")
    pytest.importorskip("s3fs", reason="needs s3fs (the 'remote' extra)")

    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]

    with serving(command, "/", tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


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


# gcsfs's default file system (its "experimental" zonal and hierarchical bucket support,
# on unless this variable says false when gcsfs is first imported) asks Google's gRPC
# control-plane API for each bucket's layout; an emulator has no such API, so each call
# waits out a 30-60 s timeout before falling back to the JSON API that the plain
# GCSFileSystem uses for an ordinary bucket. The tests use that plain one.
GCSFS_LAYOUT_PROBE = "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"


@pytest.fixture(scope="session")
def gcs_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gcp-storage-emulator GCS server (in memory) for the session: its endpoint URL."""
    pytest.importorskip("gcp_storage_emulator", reason="needs gcp-storage-emulator (dev extra)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(GCSFS_LAYOUT_PROBE, "false")
        gcsfs = pytest.importorskip("gcsfs", reason="needs gcsfs (the 'remote' extra)")
    if gcsfs.GCSFileSystem is not gcsfs.core.GCSFileSystem:
        pytest.fail(f"gcsfs was imported before {GCSFS_LAYOUT_PROBE}=false was set")

    def command(port: int) -> list[str]:
        return [
            sys.executable,
            *("-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1", "--port", str(port)),
            *("--in-memory", "--quiet"),
        ]

    with serving(command, "/storage/v1/b", tmp_path_factory.mktemp("gcs")) as endpoint:
        yield endpoint


@pytest.fixture
def gcs_env(gcs_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The emulator where gcsfs looks for one (`STORAGE_EMULATOR_HOST`) and anonymous
    access (`token='anon'`, as `FSSPEC_GS_TOKEN=anon` sets it when fsspec is imported): no
    Google credentials are looked for, so nothing leaves the machine."""
    import fsspec.config

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setitem(fsspec.config.conf, "gs", {"token": "anon"})
    return gcs_endpoint


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An olah Hub mirror for the session, offline (its upstream is a closed loopback
    port, never the Hub): its endpoint URL and the folder of git repositories it serves
    as `<type>/<org>/<repo>`."""
    pytest.importorskip("olah", reason="needs olah (the dev extra)")
    pytest.importorskip("huggingface_hub", reason="needs huggingface_hub (the 'remote' extra)")
    folder = tmp_path_factory.mktemp("hub")
    config = folder / "olah.toml"

    def command(port: int) -> list[str]:
        config.write_text(
            "[basic]\n"
            f'host = "127.0.0.1"\nport = {port}\n'
            f'mirror-netloc = "127.0.0.1:{port}"\nmirror-lfs-netloc = "127.0.0.1:{port}"\n'
            'hf-scheme = "http"\nhf-netloc = "127.0.0.1:9"\nhf-lfs-netloc = "127.0.0.1:9"\n'
            f'repos-path = "{folder / "cache"}"\nmirrors-path = ["{folder / "mirrors"}"]\n'
            "[accessibility]\noffline = true\n"
        )
        logs = str(folder / "logs")
        return [sys.executable, "-m", "olah.server", "--config", str(config), "--log-path", logs]

    with serving(command, "/api/whoami-v2", folder) as endpoint:
        yield endpoint, folder / "mirrors"


@pytest.fixture
def hub_env(hub: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """huggingface_hub pointed at the mirror (`HF_ENDPOINT`; in this process also fsspec's
    `endpoint` for `hf`, as huggingface_hub reads the variable once, when imported), with
    no token. The folder its repositories are made in."""
    import fsspec.config

    endpoint, mirrors = hub
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setitem(fsspec.config.conf, "hf", {"endpoint": endpoint, "token": False})
    return mirrors


def _bucket_name(request: pytest.FixtureRequest) -> str:
    """A bucket name of this test's own (from the test's id: 3-63 letters and digits)."""
    return "t" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16]


@pytest.fixture
def s3_bucket(s3_env: str, request: pytest.FixtureRequest) -> Bucket:
    return S3Bucket(s3_env, _bucket_name(request))


@pytest.fixture(params=["s3", "gs", "hf"])
def bucket(request: pytest.FixtureRequest) -> Bucket:
    """A fresh bucket in each store: the test runs on S3, on GCS and on a Hub repository."""
    if request.param == "s3":
        return S3Bucket(request.getfixturevalue("s3_env"), _bucket_name(request))
    if request.param == "gs":
        return GcsBucket(request.getfixturevalue("gcs_env"), _bucket_name(request))
    return HfRepo(request.getfixturevalue("hub_env"), _bucket_name(request))
