"""`make site`: every example's HTML report and an index linking each, in site/."""

from __future__ import annotations

import html.parser
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v)


def _examples() -> list[str]:
    return sorted(
        p.name
        for p in (REPO / "examples").iterdir()
        if (p / "trainer_state.json").is_file() or (p / "metrics.csv").is_file()
    )


def test_make_site_runs_the_site_script_into_site() -> None:
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "site"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")},  # under make test
    )
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1] == ".venv-run/bin/python scripts/site.py site"


def test_site_has_an_index_linking_every_example_report(tmp_path: Path) -> None:
    out = tmp_path / "site"
    ran = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "site.py"), str(out)],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    examples = _examples()
    assert len(examples) >= 12
    links = _Links()
    links.feed((out / "index.html").read_text(encoding="utf-8"))
    assert links.hrefs == [f"{name}.html" for name in examples]
    assert sorted(p.name for p in out.iterdir()) == sorted([*links.hrefs, "index.html"]), (
        "stray files in site/"
    )
    for href in links.hrefs:
        page = (out / href).read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>")
        assert "<svg" in page, f"{href} has no chart"
    divergence = (out / "divergence.html").read_text(encoding="utf-8")
    assert "examples/divergence/trainer_state.json" in divergence
    assert "examples/divergence/metrics.csv" in divergence
