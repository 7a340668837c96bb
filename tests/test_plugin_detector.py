"""Adding a detector is its module and one registry line: nothing else to edit.

A throwaway detector, defined here and put into `DETECTORS` by a fixture (and taken out
again after), is configured, range-checked by a bound declared on its own parameter, in
the JSON Schema and in the configuration reference; it is run, ordered and linked by
analysis as its own declared causal rank and linking role say, listed by `trainspotter
detectors` and documented by `explain`, although no other module knows its id.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import jsonschema
import numpy as np
import pytest
from synth import decaying_loss, every, make_run

from trainspotter.analysis import Analysis, analyze
from trainspotter.cli import main
from trainspotter.config import (
    ConfigError,
    config_schema,
    default_config_yaml,
    parse_config,
    reference_markdown,
)
from trainspotter.detectors import DETECTORS
from trainspotter.detectors.base import Above, Abstain, Detector, Reads, Scope
from trainspotter.model import Finding, Run, Severity
from trainspotter.names import TRAIN_LOSS

NAME = "wobble"
WHY = "log10(min_swing) is the smallest swing that counts"
SPIKE_STEP = 1500


@dataclass(frozen=True)
class WobbleParams:
    """Parameters of the throwaway `wobble` detector."""

    min_swing: Annotated[float, Above(1, True, WHY)] = 2.0
    """Smallest swing that counts, as a ratio to the level before it."""
    min_points: int = 10
    """Abstain below this many logged points."""


class WobbleDetector(
    Detector,
    name=NAME,
    params=WobbleParams,
    causal_rank=1,
    summary="Swings of a metric (a detector registered by a test).",
):
    """A detector no module of the package names.

    **What it finds.** The highest `train/loss` point after the first tenth of the run, on
    at least `min_points` points (`min_swing` is there to be configured, not used).
    """

    def detect(self, run: Run, params: WobbleParams) -> list[Finding]:
        loss = run.metrics.get(TRAIN_LOSS)
        if loss is None or len(loss) < params.min_points:
            return []
        skip = len(loss) // 10
        step = int(loss.steps[skip + int(np.argmax(loss.values[skip:]))])
        title = f"highest loss at step {step}"
        return [Finding(NAME, title, Severity.WARNING, TRAIN_LOSS, step, step, "m")]


@pytest.fixture
def wobble() -> Iterator[WobbleDetector]:
    """`wobble` in the registry for one test, removed after it."""
    assert NAME not in DETECTORS
    detector = WobbleDetector()
    DETECTORS[NAME] = detector
    try:
        yield detector
    finally:
        del DETECTORS[NAME]


def _wobble_schema() -> dict[str, typing.Any]:
    detectors = config_schema()["properties"]["detectors"]["properties"]
    schema: dict[str, typing.Any] = detectors[NAME]
    return schema


@pytest.mark.usefixtures("wobble")
def test_a_valid_value_is_configured() -> None:
    config = parse_config(f"detectors:\n  {NAME}:\n    min_swing: 1.01\n    min_points: 3\n")
    assert config.detectors[NAME].params == WobbleParams(min_swing=1.01, min_points=3)
    assert NAME in config.analysis_settings().enabled


@pytest.mark.usefixtures("wobble")
@pytest.mark.parametrize("value", ["1", "0.5", "0", "-3"])
def test_the_declared_bound_is_a_file_line_error(value: str) -> None:
    text = f"fail_on: error\ndetectors:\n  {NAME}:\n    min_points: 5\n    min_swing: {value}\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "ci.yml")
    error = caught.value
    assert (error.line, error.key) == (5, f"detectors.{NAME}.min_swing")
    assert error.problem == f"must be > 1, got {value} ({WHY})"


@pytest.mark.usefixtures("wobble")
def test_check_config_reports_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / ".trainspotter.yml"
    path.write_text(f"detectors:\n  {NAME}:\n    min_swing: 1\n")
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"trainspotter: error: {path}:3: detectors.{NAME}.min_swing: must be > 1, got 1 ({WHY})"
    )


@pytest.mark.usefixtures("wobble")
def test_a_misspelt_parameter_gets_a_suggestion() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(f"detectors:\n  {NAME}:\n    min_swign: 3\n")
    assert caught.value.line == 3
    assert "did you mean 'min_swing'?" in caught.value.problem


@pytest.mark.usefixtures("wobble")
def test_the_schema_carries_the_bound() -> None:
    params = _wobble_schema()["anyOf"][1]["properties"]
    assert params["min_swing"] == {
        "type": "number",
        "exclusiveMinimum": 1,
        "default": 2.0,
        "description": "Smallest swing that counts, as a ratio to the level before it.",
    }
    schema = config_schema()
    jsonschema.validate({"detectors": {NAME: {"min_swing": 1.5}}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"detectors": {NAME: {"min_swing": 1}}}, schema)


@pytest.mark.usefixtures("wobble")
def test_the_reference_and_init_file_list_it() -> None:
    reference = reference_markdown()
    assert f"`detectors.{NAME}`: {WobbleDetector.summary}" in reference
    assert "| `min_swing` | number (> 1) | `2.0` |" in reference
    assert f"`{NAME}.min_swing` > 1" in reference  # the range note lists declared bounds
    init = default_config_yaml()
    assert f"  {NAME}:\n" in init and "    min_swing: 2.0\n" in init
    assert parse_config(init).detectors[NAME].params == WobbleParams()


def test_the_bound_is_invisible_to_plain_type_hints() -> None:
    """Code that reads the hints without extras (the YAML walker, `explain`) sees float."""
    assert typing.get_type_hints(WobbleParams)["min_swing"] is float
    hint = typing.get_type_hints(WobbleParams, include_extras=True)["min_swing"]
    assert hint.__metadata__ == (Above(1, True, WHY),)


def _spiky_run() -> Run:
    """A healthy loss with one recovered spike at SPIKE_STEP: the spikes detector's finding
    and wobble's start at the same step."""
    steps = every(3000, 1)
    loss = decaying_loss(steps, seed=15)
    loss[SPIKE_STEP] *= 4.0
    return make_run({TRAIN_LOSS: (steps, loss)})


