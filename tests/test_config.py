""".trainspotter.yml: parsing, precise errors, the registry-driven detector section, the
shipped JSON Schema, `init` and `check-config`, and suppressions."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
import yaml

from trainspotter import config as config_module
from trainspotter.analysis import Analysis
from trainspotter.cli import main
from trainspotter.config import (
    README_END,
    README_START,
    SCHEMA_PATH,
    Config,
    ConfigError,
    IgnoreRule,
    config_schema,
    default_config_yaml,
    detector_params,
    load_config,
    parse_config,
    path_matches,
    reference_markdown,
    schema_text,
)
from trainspotter.config.reference import REFERENCE_FILE
from trainspotter.detectors import DETECTORS
from trainspotter.model import Finding, Run, Severity

REPO = Path(__file__).resolve().parents[1]
SOURCE = ".trainspotter.yml"


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, SOURCE)
    return caught.value


# --------------------------------------------------------------------------- valid files


def test_empty_file_is_all_defaults() -> None:
    for text in ("", "# only a comment\n", "---\n"):
        config = parse_config(text, SOURCE)
        assert config == Config(source=SOURCE)
    defaults = Config()
    assert defaults.fail_on is Severity.ERROR
    assert defaults.report.outputs == ("annotations", "summary", "html", "json", "comment")
    assert defaults.allow_empty is False


def test_full_config() -> None:
    config = parse_config(
        """
