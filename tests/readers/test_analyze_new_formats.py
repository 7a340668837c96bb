"""`trainspotter analyze` end to end on the printed-output and MLflow fixtures: the format
is detected, the report names it, and the exit code is a verdict (0 or 1), never an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from readers_support import PRINTED_LOGS, PRINTED_NAMES

from trainspotter.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
STDOUT_LOGS = PRINTED_LOGS


@pytest.mark.parametrize("log", STDOUT_LOGS, ids=PRINTED_NAMES)
def test_analyze_printed_output(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(["analyze", str(log), "--output", "json", "--out", str(out)])
    assert code in (0, 1), capsys.readouterr().err
    entry = json.loads(out.read_text())["run"]
    assert entry["source_format"] == "stdout"
    # A training loss, or a GAN's two (the DCGAN example prints Loss_D and Loss_G).
    assert "train/loss" in entry["metrics"] or {"Loss_D", "Loss_G"} <= set(entry["metrics"])


def test_analyze_mlflow_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = DATA / "mlflow" / "mlruns"
    code = main(["analyze", str(store)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith(f"trainspotter: error: {store}: 2 MLflow runs")
    out = tmp_path / "report.json"
    code = main(["analyze", str(store), "--run", "lr-2.0", "--output", "json", "--out", str(out)])
    assert code in (0, 1)
    entry = json.loads(out.read_text())["run"]
    assert entry["source_format"] == "mlflow"
    assert {"train/loss", "eval/loss", "lr", "grad_norm"} <= set(entry["metrics"])
    code = main(["analyze", str(store), "--format", "mlflow", "--run", "lr-0.5"])
    assert code in (0, 1)
    assert "lr-0.5" in capsys.readouterr().out
