"""`trainspotter compare` and the gate's `baseline:`/`rules:` on real runs (issue 15).

The runs are `examples/compare/` (real, seeded runs of the example generator): a
baseline, the same recipe with another seed (must stay silent), and three regressions
(a 10x lower LR, a smaller model, a slower data pipeline). The exit rule is the shared
one: `regression` findings count towards `fail_on` like any other.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from trainspotter.analysis import RAN
from trainspotter.cli import main
from trainspotter.compare.command import compare_paths
from trainspotter.config import Config, parse_config
from trainspotter.detectors.regression.align import align
from trainspotter.gate import GateOptions, run_gate
from trainspotter.model import Run, Series, Severity

REPO = Path(__file__).resolve().parents[1]
PAIRS = REPO / "examples" / "compare"
BASELINE = PAIRS / "baseline" / "metrics.csv"
SCHEMA = json.loads((REPO / "trainspotter" / "schemas" / "report.schema.json").read_text())


def regressions(candidate: str, baseline: Path = BASELINE, config: Config | None = None):  # type: ignore[no-untyped-def]
    (analysis,) = compare_paths(str(PAIRS / candidate), str(baseline), config or Config())
    return analysis, [f for f in analysis.findings if f.detector == "regression"]


@pytest.mark.parametrize("log", ["metrics.csv", "trainer_state.json"])
def test_another_seed_of_the_same_recipe_is_not_a_regression(log: str) -> None:
    analysis, found = regressions(f"seed_2/{log}", PAIRS / "baseline" / log)
    assert found == []
    assert analysis.comparison is not None and analysis.comparison.values
    assert not analysis.comparison.regressions
    assert any(c.detector == "regression" and c.status == RAN for c in analysis.checks)


def test_a_lower_learning_rate_is_an_error_on_the_final_eval_loss() -> None:
    _, found = regressions("lr_too_low/metrics.csv")
    final = next(f for f in found if f.metric == "eval/loss")
    assert final.severity is Severity.ERROR and final.step_start == 1000
    assert final.evidence["final_candidate"] > 5 * float(final.evidence["final_baseline"])
    curve = next(f for f in found if f.metric == "train/loss")
    assert curve.severity is Severity.WARNING and curve.step_end == 1000


def test_a_smaller_model_regresses_across_formats() -> None:
    """The candidate's CSV against the baseline's trainer_state.json: same verdict."""
    _, found = regressions("smaller_model/metrics.csv", PAIRS / "baseline" / "trainer_state.json")
    assert {(f.metric, f.severity) for f in found} >= {("eval/loss", Severity.ERROR)}


def test_a_slower_pipeline_is_a_throughput_regression_and_nothing_else() -> None:
    _, found = regressions("slow_pipeline/metrics.csv")
    assert [(f.metric, f.severity) for f in found] == [("step_time", Severity.WARNING)]
    assert float(found[0].evidence["slowdown"]) > 0.5
    # trainer_state.json has no per-step timing: nothing to compare, nothing found
    _, found = regressions(
        "slow_pipeline/trainer_state.json", PAIRS / "baseline" / "trainer_state.json"
    )
    assert found == []


@pytest.mark.parametrize(
    ("candidate", "extra", "code"),
    [
        ("seed_2", [], 0),
        ("lr_too_low", [], 1),
        ("slow_pipeline", [], 0),  # a warning, below the default fail_on=error
        ("slow_pipeline", ["--fail-on", "warning"], 1),
    ],
)
def test_compare_exit_codes(candidate: str, extra: list[str], code: int) -> None:
    log = str(PAIRS / candidate / "metrics.csv")
    assert main(["compare", log, "--baseline", str(BASELINE), *extra]) == code


def test_compare_without_a_baseline_or_with_a_bad_one_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log = str(PAIRS / "seed_2" / "metrics.csv")
    assert main(["compare", log]) == 2
    assert "needs --baseline" in capsys.readouterr().err
    assert main(["compare", log, "--baseline", str(tmp_path / "missing.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainspotter: error: ") and "missing.csv" in err
    assert err.count("\n") == 1


def test_every_report_shows_the_comparison(tmp_path: Path) -> None:
    log = str(PAIRS / "lr_too_low" / "metrics.csv")
    files = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "html", "markdown")}
    args = ["compare", log, "--baseline", str(BASELINE), "--out", str(tmp_path / "r.txt")]
    args += [item for fmt, path in files.items() for item in (f"--{fmt}", str(path))]
    assert main(args) == 1
    terminal = (tmp_path / "r.txt").read_text()
    assert "Compared with baseline" in terminal and "REGRESSED" in terminal
    doc = json.loads(files["json"].read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema_version"] == "1.2"
    final = next(v for v in doc["comparison"]["values"] if v["quantity"] == "final")
    assert final["metric"] == "eval/loss" and final["regressed"] is True
    assert any(f["detector"] == "regression" for f in doc["findings"])
    page = files["html"].read_text()
    assert "eval/loss (baseline)" in page and "train/loss (this run)" in page
    assert "| eval/loss | final |" in files["markdown"].read_text()


def test_compare_never_overwrites_either_log(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.csv"
    shutil.copy(BASELINE, baseline)
    before = baseline.read_bytes()
    log = str(PAIRS / "seed_2" / "metrics.csv")
    assert main(["compare", log, "--baseline", str(baseline), "--out", str(baseline)]) == 2
    assert baseline.read_bytes() == before


def _workspace(tmp_path: Path, candidate: str, config: str) -> Path:
    for name, source in (("runs/pr", candidate), ("main", "baseline")):
        (tmp_path / name).mkdir(parents=True)
        shutil.copy(PAIRS / source / "metrics.csv", tmp_path / name / "metrics.csv")
    (tmp_path / ".trainspotter.yml").write_text(config)
    return tmp_path


def _gate(base: Path) -> tuple[int, str]:
    config = parse_config((base / ".trainspotter.yml").read_text())
    out, err = io.StringIO(), io.StringIO()
    options = GateOptions(config=config, base=base, outputs=("json",))
    result = run_gate(options, out, err)
    return result.exit_code, err.getvalue()


GATE = "paths: [runs/*/metrics.csv]\nbaseline: main/metrics.csv\n"


@pytest.mark.parametrize(
    ("candidate", "extra", "code"),
    [
        ("seed_2", "", 0),
        ("lr_too_low", "", 1),
        ("lr_too_low", "detectors: {regression: {severity: warning}}\n", 0),
        ("lr_too_low", "detectors: {regression: false}\n", 0),
        ("lr_too_low", "ignore: [{detector: regression, reason: intended LR study}]\n", 0),
        ("smaller_model", "detectors: {regression: {margin: 5.0}}\n", 0),
        ("seed_2", "fail_on: warning\nrules: [{metric: eval/loss, max: 0.05}]\n", 1),
        ("seed_2", "rules: [{metric: eval/loss, max: 0.1}, {metric: train/loss, min: 0}]\n", 0),
        ("seed_2", "rules: [{metric: eval/accuracy, min: 0.9}]\n", 1),  # not logged: fails
    ],
)
def test_gate_with_a_baseline_and_rules(
    tmp_path: Path, candidate: str, extra: str, code: int
) -> None:
    base = _workspace(tmp_path, candidate, GATE + extra)
    assert _gate(base)[0] == code
    report = json.loads((base / "trainspotter-report" / "trainspotter.json").read_text())
    jsonschema.validate(report, SCHEMA)


def test_gate_rules_without_a_baseline(tmp_path: Path) -> None:
    base = _workspace(
        tmp_path,
        "lr_too_low",
        "paths: [runs/*/metrics.csv]\nrules: [{metric: eval/loss, max: 0.35}]\n",
    )
    assert _gate(base)[0] == 1
    report = json.loads((base / "trainspotter-report" / "trainspotter.json").read_text())
    comparison = report["comparison"]
    assert comparison["baseline"] is None
    assert comparison["rules"][0]["passed"] is False
    assert comparison["rules"][0]["value"] == pytest.approx(0.5098, abs=1e-4)


def test_gate_with_an_unreadable_baseline_is_exit_2(tmp_path: Path) -> None:
    base = _workspace(tmp_path, "seed_2", "paths: [runs/*/metrics.csv]\nbaseline: nope.csv\n")
    code, err = _gate(base)
    assert code == 2 and "baseline nope.csv" in err


def test_runs_with_different_steps_per_epoch_are_aligned_by_epoch() -> None:
    """A candidate with twice the batch size reaches each epoch in half the steps: its
    baseline is re-expressed in the candidate's steps through the logged epoch."""
    steps_b = np.arange(1, 201)
    steps_c = np.arange(1, 101)

    def run(steps: np.ndarray, per_epoch: int) -> Run:
        epoch, _ = Series.build(steps, steps / per_epoch)
        loss, _ = Series.build(steps, 2.0 / (1 + steps / per_epoch))
        return Run({"epoch": epoch, "train/loss": loss}, "csv", "<run>")

    aligned = align(run(steps_c, 10), run(steps_b, 20))
    assert aligned.axis == "epoch"
    moved = aligned.baseline["train/loss"]
    assert int(moved.steps[-1]) == 100
    # the baseline's step 2 (epoch 0.1) is the candidate's step 1; its step 1 (epoch
    # 0.05) lies before the candidate's first epoch and is left out, said in a note
    assert int(moved.steps[0]) == 1 and moved.values[0] == pytest.approx(2.0 / 1.1)
    assert aligned.note is not None
    np.testing.assert_allclose(moved.values[-1], 2.0 / 11)
    same = align(run(steps_c, 10), run(steps_c, 10))
    assert same.axis == "step"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rules: [{metric: eval/loss}]", "needs 'max', 'min' or both"),
        ("rules: [{max: 1}]", "missing 'metric'"),
        ("rules: [{metric: x, max: 1, min: 2}]", "min 2 is above max 1"),
        ("rules: [{metric: x, mx: 1}]", "did you mean 'max'"),
        ("rules: [{metric: x, max: yes}]", "expected a number"),
        ("baseline: 3", "expected a string"),
    ],
)
def test_comparison_keys_are_validated(text: str, problem: str) -> None:
    with pytest.raises(Exception, match=problem):
        parse_config(text)


def test_terse_report_points_to_compare_for_one_finding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The hint names the command that produced the finding: a `regression` finding exists
    only in `compare`, so `analyze --finding` would not find it."""
    log = str(PAIRS / "lr_too_low" / "metrics.csv")
    assert main(["compare", log, "--baseline", str(BASELINE)]) == 1
    out = capsys.readouterr().out
    assert "compare --finding F" in out and "analyze --finding" not in out