paths: ['output/**/trainer_state.json', runs/*]
format: {'legacy/**/*.log': jsonl}
fail_on: warning
allow_empty: true
detectors:
  spikes: {z_threshold: 10, min_window: 30, severity: error}
  eval_noise: false
  plateau: {enabled: false}
metrics:
  aliases: {my_loss: train/loss}
ignore:
  - detector: lr_schedule
    metric: lr
    steps: [3000, 3100]
    reason: deliberate LR jump at stage 2
  - {detector: '*', path: 'old/**', steps: [null, 50], reason: warm-up noise}
report:
  outputs: [summary, sarif]
  directory: out/ts
  artifact_name: gate-report
  comment: false
""",
        SOURCE,
    )
    assert config.paths == ("output/**/trainer_state.json", "runs/*")
    assert config.formats == {"legacy/**/*.log": "jsonl"}
    assert config.fail_on is Severity.WARNING
    assert config.allow_empty is True
    spikes = config.detectors["spikes"]
    assert spikes.severity is Severity.ERROR
    assert spikes.params == DETECTORS["spikes"].Params(z_threshold=10.0, min_window=30)
    assert isinstance(spikes.params.z_threshold, float)
    assert not config.detectors["eval_noise"].enabled
    assert not config.detectors["plateau"].enabled
    assert config.aliases == {"my_loss": "train/loss"}
    assert config.ignore[0] == IgnoreRule(
        "lr_schedule", "deliberate LR jump at stage 2", "lr", (3000, 3100), None, line=13
    )
    assert config.ignore[1].steps == (None, 50)
    assert config.report.outputs == ("summary", "sarif")
    assert config.report.directory == "out/ts"
    assert config.report.artifact_name == "gate-report"
    assert config.report.comment is False
    settings = config.analysis_settings()
    assert settings.enabled is not None
    assert "eval_noise" not in settings.enabled and "plateau" not in settings.enabled
    assert "spikes" in settings.enabled
    assert settings.severity == {"spikes": Severity.ERROR}
    assert config.format_for("legacy/**/*.log", "legacy/a/b.log") == "jsonl"
    assert config.format_for("x/*", "legacy/z.log") == "jsonl"
    assert config.format_for("x/*", "x/y.csv") is None


def test_single_string_paths_and_global_format() -> None:
    config = parse_config("paths: logs/**/metrics.csv\nformat: csv\n", SOURCE)
    assert config.paths == ("logs/**/metrics.csv",)
    assert config.format_for("anything", "x") == "csv"


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "line", "key", "fragment"),
    [
        ("pahts: [a]\n", 1, "pahts", "unknown key (did you mean 'paths'?)"),
        ("paths: []\nfail_on: eror\n", 2, "fail_on", "did you mean 'error'"),
        ("paths: 3\n", 1, "paths", "expected a list of strings, got an integer"),
        ("paths: [logs/**.json]\n", 1, "paths[0]", "'**' must be a whole path component"),
        ("paths:\n  - ok/*.csv\n  - 'logs/[ab.json'\n", 3, "paths[1]", "unclosed '['"),
        ("paths: ['']\n", 1, "paths[0]", "must not be empty"),
        ("detectors:\n  spike: {}\n", 2, "detectors.spike", "did you mean 'spikes'"),
        ("detectors:\n  nonsense: {}\n", 2, "detectors.nonsense", "unknown detector (one of:"),
        (
            "detectors:\n  spikes:\n    z_treshold: 3\n",
            3,
            "detectors.spikes.z_treshold",
            "unknown parameter (did you mean 'z_threshold'?)",
        ),
        (
            "detectors:\n  spikes:\n    z_threshold: high\n",
            3,
            "detectors.spikes.z_threshold",
            "expected a number, got a string",
        ),
        (
            "detectors:\n  spikes:\n    min_window: 2.5\n",
            3,
            "detectors.spikes.min_window",
            "expected an integer, got a number",
        ),
        (
            "detectors:\n  spikes:\n    min_window: true\n",
            3,
            "detectors.spikes.min_window",
            "expected an integer, got true/false",
        ),
        ("detectors:\n  spikes: {severity: fatal}\n", 2, "detectors.spikes.severity", "not one of"),
        ("detectors:\n  spikes: {enabled: 1}\n", 2, "detectors.spikes.enabled", "true or false"),
        ("detectors:\n  spikes: [1]\n", 2, "detectors.spikes", "expected a mapping, got a list"),
        ("ignore:\n  - detector: spikes\n", 2, "ignore[0]", "missing 'reason'"),
        ("ignore:\n  - reason: x\n", 2, "ignore[0]", "missing 'detector'"),
        (
            "ignore:\n  - {detector: spikes, reason: x, steps: [5, 1]}\n",
            2,
            "ignore[0].steps",
            "first step 5 is after last step 1",
        ),
        (
            "ignore:\n  - {detector: spikez, reason: x}\n",
            2,
            "ignore[0].detector",
            "did you mean 'spikes'",
        ),
        ("ignore:\n  - {detector: spikes, reson: x}\n", 2, "ignore[0].reson", "did you mean"),
        ("ignore: {detector: spikes}\n", 1, "ignore", "expected a list of rules"),
        ("report:\n  outputs: [html, pdf]\n", 2, "report.outputs[1]", "'pdf' is not one of"),
        ("report:\n  comment: maybe\n", 2, "report.comment", "expected true or false"),
        ("report:\n  artifact_name: a/b\n", 2, "report.artifact_name", "not allowed"),
        ("format: parquet\n", 1, "format", "'parquet' is not one of"),
        ("format: {'[x': csv}\n", 1, "format.[x", "invalid glob"),
        ("metrics:\n  aliases: {a: 3}\n", 2, "metrics.aliases.a", "expected a string"),
        ("metrics:\n  alias: {}\n", 2, "metrics.alias", "did you mean 'aliases'"),
        ("allow_empty: yes please\n", 1, "allow_empty", "expected true or false"),
        ("paths: []\npaths: [a]\n", 2, "paths", "duplicate key (first at line 1)"),
    ],
)
def test_errors_name_line_key_and_problem(text: str, line: int, key: str, fragment: str) -> None:
    error = _error(text)
    assert error.line == line, str(error)
    assert error.key == key, str(error)
    assert fragment in error.problem, str(error)
    assert str(error).startswith(f"{SOURCE}:{line}: {key}: ")


def test_top_level_must_be_a_mapping() -> None:
    error = _error("- a\n- b\n")
    assert (error.line, error.problem) == (1, "expected a mapping, got a list")


def test_yaml_syntax_error_has_a_line() -> None:
    error = _error("paths: [a\nfail_on: error\n")
    assert error.line is not None and error.line >= 2
    assert "invalid YAML" in str(error)


def test_params_post_init_errors_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass(frozen=True)
    class Strict:
        window: int = 5
        """A window."""

        def __post_init__(self) -> None:
            if self.window % 2 == 0:
                raise ValueError("window must be odd")

    _register(monkeypatch, "strict", Strict)
    # 4 passes the generic range check (> 0), so the Params' own check speaks.
    error = _error("detectors:\n  strict:\n    window: 4\n")
    assert error.key == "detectors.strict" and "window must be odd" in error.problem


# --------------------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    ("text", "line", "key", "fragment"),
    [
        # The values found in review: each crashed `analyze` or corrupted its findings.
        ("detectors: {spikes: {min_ratio: 0}}\n", 1, "detectors.spikes.min_ratio", "> 1, got 0"),
        ("detectors:\n  spikes:\n    z_threshold: -1\n", 3, "detectors.spikes.z_threshold", "> 0"),
        (
            "detectors:\n  spikes: {min_window: 500, max_window: 10}\n",
            2,
            "detectors.spikes.min_window",
            "500 is above max_window (10): min_window must be <= max_window",
        ),
        (
            "detectors:\n  grad_norm:\n    explosion_ratio: 0\n",
            3,
            "detectors.grad_norm.explosion_ratio",
            "must be > 1, got 0",
        ),
        ("detectors:\n  plateau:\n    min_points: -3\n", 3, "detectors.plateau.min_points", ">= 1"),
        (
            "detectors:\n  spikes:\n    window_fraction: 5\n",
            3,
            "detectors.spikes.window_fraction",
            "must be <= 1, got 5 (a fraction)",
        ),
        # The other rules.
        (
            "detectors:\n  spikes:\n    z_threshold: .inf\n",
            3,
            "detectors.spikes.z_threshold",
            "must be a finite number, got .inf",
        ),
        (
            "detectors:\n  spikes:\n    z_threshold: .nan\n",
            3,
            "detectors.spikes.z_threshold",
            "must be a finite number, got .nan",
        ),
        (
            "detectors:\n  spikes:\n    z_threshold: 1" + "0" * 400 + "\n",
            3,
            "detectors.spikes.z_threshold",
            "must be a finite number",
        ),
        (
            "detectors:\n  spikes:\n    min_window: 500\n",
            3,
            "detectors.spikes.min_window",
            "500 is above max_window (100, its default)",
        ),
        (
            "detectors:\n  grad_norm:\n    max_window: 5\n",
            3,
            "detectors.grad_norm.max_window",
            "5 is below min_window (10, its default): max_window must be >= min_window",
        ),
        (
            "detectors:\n  grad_norm:\n    min_window: 2\n    max_window: 2\n",
            3,
            "detectors.grad_norm.min_window",
            "must be >= 3, got 2 (a window needs 3 points",
        ),
        (
            "detectors:\n  spikes:\n    max_window: 100000\n",
            3,
            "detectors.spikes.max_window",
            "must be <= 1000, got 100000",
        ),
        (
            "detectors:\n  grad_norm:\n    growth_windows: 10000000000\n",
            3,
            "detectors.grad_norm.growth_windows",
            "must be <= 1000000000",
        ),
        (
            "detectors:\n  divergence:\n    merge_gap: -1\n",
            3,
            "detectors.divergence.merge_gap",
            "must be >= 0, got -1",
        ),
        # The spikes rules' own bounds: a run of 1 point, neighbour factors that turn the
        # rule on everywhere or off.
        (
            "detectors:\n  spikes:\n    sustained_points: 1\n",
            3,
            "detectors.spikes.sustained_points",
            "must be >= 2, got 1 (one point at sustained_z would be a spike on its own",
        ),
        (
            "detectors:\n  spikes:\n    neighbour_ratio: 1\n",
            3,
            "detectors.spikes.neighbour_ratio",
            "must be > 1, got 1",
        ),
        (
            "detectors:\n  spikes:\n    neighbour_agreement: 0.5\n",
            3,
            "detectors.spikes.neighbour_agreement",
            "must be > 1, got 0.5",
        ),
        (
            "detectors:\n  lr_schedule:\n    min_early_points: 1\n",
            3,
            "detectors.lr_schedule.min_early_points",
            "must be >= 2, got 1",
        ),
        (
            "detectors:\n  divergence:\n    transient_factor: 0\n",
            3,
            "detectors.divergence.transient_factor",
            "must be > 0, got 0",
        ),
    ],
)
def test_out_of_range_parameters_name_line_and_key(
    text: str, line: int, key: str, fragment: str
) -> None:
    error = _error(text)
    assert (error.line, error.key) == (line, key), str(error)
    assert fragment in error.problem, str(error)
    # the first mistake (by line) leads; others are counted after it
    assert str(error).split(" (and ")[0] == f"{SOURCE}:{line}: {key}: {error.problem}"


def test_ratio_bounds_say_why() -> None:
    """A bound the detector's math needs (log10 of the ratio) is explained, not just stated."""
    assert "log10(min_ratio)" in _error("detectors: {spikes: {min_ratio: 1}}\n").problem
    error = _error("detectors: {grad_norm: {explosion_ratio: 1.0}}\n")
    assert "log10(explosion_ratio)" in error.problem


@pytest.mark.parametrize(
    "text",
    [
        "detectors: {spikes: {min_ratio: 1.0001, window_fraction: 1, merge_gap: 0}}\n",
        "detectors: {spikes: {min_window: 3, max_window: 3}}\n",
        "detectors: {grad_norm: {min_window: 1000, max_window: 1000, explosion_ratio: 1.01}}\n",
        "detectors: {divergence: {merge_gap: 0, max_skip_points: 1, drift_alpha: 1.0e-300}}\n",
        "detectors: {lr_schedule: {min_early_points: 2, early_max_steps: 1000000000}}\n",
        "detectors: {throughput: {sustain_fraction: 1.0, min_z: 1.0e+300}}\n",
        "detectors: {spikes: {z_threshold: 3}}\n",  # a YAML integer for a number
        # below sustained_z: the run rule then adds nothing, which is no reason to refuse
        "detectors: {spikes: {sustained_z: 9}}\n",
        "detectors: {spikes: {sustained_points: 2, neighbour_ratio: 1.01}}\n",
    ],
)
def test_values_at_the_bounds_are_accepted(text: str) -> None:
    parse_config(text, SOURCE)
    jsonschema.validate(yaml.safe_load(text), config_schema())


def test_check_config_rejects_what_crashed_analyze(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`min_ratio: 0` passed check-config and then `analyze` died (math domain error,
    exit 3); now check-config stops it with exit 2, the key and the line."""
    path = tmp_path / SOURCE
    path.write_text("detectors: {spikes: {min_ratio: 0}}\n")
    code = main(["check-config", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith(
        f"trainspotter: error: {path}:1: detectors.spikes.min_ratio: must be > 1, got 0 ("
    )


def test_cli_prints_the_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / SOURCE
    path.write_text("paths: []\ndetectors:\n  spikes:\n    z_treshold: 3\n")
    code = main(["check-config", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == (
        f"trainspotter: error: {path}:4: detectors.spikes.z_treshold: unknown parameter "
        "(did you mean 'z_threshold'?)"
    )


# --------------------------------------------------------------------------- the registry


class _FakeDetector:
    summary = "a detector registered by a test"

    def __init__(self, name: str, params: type) -> None:
        self.name = name
        self.Params = params

    def detect(self, run: Run, params: Any) -> list[Finding]:
        return []


def _register(monkeypatch: pytest.MonkeyPatch, name: str, params: type) -> None:
    monkeypatch.setitem(DETECTORS, name, _FakeDetector(name, params))


@dataclass(frozen=True)
class _NewParams:
    threshold: float = 2.5
    """How far is too far."""
    mode: Literal["fast", "exact"] = "fast"
    """Which algorithm."""
    metrics: tuple[str, ...] = ("train/loss",)
    """Metrics to watch."""
    limit: int | None = None
    """Optional cap."""
    strict: bool = False


def test_a_new_detector_is_configurable_without_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    _register(monkeypatch, "brand_new", _NewParams)
    config = parse_config(
        "detectors:\n  brand_new:\n    threshold: 3\n    mode: exact\n"
        "    metrics: [eval/loss, train/loss]\n    limit: 7\n    strict: true\n",
        SOURCE,
    )
    assert config.detectors["brand_new"].params == _NewParams(
        3.0, "exact", ("eval/loss", "train/loss"), 7, True
    )
    assert parse_config("detectors:\n  brand_new: {limit: null}\n").detectors[
        "brand_new"
    ].params == _NewParams(limit=None)
    for text, fragment in [
        ("mode: slow", "expected one of 'fast', 'exact'"),
        ("metrics: eval/loss", "expected a list of (a string)"),
        ("limit: many", "expected an integer or null"),
        ("thresold: 1", "did you mean 'threshold'"),
    ]:
        error = _error(f"detectors:\n  brand_new:\n    {text}\n")
        assert fragment in error.problem, str(error)
    schema = config_schema()["properties"]["detectors"]["properties"]["brand_new"]
    props = schema["anyOf"][1]["properties"]
    assert props["threshold"] == {
        "type": "number",
        "exclusiveMinimum": 0,
        "default": 2.5,
        "description": "How far is too far.",
    }
    assert props["limit"]["anyOf"][0] == {"type": "integer", "maximum": 1_000_000_000}
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert props["metrics"]["items"] == {"type": "string"}
    assert "brand_new:" in default_config_yaml()
    assert "`detectors.brand_new`" in reference_markdown()


def test_every_registered_param_is_documented_and_round_trips() -> None:
    """`init`'s file is valid, holds every detector and parameter, and parses to the
    defaults; it also validates against the shipped schema."""
    text = default_config_yaml()
    config = parse_config(text, SOURCE)
    assert set(config.detectors) == set(DETECTORS)
    for name, settings in config.detectors.items():
        assert settings.enabled and settings.severity is None
        assert settings.params == DETECTORS[name].Params(), name
        for spec in detector_params(name):
            assert f"    {spec.name}: " in text
            assert spec.name not in ("enabled", "severity"), "reserved key used as a parameter"
    jsonschema.validate(yaml.safe_load(text), config_schema())


def test_shipped_schema_is_the_generated_one() -> None:
    shipped = SCHEMA_PATH.read_text(encoding="utf-8")
    assert shipped == schema_text(), (
        "trainspotter/schemas/config.schema.json is stale: run "
        "`python -m trainspotter.config --write` (a detector or parameter changed)"
    )
    jsonschema.Draft202012Validator.check_schema(json.loads(shipped))


def test_configuration_reference_is_the_generated_one() -> None:
    readme = (REPO / REFERENCE_FILE).read_text(encoding="utf-8")
    start = readme.index(README_START) + len(README_START)
    end = readme.index(README_END)
    assert readme[start:end] == "\n\n" + reference_markdown() + "\n", (
        "docs/configuration.md is stale: run `python -m trainspotter.config --write`"
    )


@pytest.mark.parametrize(
    "text",
    [
        "fail_on: eror\n",
        "pahts: []\n",
        "detectors: {spikes: {z_treshold: 1}}\n",
        "ignore: [{detector: spikes}]\n",
        "report: {outputs: [pdf]}\n",
        "detectors: {spikes: {min_ratio: 0}}\n",
        "detectors: {spikes: {min_ratio: 1}}\n",
        "detectors: {spikes: {z_threshold: -1}}\n",
        "detectors: {spikes: {window_fraction: 5}}\n",
        "detectors: {spikes: {max_window: 1001}}\n",
        "detectors: {grad_norm: {explosion_ratio: 0}}\n",
        "detectors: {plateau: {min_points: -3}}\n",
        "detectors: {divergence: {merge_gap: -1}}\n",
    ],
)
def test_schema_and_parser_agree_on_invalid_files(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_config(text, SOURCE)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(yaml.safe_load(text), config_schema())


# --------------------------------------------------------------------------- files, CLI


def test_found_in_the_working_folder_or_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config() == Config()
    (tmp_path / ".trainspotter.yaml").write_text("fail_on: info\n")
    assert load_config().fail_on is Severity.INFO
    assert load_config().source == ".trainspotter.yaml"
    (tmp_path / ".trainspotter.yml").write_text("fail_on: warning\n")
    assert load_config().fail_on is Severity.WARNING  # .yml wins over .yaml
    other = tmp_path / "ci.yml"
    other.write_text("fail_on: error\n")
    assert load_config(other).fail_on is Severity.ERROR
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.yml")


def test_init_writes_once_and_check_config_accepts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check-config"]) == 2
    assert "no config file" in capsys.readouterr().err
    assert main(["init"]) == 0
    written = (tmp_path / SOURCE).read_text()
    assert written == default_config_yaml()
    assert main(["init"]) == 2
    assert "already exists; not overwriting it" in capsys.readouterr().err
    assert (tmp_path / SOURCE).read_text() == written
    assert main(["check-config"]) == 0
    assert capsys.readouterr().out.startswith(f"{SOURCE}: OK")


# --------------------------------------------------------------------------- suppression


def _finding(detector: str = "spikes", metric: str = "train/loss", start: int = 10) -> Finding:
    return Finding(detector, "t", Severity.ERROR, metric, start, start + 5, "m", id="F1")


def test_ignore_rule_matching() -> None:
    rule = IgnoreRule("spikes", "why", metric="train/*", steps=(0, 100), path="runs/**")
    assert rule.matches(_finding(), "runs/a/log.csv")
    assert not rule.matches(_finding(detector="plateau"), "runs/a/log.csv")
    assert not rule.matches(_finding(metric="eval/loss"), "runs/a/log.csv")
    assert not rule.matches(_finding(start=98), "runs/a/log.csv"), "must lie within the range"
    assert not rule.matches(_finding(), "other/log.csv")
    assert IgnoreRule("*", "why").matches(_finding(detector="anything"), "x")


def test_suppressed_findings_are_marked_not_hidden() -> None:
    run = Run(metrics={}, source_format="csv", source_path="runs/a.csv")
    analysis = Analysis(run, [_finding(), _finding("plateau")], [], ["spikes", "plateau"])
    config = dataclasses.replace(Config(), ignore=(IgnoreRule("spikes", "known bad shard"),))
    result = config.suppress(analysis)
    assert [f.suppressed for f in result.findings] == ["known bad shard", None]
    assert len(result.findings) == 2
    assert result.counts()["error"] == 1


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("runs/**", "runs/a/b/c.csv", True),
        ("runs/*", "runs/a", True),
        ("runs/*", "runs/a/events", True),  # a folder pattern covers what is inside
        ("**/trainer_state.json", "trainer_state.json", True),
        ("**/trainer_state.json", "out/checkpoint-5/trainer_state.json", True),
        ("*.csv", "a/b.csv", False),
        ("logs/[ab].csv", "logs/a.csv", True),
        ("logs/[!ab].csv", "logs/a.csv", False),
        ("./logs/*.csv", "logs/x.csv", True),
    ],
)
def test_path_globs(pattern: str, path: str, expected: bool) -> None:
    assert path_matches(pattern, path) is expected


def test_module_regenerates_schema_and_readme(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold\n{README_END}\nrest\n")
    text = config_module.replace_readme_reference(readme.read_text(), "NEW\n")
    assert text == f"intro\n{README_START}\n\nNEW\n\n{README_END}\nrest\n"
