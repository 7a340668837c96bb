"""The commented `.trainspotter.yml` that `trainspotter init` writes
(`default_config_yaml`): every key with its default, worded as the JSON Schema words it
(`schema.DESCRIPTIONS` and each parameter's docstring).
"""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

from trainspotter.config.params import detector_params
from trainspotter.config.schema import DESCRIPTIONS, json_default
from trainspotter.config.settings import Config
from trainspotter.detectors import DETECTORS
from trainspotter.readers import READERS


def _yaml_value(value: Any) -> str:
    """A default value in YAML flow style, on one line."""
    if isinstance(value, tuple):
        value = list(value)
    text: str = yaml.safe_dump(value, default_flow_style=True, width=10_000, allow_unicode=True)
    return text.strip().removesuffix("...").strip()


def _comment(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text, width=88, initial_indent=f"{indent}# ", subsequent_indent=f"{indent}# "
    )


def default_config_yaml() -> str:
    """A commented `.trainspotter.yml` holding every default (what `init` writes)."""
    lines = [
        "# trainspotter configuration: every key is shown with its default value.",
        "# Check it with `trainspotter check-config`. JSON Schema for editors:",
        "# trainspotter/schemas/config.schema.json in the installed package.",
        "",
    ]
    defaults = Config()
    lines += _comment(DESCRIPTIONS["paths"], "")
    lines += [
        "# e.g. paths: ['output/**/trainer_state.json', 'runs/*', 'logs/**/metrics.csv']",
        f"paths: {_yaml_value(list(defaults.paths))}",
        "",
    ]
    lines += _comment(DESCRIPTIONS["format"] + " Readers: " + ", ".join(READERS) + ".", "")
    lines += ["# e.g. format: {'legacy/**/*.log': jsonl}", "format: null", ""]
    lines += _comment(DESCRIPTIONS["fail_on"] + " One of: info, warning, error.", "")
    lines += [f"fail_on: {defaults.fail_on.label}", ""]
    lines += _comment(DESCRIPTIONS["allow_empty"], "")
    lines += [f"allow_empty: {_yaml_value(defaults.allow_empty)}", ""]
    lines += ["metrics:"]
    lines += _comment(DESCRIPTIONS["metrics.aliases"], "  ")
    lines += ["  # e.g. aliases: {my_loss: train/loss}", "  aliases: {}", ""]
    lines += _comment(DESCRIPTIONS["ignore"], "")
    lines += [
        "# e.g.",
        "# ignore:",
        f"#   - detector: {next(iter(DETECTORS), '*')}",
        "#     metric: train/loss",
        "#     steps: [1200, 1300]",
        "#     reason: known bad shard, re-shuffled in run 42",
        "ignore: []",
        "",
    ]
    lines += _comment(DESCRIPTIONS["baseline"], "")
    lines += ["# e.g. baseline: baselines/main/trainer_state.json", "baseline: null", ""]
    lines += _comment(DESCRIPTIONS["rules"], "")
    lines += ["# e.g. rules: [{metric: eval/loss, max: 0.35}, {metric: eval/accuracy, min: 0.9}]"]
    lines += ["rules: []", ""]
    lines += ["report:"]
    report = defaults.report
    for key, value in (
        ("outputs", list(report.outputs)),
        ("directory", report.directory),
        ("artifact_name", report.artifact_name),
        ("comment", report.comment),
    ):
        lines += _comment(DESCRIPTIONS[f"report.{key}"], "  ")
        lines.append(f"  {key}: {_yaml_value(value)}")
    lines += [""]
    lines += _comment(DESCRIPTIONS["detectors"], "")
    if not DETECTORS:
        lines.append("detectors: {}")
    else:
        lines.append("detectors:")
    for name, detector in DETECTORS.items():
        lines += _comment(detector.summary, "  ")
        lines.append(f"  {name}:")
        lines.append("    enabled: true")
        lines.append("    severity: null  # null: the detector's own severity")
        for spec in detector_params(name):
            if spec.doc:
                lines += _comment(spec.doc, "    ")
            lines.append(f"    {spec.name}: {_yaml_value(json_default(spec.default))}")
    return "\n".join(lines) + "\n"


__all__ = ["default_config_yaml"]
