"""Reading `.trainspotter.yml`: which keys there are and what each must hold,
`parse_config` and `load_config`.

The file is read with PyYAML's node API (`yaml_walker.py`), so every error names the file,
the line and the key: `.trainspotter.yml:12: detectors.<id>.z_treshold: unknown
parameter (did you mean 'z_threshold'?)`. The detector section is validated against the
live `DETECTORS` registry and each detector's parameters as `params.py` describes them
(types, ranges, `min_X` <= `max_X`), so this module names no detector.
"""

from __future__ import annotations

import posixpath
import re
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from trainspotter.config.compare_keys import parse_baseline, parse_rules
from trainspotter.config.params import detector_params, is_number, pair_problem, param_ranges
from trainspotter.config.settings import (
    ARTIFACT_NAME_FORBIDDEN,
    CONFIG_NAMES,
    GATE_OUTPUTS,
    RESERVED_DETECTOR_KEYS,
    SEVERITY_LABELS,
    Config,
    ConfigError,
    DetectorSettings,
    IgnoreRule,
    ReportSettings,
    glob_problem,
)
from trainspotter.config.yaml_walker import (
    YamlWalker,
    compose,
    kind_of,
    line_of,
    quoted,
    suggest,
)
from trainspotter.detectors import DETECTORS
from trainspotter.model import Severity
from trainspotter.names import CANONICAL
from trainspotter.paths import shown_path
from trainspotter.readers import READERS

TOP_LEVEL_KEYS = (
    "paths",
    "format",
    "fail_on",
    "allow_empty",
    "detectors",
    "metrics",
    "ignore",
    "report",
    "baseline",
    "rules",
)
IGNORE_KEYS = ("detector", "metric", "steps", "path", "reason")
REPORT_KEYS = ("outputs", "directory", "artifact_name", "comment")


def parse_config(text: str, source: str = CONFIG_NAMES[0]) -> Config:
    """Validate a config file's text; raises ConfigError naming line and key."""
    root = compose(text, source)
    parser = YamlWalker(source)
    if root is None or (isinstance(root, yaml.ScalarNode) and parser.scalar(root) is None):
        return Config(source=source)
    top = parser.mapping(root, "", TOP_LEVEL_KEYS)
    settings: dict[str, Any] = {"source": source}
    sections: dict[str, Callable[[yaml.Node], dict[str, Any]]] = {
        "paths": lambda n: {"paths": parser.string_list(n, "paths", parser.glob)},
        "format": lambda n: _parse_format(parser, n),
        "fail_on": lambda n: {
            "fail_on": Severity.parse(parser.choice(n, "fail_on", SEVERITY_LABELS))
        },
        "allow_empty": lambda n: {"allow_empty": parser.boolean(n, "allow_empty")},
        "detectors": lambda n: {"detectors": _parse_detectors(parser, n)},
        "metrics": lambda n: {"aliases": _parse_metrics(parser, n)},
        "ignore": lambda n: {"ignore": _parse_ignore(parser, n)},
        "report": lambda n: {"report": _parse_report(parser, n)},
        "baseline": lambda n: {"baseline": parse_baseline(parser, n)},
        "rules": lambda n: {"rules": parse_rules(parser, n)},
    }
    for key, parse_section in sections.items():
        if key in top:
            with parser.collecting():
                settings.update(parse_section(top[key][1]))
    parser.raise_errors()
    return Config(**settings)


def _parse_format(parser: YamlWalker, node: yaml.Node) -> dict[str, Any]:
    readers = list(READERS)
    if isinstance(node, yaml.ScalarNode):
        if parser.scalar(node) is None:
            return {}
        return {"format": parser.choice(node, "format", readers)}
    formats: dict[str, str] = {}
    for pattern, (key_node, value_node) in parser.mapping(node, "format").items():
        problem = glob_problem(pattern)
        if problem:
            parser.fail(key_node, f"format.{pattern}", f"invalid glob: {problem}")
        formats[pattern] = parser.choice(value_node, f"format.{pattern}", readers)
    return {"formats": formats}


def _parse_detectors(parser: YamlWalker, node: yaml.Node) -> dict[str, DetectorSettings]:
    out: dict[str, DetectorSettings] = {}
    for name, (key_node, value_node) in parser.mapping(node, "detectors").items():
        with parser.collecting():
            out[name] = _parse_detector(parser, name, key_node, value_node)
    return out


