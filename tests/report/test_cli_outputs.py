"""Several reports from one `analyze` run, rendered from the same analyses as the terminal."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_fixtures import sarif_validator

from trainspotter.cli import main

REPO = Path(__file__).resolve().parents[2]
DIVERGENCE = REPO / "examples" / "divergence" / "trainer_state.json"


@pytest.mark.skipif(not DIVERGENCE.exists(), reason="examples/divergence not generated yet")
def test_every_output_in_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {
        fmt: tmp_path / f"report.{fmt}"
        for fmt in ("html", "json", "markdown", "github", "sarif", "codequality", "junit")
    }
    argv = ["analyze", str(DIVERGENCE)]
    for fmt, path in files.items():
        argv += [f"--{fmt}", str(path)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1, err  # the divergent run fails the default gate
    assert out.startswith("FAILED") and "\x1b[" not in out  # the terminal report, on stdout
    findings = json.loads(files["json"].read_text())["findings"]
    assert findings
    html = files["html"].read_text()
    assert all(f'id="log1-{f["id"]}"' in html for f in findings)
    sarif = json.loads(files["sarif"].read_text())
    sarif_validator().validate(sarif)
    assert len(sarif["runs"][0]["results"]) == len(findings)
    active = [f for f in findings if f["suppressed"] is None]
    assert len(json.loads(files["codequality"].read_text())) == len(active)
    assert len(files["github"].read_text().splitlines()) <= 31
    assert files["markdown"].read_text().startswith("## trainspotter:")
    ET.fromstring(files["junit"].read_bytes())


def test_extra_output_may_not_overwrite_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{i},{1.0 / (i + 1)}\n" for i in range(50)))
    assert main(["analyze", str(log), "--html", str(log)]) == 2
    assert "would overwrite an input" in capsys.readouterr().err