def _pair(analysis: Analysis) -> tuple[Finding, Finding]:
    (mine,) = [f for f in analysis.findings if f.detector == NAME]
    (spike,) = [f for f in analysis.findings if f.detector == "spikes"]
    assert mine.step_start == spike.step_start == SPIKE_STEP
    return mine, spike


def test_it_runs_and_its_rank_orders_the_incident(wobble: WobbleDetector) -> None:
    analysis = analyze(_spiky_run())
    assert NAME in analysis.detectors_run
    mine, spike = _pair(analysis)
    assert analysis.chains == [[mine.id, spike.id]]  # rank 1 leads spikes' 3 at one step
    assert mine.related == (spike.id,) and spike.related == (mine.id,)
    assert mine.cause is None and spike.cause is None  # same step: they co-occur

    wobble.causal_rank = 8  # now after spikes at the same step
    analysis = analyze(_spiky_run())
    mine, spike = _pair(analysis)
    assert analysis.chains == [[spike.id, mine.id]]


def test_a_detector_that_drives_its_own_step_causes_what_starts_there(
    wobble: WobbleDetector,
) -> None:
    wobble.drives_same_step = True
    mine, spike = _pair(analyze(_spiky_run()))
    assert spike.cause == mine.id and mine.cause is None


def test_a_whole_run_detector_is_never_linked(wobble: WobbleDetector) -> None:
    wobble.whole_run = True
    analysis = analyze(_spiky_run())
    mine, spike = _pair(analysis)
    assert analysis.chains == []
    assert mine.related == () and spike.related == () and spike.cause is None


@pytest.mark.usefixtures("wobble")
def test_it_is_listed_and_explained(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detectors"]) == 0
    listed = capsys.readouterr().out
    assert f"{NAME}: {WobbleDetector.summary}\n    defaults: min_swing=2.0, min_points=10" in listed
    assert main(["explain", NAME]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{NAME}: {WobbleDetector.summary}\n\nA detector no module")
    assert "What it finds. The highest train/loss point" in out  # Markdown rendered


def test_undeclared_facts_take_the_defaults_and_no_reads_means_it_runs() -> None:
    detector = WobbleDetector()
    assert (detector.whole_run, detector.drives_same_step, detector.needs_baseline) == (
        False,
        False,
        False,
    )
    assert detector.scope(_spiky_run(), WobbleParams()) == Scope(metrics=())


def test_reads_is_the_scope_and_its_absence_is_the_reason() -> None:
    class Reader(
        WobbleDetector,
        name="wobble_eval",
        params=WobbleParams,
        causal_rank=1,
        reads=Reads(lambda m: m.startswith("eval/"), "no eval metric"),
        summary="Reads eval metrics only.",
    ):
        pass

    steps = every(100, 1)
    run = make_run({TRAIN_LOSS: (steps, decaying_loss(steps, seed=3))})
    assert Reader().scope(run, WobbleParams()) == Abstain("no eval metric")
    both = make_run({TRAIN_LOSS: (steps, steps * 1.0), "eval/loss": (steps, steps * 1.0)})
    assert Reader().scope(both, WobbleParams()) == Scope(metrics=("eval/loss",))
    assert WobbleDetector.name == NAME  # the subclass's keywords are its own


def test_a_declaration_missing_a_fact_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="causal_rank"):
        type("Undeclared", (Detector,), {}, name="x", params=WobbleParams, summary="s")
