"""The public Python API: `trainspotter.analyze` on every kind of source, its reports, its
errors, and the packaging facts a typed library owes its users."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

import trainspotter
from trainspotter.cli import main
from trainspotter.report.json_report import finding_dict

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def _findings(analysis: trainspotter.Analysis, fixes: bool = True) -> list[dict[str, object]]:
    """The findings as JSON dicts; `fixes=False` leaves out the fixes, whose clipping and
    warmup advice is worded for the log's framework (a CSV in Lightning's layout gets
    Lightning's knob, records from a loop plain PyTorch's)."""
    found = [finding_dict(f) for f in analysis.findings]
    return found if fixes else [{k: v for k, v in f.items() if k != "fixes"} for f in found]


def _clipping_fixes(analysis: trainspotter.Analysis) -> set[str]:
    return {fix for f in analysis.findings for fix in f.fixes if "clipping" in fix}


def _csv_records(path: Path) -> list[dict[str, object]]:
    """The CSV's rows as records, an empty cell left out and `nan` kept as a float NaN:
    what a training loop that collects its own logs would hold."""
    with path.open(newline="") as handle:
        return [
            {key: float(value) for key, value in row.items() if value != ""}
            for row in csv.DictReader(handle)
        ]


def test_path_gives_the_cli_json_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = "examples/divergence/trainer_state.json"
    analysis = trainspotter.analyze(REPO / log, name=log)
    html_file = tmp_path / "report.html"
    code = main(["analyze", str(REPO / log), "--output", "json", "--html", str(html_file)])
    out, _ = capsys.readouterr()
    assert code == 1  # the divergent run fails the CLI's gate
    assert analysis.worst is trainspotter.Severity.ERROR
    # The CLI names the log as given; so does the API when told the same name.
    assert analysis.to_json() == out.replace(str(REPO / log), log)
    assert analysis.to_html() == html_file.read_text(encoding="utf-8").replace(str(REPO / log), log)


def test_records_with_a_nan_loss_match_the_csv_log() -> None:
    path = EXAMPLES / "divergence" / "metrics.csv"
    records = _csv_records(path)
    assert any(math.isnan(v) for r in records for v in r.values() if isinstance(v, float))
    from_file = trainspotter.analyze(path)
    from_records = trainspotter.analyze(records)
    assert _findings(from_records, fixes=False) == _findings(from_file, fixes=False)
    assert all("gradient_clip_val" in fix for fix in _clipping_fixes(from_file))
    assert all("clip_grad_norm_" in fix for fix in _clipping_fixes(from_records))
    assert any(f.detector == "divergence" for f in from_records.findings)
    assert from_records.run.source_path == "<records>"


def test_dataframe_with_step_column_or_index_matches_the_csv_log() -> None:
    path = EXAMPLES / "loss_spike" / "metrics.csv"
    frame = pd.read_csv(path)
    expected = _findings(trainspotter.analyze(path), fixes=False)
    assert expected, "the example has findings to compare"
    assert _findings(trainspotter.analyze(frame), fixes=False) == expected
    assert _findings(trainspotter.analyze(frame.set_index("step")), fixes=False) == expected


def test_dataframe_names_are_normalised_like_a_logs_columns() -> None:
    frame = pd.DataFrame(
        {
            "global_step": range(1, 101),
            "loss": [2.0 / (1 + 0.05 * i) for i in range(100)],
            "learning_rate": [1e-3] * 100,
            "note": ["text"] * 100,
        }
    )
    run = trainspotter.analyze(frame).run
    assert set(run.metrics) == {"train/loss", "lr"}
    assert int(run.metrics["train/loss"].steps[0]) == 1
    assert any("note" in note for note in run.notes())


def test_run_and_config_path(tmp_path: Path) -> None:
    config = tmp_path / ".trainspotter.yml"
    config.write_text(
        "ignore:\n  - detector: divergence\n    reason: known bad resume\n", encoding="utf-8"
    )
    plain = trainspotter.analyze(EXAMPLES / "divergence" / "metrics.csv")
    ignored = trainspotter.analyze(plain.run, config)
    suppressed = [f for f in ignored.findings if f.suppressed]
    assert suppressed and all(f.detector == "divergence" for f in suppressed)
    assert trainspotter.analyze(plain.run, trainspotter.load_config(config)).findings == (
        ignored.findings
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("no/such/log.csv", "no/such/log.csv: no such file or folder"),
        ([], "<records>: no records"),
        ([{"loss": 1.0}, {"loss": 0.9}], "<records>: no step key in the records"),
        ([{"step": 1, "loss": 1.0}, 5], "<records>: record 1 is a int, not a dict"),
    ],
)
def test_bad_input_raises_input_error_with_the_cli_line(source: object, message: str) -> None:
    with pytest.raises(trainspotter.InputError) as caught:
        trainspotter.analyze(source)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, trainspotter.TrainspotterError)


def test_bad_config_and_bad_types(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("fail_on: sometimes\n", encoding="utf-8")
    records = [{"step": i, "loss": 1.0} for i in range(10)]
    with pytest.raises(trainspotter.ConfigError):
        trainspotter.analyze(records, bad)
    with pytest.raises(TypeError, match="source must be"):
        trainspotter.analyze(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config must be"):
        trainspotter.analyze(records, 3)  # type: ignore[arg-type]


def test_the_package_is_typed() -> None:
    assert (REPO / "trainspotter" / "py.typed").is_file()
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"py.typed"' in pyproject
    assert set(trainspotter.__all__) >= {"analyze", "Analysis", "Monitor", "InputError"}
    for name in trainspotter.__all__:
        assert getattr(trainspotter, name) is not None


def test_readme_snippets_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from readme_api import core_snippets

    monkeypatch.chdir(REPO)
    snippets = core_snippets()
    assert len(snippets) >= 3
    namespace: dict[str, object] = {}
    for snippet in snippets:
        exec(compile(snippet, "README.md", "exec"), namespace)
    final = namespace["final"]
    assert isinstance(final, trainspotter.Analysis)
    assert any(f.detector == "divergence" for f in final.findings)
