"""A multi-run W&B chart export is checked on every run it holds (issue 10 class 10): in
`analyze` and `gate` each run is a log of its own in the report, named by the run."""

from __future__ import annotations

import io
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from trainspotter.cli import main
from trainspotter.config import parse_config
from trainspotter.gate import GateOptions, run_gate
from trainspotter.readers import ReadOptions, read_runs

WILD2 = Path("/work/wild2")


def chart_export(path: Path) -> Path:
    """A chart-panel export (W&B's column layout) of two runs: `calm` decays smoothly;
    `blowup` decays, then its loss turns NaN at step 150 and stays there."""
    header = ['"Step"']
    for run in ("calm", "blowup"):
        header += [f'"{run} - train/loss"', f'"{run} - train/loss__MIN"']
        header += [f'"{run} - train/loss__MAX"']
    rows = [",".join(header)]
    for step in range(200):
        calm = 0.3 + 2.0 * math.exp(-step / 40)
        blowup = "NaN" if step >= 150 else f"{0.3 + 2.1 * math.exp(-step / 40):.6f}"
        values = [f"{calm:.6f}"] * 3 + [blowup] * 3
        rows.append(",".join([str(step), *values]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_read_runs_gives_one_run_per_run_named_by_it(tmp_path: Path) -> None:
    path = chart_export(tmp_path / "wandb_export.csv")
    runs = read_runs(path)
    assert [r.meta["run_name"] for r in runs] == ["calm", "blowup"]
    assert [r.name for r in runs] == ["calm", "blowup"]
    assert all(len(r.metrics["train/loss"]) == 200 for r in runs)
    (only,) = read_runs(path, options=ReadOptions(run_name="blowup"))
    assert only.meta["run_name"] == "blowup"


def test_analyze_checks_every_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chart_export(tmp_path / "wandb_export.csv")
    code = main(["analyze", str(path), "--output", "json", "--fail-on", "error"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # the second run's NaN fails the gate, not only the first run's curve
    names = [log["run"]["meta"]["run_name"] for log in doc["logs"]]
    assert names == ["calm", "blowup"]
    worst = {log["run"]["meta"]["run_name"]: log["summary"]["max_severity"] for log in doc["logs"]}
    assert worst["blowup"] == "error"
    assert worst["calm"] in (None, "info")


def test_analyze_with_run_reads_that_run_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = chart_export(tmp_path / "wandb_export.csv")
    code = main(["analyze", str(path), "--output", "json", "--run", "calm"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["run"]["meta"]["run_name"] == "calm"


def test_gate_checks_every_run_and_names_it(tmp_path: Path) -> None:
    chart_export(tmp_path / "logs" / "wandb_export.csv")
    config = parse_config("report:\n  outputs: [junit, summary]\n")
    out, err = io.StringIO(), io.StringIO()
    options = GateOptions(patterns=("logs/*.csv",), config=config, base=tmp_path)
    result = run_gate(options, out, err)
    assert result.exit_code == 1
    assert "2 logs checked" in out.getvalue()
    junit = next((tmp_path / "trainspotter-report").glob("*.xml"))
    suites = [s.get("name") for s in ET.parse(junit).getroot().iter("testsuite")]
    assert suites == ["logs/wandb_export.csv (run calm)", "logs/wandb_export.csv (run blowup)"]


@pytest.mark.skipif(not WILD2.is_dir(), reason="/work/wild2 is not present")
def test_a_published_multi_run_export_is_checked_per_run() -> None:
    (path,) = (WILD2 / "wandb").glob("044__*")
    runs = read_runs(path)
    assert len(runs) == 1 + len(runs[0].meta["other_runs"]) > 1
    assert len({r.meta["run_name"] for r in runs}) == len(runs)
