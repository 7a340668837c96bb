"""`analyze`, `gate` and `watch` on logs in real object stores on this machine (S3: moto in
server mode; GCS: gcp-storage-emulator; both started by conftest.py), each test once per
store, compared with the same commands on the same files on disk."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from remote_support import Bucket, GcsBucket, HfRepo, reports_by_path

from trainspotter.batch import analyze_paths
from trainspotter.cli import main
from trainspotter.config import Config
from trainspotter.errors import InputError
from trainspotter.gate import GateOptions, run_gate
from trainspotter.remote import mirror
from trainspotter.watch import Watcher, WatchOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


# The sweep: real example runs of four formats, a Hugging Face output folder with two
# checkpoint copies of its log, a file no reader knows, and model weights.
SWEEP = {
    "runs/divergence/trainer_state.json": "divergence/trainer_state.json",
    "runs/healthy/metrics.csv": "healthy/metrics.csv",
    "runs/spike/metrics.csv": "loss_spike/metrics.csv",
    "runs/tb": "divergence/tensorboard",
    "runs/lightning": "lightning_input_spike/lightning_logs",
    "runs/hf/output": "hf_trainer/output",
}


def _sweep_tree(folder: Path) -> Path:
    for target, source in SWEEP.items():
        _copy(EXAMPLES / source, folder / target)
    (folder / "runs/hf/output/checkpoint-400/model.safetensors").write_bytes(bytes(range(256)))
    (folder / "runs/notes.bin").write_bytes(b"\x00\x01\x02 not a log")
    return folder


def test_analyze_reads_a_log_in_a_bucket_as_the_same_file_on_disk(
    bucket: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = EXAMPLES / "divergence/trainer_state.json"
    bucket.put("runs/divergence/trainer_state.json", local.read_bytes())
    url = bucket.url("runs/divergence/trainer_state.json")

    remote = analyze_paths([url], Config(), jobs=1)
    on_disk = analyze_paths([str(local)], Config(), jobs=1)

    assert [a.run.source_path for a in remote] == [url]
    assert list(reports_by_path(remote).values()) == list(reports_by_path(on_disk).values())
    assert main(["analyze", url, "--output", "json", "--out", str(tmp_path / "r.json")]) == 1
    assert f'"source_path": "{url}"' in (tmp_path / "r.json").read_text()


def test_gate_sweeps_a_glob_over_a_bucket_as_over_the_same_folder(
    bucket: Bucket, tmp_path: Path
) -> None:
    tree = _sweep_tree(tmp_path / "local")
    bucket.put_tree("exp", tree)
    prefix = bucket.url("exp/")

    remote = run_gate(
        GateOptions(patterns=(prefix + "runs/**",), base=tmp_path, jobs=1),
        io.StringIO(),
        io.StringIO(),
    )
    local = run_gate(
        GateOptions(patterns=("runs/**",), base=tree, report_dir=tmp_path / "local-report", jobs=1),
        io.StringIO(),
        io.StringIO(),
    )

    assert remote.exit_code == local.exit_code == 1
    assert remote.failures == local.failures == []
    remote_reports = reports_by_path(remote.analyses)
    assert list(remote_reports) == [prefix + p for p in reports_by_path(local.analyses)]
    assert len(remote_reports) == 6  # the checkpoint copies are one log, the newest
    assert list(remote_reports.values()) == list(reports_by_path(local.analyses).values())
    assert sorted(
        (prefix + s.display, s.reason.replace(" in ", " in " + prefix)) for s in local.skipped
    ) == sorted((s.display, s.reason) for s in remote.skipped)
    assert prefix + "runs/notes.bin" in [s.display for s in remote.skipped]
    # The weights under a matched folder were never copied out of the bucket.
    staged = mirror().root / bucket.scheme / bucket.name / "exp/runs/hf/output/checkpoint-400"
    assert (staged / "trainer_state.json").is_file()
    assert not (staged / "model.safetensors").exists()


def test_watch_follows_a_log_that_grows_in_the_bucket(bucket: Bucket) -> None:
    local = EXAMPLES / "loss_spike/metrics.csv"
    lines = local.read_bytes().splitlines(keepends=True)
    key = "live/metrics.csv"
    url = bucket.url(key)
    out, err = io.StringIO(), io.StringIO()
    watcher = Watcher(WatchOptions(patterns=(url,), config=Config()), out, err)

    watcher.poll()
    assert watcher.logs == {}  # nothing there yet: waited for, not an error
    bucket.put(key, b"".join(lines[:100]))
    watcher.poll()
    (log,) = watcher.logs.values()
    staged = log.target.path
    inode = staged.stat().st_ino
    first = log.points
    assert first == 99  # the header and 99 rows
    bucket.put(key, b"".join(lines[:250]))  # the object is rewritten longer, as a sync does
    watcher.poll()
    assert log.points == 249
    if bucket.serves_ranges:
        assert staged.stat().st_ino == inode  # the new bytes were appended to the copy
        assert "replaced or truncated" not in err.getvalue()
    else:
        # huggingface_hub cut the whole file the mirror sent to the range's length, from
        # its start: not the bytes before the old end, so the object was copied whole.
        assert staged.stat().st_ino != inode
    bucket.put(key, b"".join(lines))
    watcher.finish()

    assert log.display == url
    final = analyze_paths([str(local)], Config(), jobs=1)
    assert list(reports_by_path(watcher.analyses()).values()) != []
    watched = reports_by_path(watcher.analyses())[url]
    expected = next(iter(reports_by_path(final).values()))
    assert watched["findings"] == expected["findings"]


def test_watch_reads_a_rewritten_object_again(bucket: Bucket) -> None:
    lines = (EXAMPLES / "healthy/metrics.csv").read_bytes().splitlines(keepends=True)
    url = bucket.url("live/metrics.csv")
    bucket.put("live/metrics.csv", b"".join(lines[:200]))
    err = io.StringIO()
    watcher = Watcher(WatchOptions(patterns=(url,), config=Config()), io.StringIO(), err)
    watcher.poll()
    (log,) = watcher.logs.values()
    assert log.points == 199
    # A new run wrote the same key: shorter, with other values.
    bucket.put("live/metrics.csv", b"".join([lines[0], *lines[1:150][::-1]]))
    watcher.poll()
    assert "replaced or truncated" in err.getvalue()
    assert log.points == 149


def test_watch_drops_a_log_deleted_from_the_bucket(bucket: Bucket) -> None:
    data = (EXAMPLES / "healthy/metrics.csv").read_bytes()
    bucket.put("a/metrics.csv", data)
    bucket.put("b/metrics.csv", data)
    url = bucket.url("*/metrics.csv")
    watcher = Watcher(WatchOptions(patterns=(url,), config=Config()), io.StringIO(), io.StringIO())
    watcher.poll()
    assert sorted(log.display for log in watcher.logs.values()) == [
        bucket.url("a/metrics.csv"),
        bucket.url("b/metrics.csv"),
    ]
    bucket.delete("b/metrics.csv")
    assert [t.display for t in watcher._targets()] == [bucket.url("a/metrics.csv")]


def test_a_missing_object_or_bucket_is_the_one_line_error(
    bucket: Bucket, capsys: pytest.CaptureFixture[str]
) -> None:
    url = bucket.url("no/such/trainer_state.json")
    assert main(["analyze", url]) == 2
    assert capsys.readouterr().err == f"trainspotter: error: {url}: no such file or folder\n"
    assert main(["analyze", bucket.url("no/*.csv")]) == 2
    assert capsys.readouterr().err.endswith(": matched no training log\n")
    no_bucket = f"{bucket.scheme}://{bucket.name}-missing/runs/metrics.csv"
    assert main(["analyze", no_bucket]) == 2
    assert capsys.readouterr().err == f"trainspotter: error: {no_bucket}: no such file or folder\n"
    assert main(["watch", no_bucket, "--interval", "0.01", "--idle-exit", "0"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own: a user's environment, and no file system object
    fsspec cached for an earlier test (with the credentials it found then)."""
    command = [sys.executable, "-m", "trainspotter", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def _environment_without(*prefixes: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def test_s3_without_credentials_is_the_one_line_error(s3_bucket: Bucket, tmp_path: Path) -> None:
    s3_bucket.put("run/metrics.csv", (EXAMPLES / "healthy/metrics.csv").read_bytes())
    env = _environment_without("AWS_")
    env.update(
        AWS_ENDPOINT_URL_S3=os.environ["AWS_ENDPOINT_URL_S3"],
        AWS_DEFAULT_REGION="us-east-1",
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_EC2_METADATA_DISABLED="true",  # botocore would ask the instance metadata address
    )
    url = s3_bucket.url("run/metrics.csv")
    done = _cli(["analyze", url], env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"trainspotter: error: {url}: cannot read: NoCredentialsError: Unable to locate "
        "credentials (check the credentials in the environment)\n"
    )
    report = tmp_path / "report"
    done = _cli(["gate", s3_bucket.url("*/*.csv"), "--report-dir", str(report)], env)
    assert done.returncode == 2
    assert "NoCredentialsError" in done.stderr
    assert "Traceback" not in done.stderr


def test_gcs_credentials_from_the_environment(gcs_env: str, tmp_path: Path) -> None:
    """As a user sets them: `FSSPEC_GS_TOKEN` (fsspec's variable for gcsfs's `token`):
    `anon` reads the emulator's bucket; a token file that is not one is a one-line error."""
    bucket = GcsBucket(gcs_env, "credentials")
    local = EXAMPLES / "healthy/metrics.csv"
    bucket.put("run/metrics.csv", local.read_bytes())
    url = bucket.url("run/metrics.csv")
    env = _environment_without("FSSPEC_", "GOOGLE_", "CLOUDSDK_")
    env.update(GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false", FSSPEC_GS_TOKEN="anon")
    report = tmp_path / "r.json"
    done = _cli(["analyze", url, "--output", "json", "--out", str(report)], env)
    assert done.returncode == main(["analyze", str(local)]), done.stderr
    assert f'"source_path": "{url}"' in report.read_text()
    bad_token = tmp_path / "key.json"
    bad_token.write_text("not a key\n")
    env.update(FSSPEC_GS_TOKEN=str(bad_token))
    done = _cli(["analyze", url], env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"trainspotter: error: {url}: cannot connect: JSONDecodeError: ")
    assert done.stderr.endswith(" (check the credentials in the environment)\n")
    assert done.stderr.count("\n") == 1


def _no_google_credentials(env: dict[str, str], home: Path) -> dict[str, str]:
    """A user with no Google credentials anywhere gcsfs looks: no variables, an empty home
    (no gcloud configuration, no gcsfs token cache) and a metadata server that refuses
    (a closed loopback port, where google-auth and gcsfs would ask a Google machine's)."""
    env.update(
        HOME=str(home),
        CLOUDSDK_CONFIG=str(home / "gcloud"),
        GCE_METADATA_HOST="127.0.0.1:9",
        GCE_METADATA_IP="127.0.0.1:9",
        NO_GCE_CHECK="true",
        GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false",
    )
    return env


def test_gcs_without_credentials_reads_a_public_bucket_anonymously(
    gcs_env: str, tmp_path: Path
) -> None:
    """No credentials at all: gcsfs goes on anonymously, which reads a bucket open to
    anyone (the emulator's are)."""
    bucket = GcsBucket(gcs_env, "public")
    local = EXAMPLES / "healthy/metrics.csv"
    bucket.put("run/metrics.csv", local.read_bytes())
    env = _no_google_credentials(_environment_without("FSSPEC_", "GOOGLE_", "CLOUDSDK_"), tmp_path)
    report = tmp_path / "r.json"
    url = bucket.url("run/metrics.csv")
    done = _cli(["analyze", url, "--output", "json", "--out", str(report)], env)
    assert done.returncode == main(["analyze", str(local)]), done.stderr
    assert f'"source_path": "{url}"' in report.read_text()


def test_gcs_refusing_an_anonymous_caller_says_which_credentials_were_looked_for(
    gcs_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gcsfs finds no credentials and connects anonymously (what it really does, checked
    here on its file system object); a private bucket then answers 401, raised as gcsfs
    raises it (`validate_response` with GCS's body), and the one-line error says the read
    was anonymous and what was looked for. Asked for anonymous access, no such words."""
    import fsspec.config
    from gcsfs.retry import validate_response

    from trainspotter import remote

    for name in [k for k in os.environ if k.startswith(("GOOGLE_", "CLOUDSDK_", "FSSPEC_"))]:
        monkeypatch.delenv(name)
    for name, value in _no_google_credentials({}, tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(fsspec.config.conf, "gs", {})
    bucket = GcsBucket(gcs_env, "private")
    bucket.put("run/metrics.csv", (EXAMPLES / "healthy/metrics.csv").read_bytes())
    fs, _ = remote.filesystem(bucket.url("run/*.csv"))
    assert (fs.credentials.method, fs.credentials.token) == ("anon", None)
    body = (
        b'{"error": {"code": 401, "message": "Anonymous caller does not have '
        b"storage.objects.list access to the Google Cloud Storage bucket. Permission "
        b"'storage.objects.list' denied on resource (or it may not exist).\"}}"
    )
    monkeypatch.setattr(fs, "find", lambda *a, **k: validate_response(401, body, "b/private/o"))
    monkeypatch.setattr(fs, "info", lambda *a, **k: {"type": "directory"})
    with pytest.raises(InputError) as caught:
        remote.Mirror(tmp_path / "mirror").stage(bucket.url("run/*.csv"))
    problem = caught.value.problem
    assert problem.startswith("cannot read: HttpError: Anonymous caller does not have")
    assert problem.endswith(
        "; no Google credentials were found, so gcsfs read the bucket anonymously (it looked "
        f"for {remote.GCS_LOOKED_FOR}; FSSPEC_GS_TOKEN can name a token file)"
    )
    monkeypatch.setitem(fsspec.config.conf, "gs", {"token": "anon"})
    asked, _ = remote.filesystem(bucket.url("run/*.csv"))
    assert (asked.credentials.method, asked.credentials.token) == ("anon", "anon")
    error = OSError("Forbidden: b/private/o")
    assert remote._anonymous_fallback(asked, error) == ""
    assert "no Google credentials" in remote._anonymous_fallback(fs, error)
    assert remote._anonymous_fallback(fs, FileNotFoundError("b/private/o")) == ""


def test_the_gate_reports_a_failed_listing_and_checks_the_other_logs(
    s3_bucket: Bucket, tmp_path: Path
) -> None:
    _copy(EXAMPLES / "healthy/metrics.csv", tmp_path / "metrics.csv")
    url = "s3://Not_A_Bucket!/runs/*.csv"  # the S3 client refuses the name
    result = run_gate(
        GateOptions(patterns=("metrics.csv", url), base=tmp_path, jobs=1),
        io.StringIO(),
        io.StringIO(),
    )
    assert result.exit_code == 2
    assert [a.run.source_path for a in result.analyses] == ["metrics.csv"]
    ((display, reason, is_pattern),) = [
        (f.display, f.reason, f.is_pattern) for f in result.failures
    ]
    assert (display, is_pattern) == (url, True)
    assert reason.startswith("cannot read: ParamValidationError: ")
    assert "\n" not in reason


def test_hf_endpoint_from_the_environment(hub_env: Path, tmp_path: Path) -> None:
    """As a user points huggingface_hub at another Hub: `HF_ENDPOINT` alone."""
    repo = HfRepo(hub_env, "endpoint")
    local = EXAMPLES / "loss_spike/trainer_state.json"
    repo.put("run/trainer_state.json", local.read_bytes())
    url = repo.url("run/trainer_state.json")
    report = tmp_path / "r.json"
    env = _environment_without("FSSPEC_")
    done = _cli(["analyze", url, "--output", "json", "--out", str(report)], env)
    assert done.returncode == main(["analyze", str(local)]), done.stderr
    assert f'"source_path": "{url}"' in report.read_text()