def _parse_detector(
    parser: YamlWalker, name: str, key_node: yaml.Node, value_node: yaml.Node
) -> DetectorSettings:
    """One `detectors.<id>` entry; a bad parameter is recorded and the others still read."""
    key = f"detectors.{name}"
    if name not in DETECTORS:
        known = list(DETECTORS)
        hint = suggest(name, known) or f" (one of: {', '.join(known) or 'none registered'})"
        parser.fail(key_node, key, f"unknown detector{hint}")
    if isinstance(value_node, yaml.ScalarNode) and isinstance(parser.scalar(value_node), bool):
        # `<id>: false` is shorthand for `<id>: {enabled: false}`.
        return DetectorSettings(enabled=parser.scalar(value_node))
    specs = {s.name: s for s in detector_params(name)}
    ranges = param_ranges(name)
    allowed = [*RESERVED_DETECTOR_KEYS, *specs]
    enabled, severity = True, None
    values: dict[str, Any] = {}
    nodes: dict[str, yaml.Node] = {}
    for param, (param_key, param_value) in parser.mapping(value_node, key).items():
        full = f"{key}.{param}"
        with parser.collecting():
            if param == "enabled":
                enabled = parser.boolean(param_value, full)
            elif param == "severity":
                if isinstance(param_value, yaml.ScalarNode) and parser.scalar(param_value) is None:
                    severity = None
                else:
                    severity = Severity.parse(parser.choice(param_value, full, SEVERITY_LABELS))
            elif param in specs:
                value = parser.typed(param_value, full, specs[param].hint)
                limits = ranges.get(param)
                problem = limits.problem(value) if limits and is_number(value) else None
                if problem:
                    parser.fail(param_value, full, problem)
                values[param], nodes[param] = value, param_value
            else:
                hint = suggest(param, allowed) or f" (one of: {', '.join(allowed)})"
                parser.fail(param_key, full, f"unknown parameter{hint}")
    pair = pair_problem(name, values)
    if pair is not None:
        param, problem = pair
        parser.fail(nodes[param], f"{key}.{param}", problem)
    params = None
    if values:
        try:
            params = DETECTORS[name].Params(**values)
        except (TypeError, ValueError) as exc:
            parser.fail(value_node, key, f"invalid parameters: {exc}")
    return DetectorSettings(enabled=enabled, severity=severity, params=params)


def _parse_metrics(parser: YamlWalker, node: yaml.Node) -> dict[str, str]:
    entries = parser.mapping(node, "metrics", ("aliases",))
    if "aliases" not in entries:
        return {}
    aliases: dict[str, str] = {}
    for raw, (_, value_node) in parser.mapping(entries["aliases"][1], "metrics.aliases").items():
        key = f"metrics.aliases.{raw}"
        with parser.collecting():
            target = parser.string(value_node, key)
            if target not in CANONICAL:
                hint = suggest(target, CANONICAL) or f" (one of: {', '.join(CANONICAL)})"
                parser.fail(value_node, key, f"{quoted(target)} is not a metric name{hint}")
            aliases[raw] = target
    return aliases


def _parse_steps(parser: YamlWalker, node: yaml.Node, key: str) -> tuple[int | None, int | None]:
    def bound(child: yaml.Node) -> int | None:
        value = parser.scalar(child)
        if value is None and isinstance(child, yaml.ScalarNode):
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            parser.fail(child, key, f"a step must be an integer or null, got {kind_of(child)}")
        parser.check_int_range(child, key, value)
        return value

    if isinstance(node, yaml.SequenceNode):
        if len(node.value) != 2:
            parser.fail(node, key, "expected [first, last] (two steps; null for open-ended)")
        low, high = bound(node.value[0]), bound(node.value[1])
        if low is not None and high is not None and low > high:
            parser.fail(node, key, f"first step {low} is after last step {high}")
        return low, high
    if isinstance(node, yaml.ScalarNode) and isinstance(parser.scalar(node), int):
        step = bound(node)
        return step, step
    parser.fail(node, key, f"expected [first, last] or one step, got {kind_of(node)}")


def _parse_ignore(parser: YamlWalker, node: yaml.Node) -> tuple[IgnoreRule, ...]:
    if not isinstance(node, yaml.SequenceNode):
        parser.fail(node, "ignore", f"expected a list of rules, got {kind_of(node)}")
    rules: list[IgnoreRule] = []
    detectors = ["*", *DETECTORS]
    for index, item in enumerate(node.value):
        with parser.collecting():
            rules.append(_parse_ignore_rule(parser, item, f"ignore[{index}]", detectors))
    return tuple(rules)


