"""Parsing the comparison keys of `.trainspotter.yml`: `baseline:` and `rules:`.

`baseline: runs/main/trainer_state.json` names the stored run the gate compares every
log with (as `trainspotter compare LOG --baseline PATH` does); `rules:` lists absolute
bounds on final values (`{metric: eval/loss, max: 0.35}`). Kept beside `parse.py` (which
calls these with its YAML walker) so that file stays about the core settings.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import yaml

from trainspotter.compare.rules import ThresholdRule

if TYPE_CHECKING:
    from trainspotter.config.yaml_walker import YamlWalker

RULE_KEYS = ("metric", "max", "min")


def parse_baseline(parser: YamlWalker, node: yaml.Node) -> str | None:
    """The baseline log's path (a file or folder, relative to the working folder); null
    is no baseline."""
    if isinstance(node, yaml.ScalarNode) and parser.scalar(node) is None:
        return None
    path = parser.string(node, "baseline")
    if "\x00" in path:
        parser.fail(node, "baseline", "contains a NUL character")
    return path


def _bound(parser: YamlWalker, node: yaml.Node, key: str) -> float:
    value = parser.scalar(node)
    if not isinstance(value, int | float) or isinstance(value, bool):
        parser.fail(node, key, "expected a number")
    parser.check_int_range(node, key, value)
    number = float(value)
    if not math.isfinite(number):
        parser.fail(node, key, "must be a finite number")
    return number


def parse_rules(parser: YamlWalker, node: yaml.Node) -> tuple[ThresholdRule, ...]:
    """`rules:`: a list of `{metric, max, min}` with a metric and at least one bound."""
    if not isinstance(node, yaml.SequenceNode):
        parser.fail(node, "rules", "expected a list of rules ({metric: ..., max: ...})")
    rules: list[ThresholdRule] = []
    for index, item in enumerate(node.value):
        key = f"rules[{index}]"
        entries = parser.mapping(item, key, RULE_KEYS)
        if "metric" not in entries:
            parser.fail(item, key, "missing 'metric' (every rule names the metric it bounds)")
        if "max" not in entries and "min" not in entries:
            parser.fail(item, key, "needs 'max', 'min' or both")
        bounds = {
            b: _bound(parser, entries[b][1], f"{key}.{b}") for b in ("max", "min") if b in entries
        }
        low, high = bounds.get("min"), bounds.get("max")
        if low is not None and high is not None and low > high:
            parser.fail(entries["min"][1], f"{key}.min", f"min {low:g} is above max {high:g}")
        rules.append(
            ThresholdRule(
                metric=parser.string(entries["metric"][1], f"{key}.metric"),
                max=high,
                min=low,
                line=int(item.start_mark.line) + 1,
            )
        )
    return tuple(rules)
