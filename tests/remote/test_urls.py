"""URLs other than S3, and what a user sees when URLs cannot be read: an http(s) log from
a real local web server (Python's http.server, started and stopped by PID), the one-line
errors, and that the CLI imports none of the remote or Dask libraries until it needs them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from remote_support import reports_by_path, serving

from trainspotter.batch import analyze_paths
from trainspotter.cli import main
from trainspotter.config import Config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def web_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    pytest.importorskip("aiohttp", reason="needs aiohttp (the 'remote' extra)")
    folder = tmp_path / "site"
    folder.mkdir()

    def command(port: int) -> list[str]:
        return [
            sys.executable,
            *("-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)),
        ]

    with serving(command, "/", tmp_path) as base:
        yield base, folder


def test_an_http_log_is_read_and_named_without_its_query_string(
    web_root: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, folder = web_root
    local = EXAMPLES / "loss_spike/trainer_state.json"
    (folder / "trainer_state.json").write_bytes(local.read_bytes())
    signed = f"{base}/trainer_state.json?X-Signature=secret-token"

    remote = analyze_paths([signed], Config(), jobs=1)

    assert [a.run.source_path for a in remote] == [f"{base}/trainer_state.json"]
    on_disk = analyze_paths([str(local)], Config(), jobs=1)
    assert list(reports_by_path(remote).values()) == list(reports_by_path(on_disk).values())
    main(["analyze", signed, "--output", "json"])
    assert "secret-token" not in capsys.readouterr().out
    assert main(["analyze", f"{base}/missing.csv"]) == 2
    assert capsys.readouterr().err == (
        f"trainspotter: error: {base}/missing.csv: no such file or folder\n"
    )


def test_without_fsspec_a_url_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # the gate's report folder, were it written
    for name in ("fsspec", "fsspec.core"):
        monkeypatch.setitem(sys.modules, name, None)  # `import fsspec` raises ImportError
    assert main(["analyze", "s3://bucket/run/metrics.csv"]) == 2
    assert capsys.readouterr().err == (
        "trainspotter: error: s3://bucket/run/metrics.csv: reading URLs needs the 'remote' "
        "extra: pip install 'trainspotter[remote]'\n"
    )
    # The gate stops at it too, rather than listing every URL pattern as unchecked.
    assert main(["gate", "s3://bucket/a/*.csv", "s3://bucket/b/*.csv", "--outputs", "json"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "s3://bucket/a/*.csv: reading URLs needs the 'remote' extra: "
        "pip install 'trainspotter[remote]'\n"
    )


@pytest.mark.parametrize(
    ("url", "package"),
    [
        ("s3://bucket/run/metrics.csv", "s3fs"),
        ("gs://bucket/run/metrics.csv", "gcsfs"),
        ("hf://datasets/org/repo/metrics.csv", "huggingface_hub"),
        ("https://example.invalid/metrics.csv", "aiohttp"),
    ],
)
def test_without_the_scheme_s_back_end_a_url_is_one_line_naming_the_extra(
    url: str, package: str, tmp_path: Path
) -> None:
    """fsspec installed, the scheme's package not: in a fresh process (fsspec keeps a back
    end's class once it was imported), with the package made unimportable."""
    pytest.importorskip("fsspec", reason="needs fsspec (the 'remote' extra)")
    probe = (
        f"import sys; sys.modules[{package!r}] = None; from trainspotter.cli import main; "
        f"sys.exit(main(['analyze', {url!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert (done.returncode, done.stdout) == (2, "")
    scheme = url.split(":")[0]
    assert done.stderr == (
        f"trainspotter: error: {url}: {scheme}:// URLs need {package}, which is not "
        "installed: pip install 'trainspotter[remote]'\n"
    )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("nosuchscheme://host/x.csv", "unsupported URL: Protocol not known: nosuchscheme"),
        ("s3://*/runs/x.csv", "a URL pattern must name its bucket or host, not glob it"),
        ("s3://bucket/../x.csv", "not a usable URL (it needs a bucket or host and no '.' or '..')"),
    ],
)
def test_a_url_that_cannot_be_used_is_the_one_line_error(
    url: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("fsspec", reason="needs fsspec (the 'remote' extra)")
    assert main(["analyze", url]) == 2
    assert capsys.readouterr().err == f"trainspotter: error: {url}: {problem}\n"


def test_the_cli_imports_no_remote_or_dask_library_until_a_url_or_engine_needs_it() -> None:
    """The CLI's start-up time must not grow with the optional extras."""
    probe = (
        "import json, sys, trainspotter.cli, trainspotter.gate, trainspotter.watch; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    heavy = ("fsspec", "s3fs", "gcsfs", "huggingface_hub", "aiohttp", "dask", "distributed")
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
