"""The gate keeps each log reduced to what its reports read (`trainspotter.reduced`): every
output must be byte for byte what the whole analyses give."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainspotter import gate
from trainspotter.analysis import Analysis
from trainspotter.config import parse_config
from trainspotter.gate import GateOptions, run_gate
from trainspotter.model import Series
from trainspotter.reduced import SeriesSummary, summarise

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
OUTPUTS = ("summary", "comment", "json", "sarif", "codequality", "junit", "html")


def _examples(folder: Path) -> None:
    """Every example log (the CSVLogger and Trainer files of each example run), and the
    comparison examples, so that well over MAX_CHARTS logs need attention."""
    for log in sorted(EXAMPLES.glob("*/metrics.csv")) + sorted(
        EXAMPLES.glob("*/trainer_state.json")
    ):
        target = folder / "runs" / log.parent.name / log.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, target)
    for log in sorted(EXAMPLES.glob("compare/*/metrics.csv")):
        target = folder / "compared" / log.parent.name / log.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, target)


def _gate_outputs(base: Path, report: str, config_text: str, verbose: bool) -> dict[str, bytes]:
    stdout, stderr = io.StringIO(), io.StringIO()
    options = GateOptions(
        config=parse_config(config_text),
        base=base,
        report_dir=base / report,
        outputs=OUTPUTS,
        comment=True,
        verbose=verbose,
        jobs=1,
    )
    result = run_gate(options, stdout, stderr)
    files = {
        p.relative_to(base / report).as_posix(): p.read_bytes()
        for p in (base / report).rglob("*")
        if p.is_file()
    }
    files["stdout"] = stdout.getvalue().encode()
    files["stderr"] = stderr.getvalue().encode()
    files["exit"] = str(result.exit_code).encode()
    return files


@pytest.mark.parametrize(
    ("config_text", "verbose"),
    [
        ("paths: ['runs/**']\n", False),
        ("paths: ['runs/**']\n", True),
        (
            "paths: ['compared/*/metrics.csv']\nbaseline: compared/baseline/metrics.csv\n"
            "rules: [{metric: eval/loss, max: 0.1}]\n",
            True,
        ),
    ],
)
def test_every_gate_output_is_the_same_from_reduced_analyses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_text: str, verbose: bool
) -> None:
    _examples(tmp_path)
    reduced = _gate_outputs(tmp_path, "reduced", config_text, verbose)
    calls: list[Analysis] = []

    def whole(analysis: Analysis) -> Analysis:
        calls.append(analysis)
        return analysis

    monkeypatch.setattr(gate, "reduce_for_reports", whole)
    kept_whole = _gate_outputs(tmp_path, "whole", config_text, verbose)
    assert calls, "no analysis went through the reduction"
    assert sorted(reduced) == sorted(kept_whole)
    for name, data in kept_whole.items():
        assert reduced[name] == data, name


def test_a_summary_keeps_the_counts_and_end_points_and_drops_the_rest() -> None:
    values = np.array([1.0, np.nan, 3.0, np.inf, 0.5])
    series, _ = Series.build([10, 20, 30, 40, 50], values)
    summary = summarise(series)
    assert isinstance(summary, SeriesSummary)
    assert len(summary) == 5 and summary.nonfinite_count() == 2
    assert summary.steps.tolist() == [10, 50] and summary.values.tolist() == [1.0, 0.5]
    assert summarise(summary) is summary
    one = summarise(Series.build([7], [2.0])[0])
    assert (len(one), one.steps.tolist(), one.values.tolist()) == (1, [7], [2.0])
    empty = summarise(Series.build([], [])[0])
    assert (len(empty), empty.steps.size) == (0, 0)
