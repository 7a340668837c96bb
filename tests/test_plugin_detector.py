"""Adding a detector is its module and one registry line: nothing else to edit.

A throwaway detector, defined here and put into `DETECTORS` by a fixture (and taken out
again after), is configured, range-checked by a bound declared on its own parameter, in
the JSON Schema and in the README reference, although no other module knows its id.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import jsonschema
import pytest

from trainspotter.cli import main
from trainspotter.config import (
    ConfigError,
    config_schema,
    default_config_yaml,
    parse_config,
    reference_markdown,
)
from trainspotter.detectors import DETECTORS
from trainspotter.detectors.base import Above
from trainspotter.model import Finding, Run

NAME = "wobble"
WHY = "log10(min_swing) is the smallest swing that counts"


@dataclass(frozen=True)
class WobbleParams:
    """Parameters of the throwaway `wobble` detector."""

    min_swing: Annotated[float, Above(1, True, WHY)] = 2.0
    """Smallest swing that counts, as a ratio to the level before it."""
    min_points: int = 10
    """Abstain below this many logged points."""


class WobbleDetector:
    """A detector no module of the package names."""

    name = NAME
    summary = "Swings of a metric (a detector registered by a test)."
    Params = WobbleParams

    def detect(self, run: Run, params: WobbleParams) -> list[Finding]:
        return []


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
