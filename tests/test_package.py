"""The release artefacts, checked as release.yml checks them, offline.

`python -m build` (sdist, then the wheel built from that sdist, so a file missing from the
sdist fails here), `twine check`, the wheel's contents, then scripts/smoke-wheel.sh (the
release workflow's own smoke step): the wheel alone in a fresh venv, outside the source
tree, runs `trainspotter --version` and analyses two examples. Offline, the build uses the
dev venv's setuptools (--no-isolation) and the smoke venv takes numpy/pandas/pyyaml from
the dev venv's site-packages; release.yml does both from PyPI.
"""

from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import trainspotter

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "build", "dist",
    "site", "examples", "tests", "benchmarks", "docs",
)  # fmt: skip


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist and wheel of a copy of the source tree (the build writes egg-info beside it)."""
    root = tmp_path_factory.mktemp("release")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=_NOT_SOURCE)
    out = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, f"{pattern}: {found}"
    return found[0]


def test_build_makes_one_sdist_and_one_wheel_of_this_version(dist: Path) -> None:
    version = trainspotter.__version__
    assert _one(dist, "*.tar.gz").name == f"trainspotter-{version}.tar.gz"
    assert _one(dist, "*.whl").name == f"trainspotter-{version}-py3-none-any.whl"


def test_twine_check_passes(dist: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.count("PASSED") == 2, ran.stdout


def test_wheel_holds_the_package_its_schemas_and_the_command(dist: Path) -> None:
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        names = set(wheel.namelist())
        info = f"trainspotter-{trainspotter.__version__}.dist-info"
        metadata = email.parser.Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert {
        "trainspotter/schemas/report.schema.json",
        "trainspotter/schemas/config.schema.json",
    } <= names
    assert not any(n.startswith(("tests/", "examples/")) for n in names), "tests shipped"
    assert metadata["Version"] == trainspotter.__version__
    assert metadata["License-Expression"] == "MIT"
    assert "tensorboard" in metadata.get_all("Provides-Extra", [])
    assert "trainspotter = trainspotter.cli:main" in entry_points


def test_wheel_in_a_fresh_venv_reports_its_version_and_analyses_examples(dist: Path) -> None:
    deps = sysconfig.get_paths()["purelib"]
    ran = subprocess.run(
        ["bash", str(REPO / "scripts" / "smoke-wheel.sh"), str(_one(dist, "*.whl")),
         trainspotter.__version__],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TRAINSPOTTER_SMOKE_DEPS": deps,
             "PYTHON": sys.executable},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"smoke-wheel: trainspotter {trainspotter.__version__}" in ran.stdout
    assert "smoke-wheel: divergence.json -> " in ran.stdout


def test_smoke_script_rejects_a_wrong_version(dist: Path) -> None:
    """The release's version check can fail (a tag that does not match the package)."""
    ran = subprocess.run(
        ["bash", str(REPO / "scripts" / "smoke-wheel.sh"), str(_one(dist, "*.whl")), "0.0.0"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TRAINSPOTTER_SMOKE_DEPS": sysconfig.get_paths()["purelib"],
             "PYTHON": sys.executable},
    )  # fmt: skip
    assert ran.returncode == 1
    assert "expected 'trainspotter 0.0.0'" in ran.stderr