def _parse_ignore_rule(
    parser: YamlWalker, item: yaml.Node, key: str, detectors: Sequence[str]
) -> IgnoreRule:
    entries = parser.mapping(item, key, IGNORE_KEYS)
    for required in ("detector", "reason"):
        if required not in entries:
            parser.fail(item, key, f"missing {required!r} (every rule names a detector and why)")
    detector = parser.scalar(entries["detector"][1])
    if not isinstance(detector, str) or detector not in detectors:
        shown = repr(detector) if isinstance(detector, str) else kind_of(entries["detector"][1])
        hint = suggest(detector, detectors) if isinstance(detector, str) else ""
        parser.fail(
            entries["detector"][1],
            f"{key}.detector",
            f"unknown detector {shown}{hint or ' (a detector id or *)'}",
        )
    rule = IgnoreRule(
        detector=detector,
        reason=parser.string(entries["reason"][1], f"{key}.reason"),
        metric=parser.string(entries["metric"][1], f"{key}.metric")
        if "metric" in entries
        else None,
        steps=_parse_steps(parser, entries["steps"][1], f"{key}.steps")
        if "steps" in entries
        else (None, None),
        path=parser.glob(entries["path"][1], f"{key}.path") if "path" in entries else None,
        line=line_of(item),
    )
    return rule


def _parse_report(parser: YamlWalker, node: yaml.Node) -> ReportSettings:
    entries = parser.mapping(node, "report", REPORT_KEYS)
    settings: dict[str, Any] = {}
    if "outputs" in entries:

        def output(child: yaml.Node, key: str) -> str:
            return parser.choice(child, key, GATE_OUTPUTS)

        settings["outputs"] = tuple(
            dict.fromkeys(parser.string_list(entries["outputs"][1], "report.outputs", output))
        )
    if "directory" in entries:
        value_node = entries["directory"][1]
        directory = parser.string(value_node, "report.directory")
        if "\x00" in directory:
            parser.fail(value_node, "report.directory", "contains a NUL character")
        problem = report_directory_problem(directory)
        if problem:
            parser.fail(value_node, "report.directory", problem)
        settings["directory"] = directory
    if "artifact_name" in entries:
        value_node = entries["artifact_name"][1]
        name = parser.string(value_node, "report.artifact_name")
        bad = sorted(set(name) & set(ARTIFACT_NAME_FORBIDDEN))
        if bad:
            parser.fail(
                value_node,
                "report.artifact_name",
                f"characters not allowed in an artifact name: {' '.join(map(quoted, bad))}",
            )
        settings["artifact_name"] = name
    if "comment" in entries:
        settings["comment"] = parser.boolean(entries["comment"][1], "report.comment")
    return ReportSettings(**settings)


def report_directory_problem(directory: str) -> str | None:
    """Why a config's report folder may not be used: it must be a relative path inside the
    working folder (a repository's config must not point the gate's writes elsewhere)."""
    posix = directory.replace("\\", "/")
    if posix.startswith("/") or re.match(r"[A-Za-z]:", posix):
        return "must be a relative path inside the working folder, not an absolute path"
    if ".." in posixpath.normpath(posix).split("/"):
        return "must lie inside the working folder (no '..' out of it)"
    return None


def find_config(folder: Path) -> Path | None:
    """The config file in `folder` (`.trainspotter.yml` or `.trainspotter.yaml`), or None."""
    for name in CONFIG_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def load_config(path: str | Path | None = None, *, folder: Path | None = None) -> Config:
    """The config at `path` (an error if missing), else the one found in `folder`
    (default: the working folder), else the defaults."""
    if path is None:
        found = find_config(folder or Path.cwd())
        if found is None:
            return Config()
        target, display = found, shown_path(found)
    else:
        target, display = Path(path), str(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        raise ConfigError(display, None, "", "no such config file") from None
    except OSError as exc:
        raise ConfigError(display, None, "", f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(display, None, "", "is a folder, not a config file")
    if not stat.S_ISREG(mode):  # a FIFO or a device would block or never end
        raise ConfigError(display, None, "", "not a regular file (a FIFO or a device)")
    try:
        text = target.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(display, None, "", f"not UTF-8 text (byte offset {exc.start})") from None
    except OSError as exc:
        raise ConfigError(display, None, "", f"cannot read: {exc.strerror or exc}") from None
    return parse_config(text, display)


__all__ = [
    "IGNORE_KEYS",
    "REPORT_KEYS",
    "TOP_LEVEL_KEYS",
    "find_config",
    "load_config",
    "parse_config",
]
