"""Reading `.trainspotter.yml`: the YAML walker, `parse_config` and `load_config`.

The file is read with PyYAML's node API (`yaml.compose`), so every error names the file,
the line and the key: `.trainspotter.yml:12: detectors.<id>.z_treshold: unknown
parameter (did you mean 'z_threshold'?)`. The detector section is validated against the
live `DETECTORS` registry and each detector's parameters as `params.py` describes them
(types, ranges, `min_X` <= `max_X`), so this module names no detector.

One module over ~500 lines on purpose: the YAML walker is one class whose checks share
its position tracking (every error names file:line) and its guards against hostile YAML.
"""

from __future__ import annotations

import contextlib
import math
import posixpath
import re
import stat
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml

from trainspotter.config.compare_keys import parse_baseline, parse_rules
from trainspotter.config.params import (
    describe_type,
    detector_params,
    is_number,
    pair_problem,
    param_ranges,
)
from trainspotter.config.settings import (
    ARTIFACT_NAME_FORBIDDEN,
    CONFIG_NAMES,
    GATE_OUTPUTS,
    RESERVED_DETECTOR_KEYS,
    SEVERITY_LABELS,
    Config,
    ConfigError,
    ConfigErrors,
    DetectorSettings,
    IgnoreRule,
    ReportSettings,
    glob_problem,
)
from trainspotter.detectors import DETECTORS
from trainspotter.errors import did_you_mean
from trainspotter.model import Severity
from trainspotter.names import CANONICAL
from trainspotter.paths import shown_path
from trainspotter.readers import READERS

# --------------------------------------------------------------------------- YAML nodes

_TAG_NAMES = {
    "tag:yaml.org,2002:str": "a string",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "true/false",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
}


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return _TAG_NAMES.get(str(node.tag), "a tagged value")


def _suggest(word: str, choices: Sequence[str]) -> str:
    return did_you_mean(word, tuple(choices))


class _Parser:
    """Walks the composed YAML tree, building settings and raising precise errors."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.constructor = yaml.constructor.SafeConstructor()
        self.errors: list[ConfigError] = []
        """Every mistake found so far: check-config lists them all in one run."""

    def fail(self, node: yaml.Node | None, key: str, problem: str) -> typing.NoReturn:
        raise ConfigError(self.source, _line(node) if node is not None else None, key, problem)

    def note(self, node: yaml.Node | None, key: str, problem: str) -> None:
        """Record a mistake and go on (the caller skips the bad entry)."""
        with self.collecting():
            self.fail(node, key, problem)

    @contextlib.contextmanager
    def collecting(self) -> Iterator[None]:
        """Record a mistake raised inside and go on with the next entry: one bad value
        costs its own entry, not the rest of the file."""
        try:
            yield
        except ConfigError as exc:
            self.errors.append(exc)

    def raise_errors(self) -> None:
        """Raise every recorded mistake at once, sorted by line."""
        if self.errors:
            raise ConfigErrors(sorted(self.errors, key=lambda e: e.line or 0))

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return None
        return self.constructor.construct_object(node, deep=True)

    def check_int_range(self, node: yaml.Node, key: str, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INT:
            self.fail(node, key, f"integer out of range (at most {MAX_INT - 1} in magnitude)")

    def plain(self, node: yaml.Node) -> Any:
        """The node as plain Python data (lists, dicts, scalars)."""
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(item) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            return {str(self.scalar(k)): self.plain(v) for k, v in node.value}
        return self.scalar(node)

    def mapping(
        self, node: yaml.Node, key: str, allowed: Sequence[str] | None = None
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """A mapping's entries by key (key node, value node); unknown keys are errors when
        `allowed` is given; duplicate keys are always errors."""
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, key, f"expected a mapping, got {_kind(node)}")
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            name = self.scalar(key_node)
            full = f"{key}.{name}" if key else str(name)
            if not isinstance(name, str):
                self.note(key_node, full, f"keys must be strings, got {_kind(key_node)}")
            elif name in entries:
                self.note(
                    key_node, full, f"duplicate key (first at line {_line(entries[name][0])})"
                )
            elif allowed is not None and name not in allowed:
                hint = _suggest(name, allowed)
                self.note(
                    key_node, full, f"unknown key{hint or ' (one of: ' + ', '.join(allowed) + ')'}"
                )
            else:
                entries[name] = (key_node, value_node)
        return entries

    def string(self, node: yaml.Node, key: str, *, nonempty: bool = True) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or str(node.tag) != "tag:yaml.org,2002:str":
            self.fail(node, key, f"expected a string, got {_kind(node)}")
        if nonempty and not value.strip():
            self.fail(node, key, "must not be empty")
        return value

    def boolean(self, node: yaml.Node, key: str) -> bool:
        value = self.scalar(node)
        if not isinstance(value, bool):
            self.fail(node, key, f"expected true or false, got {_kind(node)}")
        return value

    def choice(self, node: yaml.Node, key: str, choices: Sequence[str]) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or value not in choices:
            shown = repr(value) if isinstance(value, str) else _kind(node)
            hint = _suggest(value, choices) if isinstance(value, str) else ""
            self.fail(node, key, f"{shown} is not one of {', '.join(choices)}{hint}")
        return value

    def glob(self, node: yaml.Node, key: str) -> str:
        pattern = self.string(node, key)
        problem = glob_problem(pattern)
        if problem:
            self.fail(node, key, f"invalid glob {pattern!r}: {problem}")
        return pattern

    def string_list(
        self, node: yaml.Node, key: str, item: Callable[[yaml.Node, str], str]
    ) -> tuple[str, ...]:
        """A list of strings; a single string is a list of one."""
        if isinstance(node, yaml.ScalarNode) and str(node.tag) == "tag:yaml.org,2002:str":
            return (item(node, key),)
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, key, f"expected a list of strings, got {_kind(node)}")
        return tuple(item(child, f"{key}[{i}]") for i, child in enumerate(node.value))

    def typed(self, node: yaml.Node, key: str, hint: Any) -> Any:
        """A value checked against a Params field's type hint."""
        ok, value = self._typed(node, hint)
        if not ok:
            self.fail(node, key, f"expected {describe_type(hint)}, got {_kind(node)}")
        for item in value if isinstance(value, list | tuple) else (value,):
            self.check_int_range(node, key, item)
        return value

    def _typed(self, node: yaml.Node, hint: Any) -> tuple[bool, Any]:
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if hint is Any:
            return True, self.plain(node)
        if origin in (typing.Union, types.UnionType):
            for arm in args:
                ok, value = self._typed(node, arm)
                if ok:
                    return True, value
            return False, None
        if hint is type(None):
            return (isinstance(node, yaml.ScalarNode) and self.scalar(node) is None), None
        if origin is Literal:
            value = self.scalar(node)
            return (value in args and not isinstance(value, dict | list)), value
        if origin in (tuple, list) or (origin is not None and origin in (Sequence,)):
            if not isinstance(node, yaml.SequenceNode):
                return False, None
            items = node.value
            if origin is tuple and args and args[-1] is not Ellipsis:
                if len(items) != len(args):
                    return False, None
                arms = list(args)
            else:
                arms = [args[0] if args else Any] * len(items)
            values = []
            for child, arm in zip(items, arms, strict=True):
                ok, value = self._typed(child, arm)
                if not ok:
                    return False, None
                values.append(value)
            return True, (list(values) if origin is list else tuple(values))
        if not isinstance(node, yaml.ScalarNode):
            return False, None
        value = self.scalar(node)
        if hint is bool:
            return isinstance(value, bool), value
        if hint is int:
            return (isinstance(value, int) and not isinstance(value, bool)), value
        if hint is float:
            good = isinstance(value, int | float) and not isinstance(value, bool)
            return good, _to_float(value) if good else None
        if hint is str:
            return (isinstance(value, str) and str(node.tag) == "tag:yaml.org,2002:str"), value
        return True, value  # a type we do not model: the detector's own checks apply


def _to_float(value: float) -> float:
    """A YAML number as a float; an integer too large for one is +-inf (so the range
    check reports it) rather than an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# --------------------------------------------------------------------------- parsing

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


MAX_DEPTH = 32
"""Deepest nesting of lists and mappings a config may use (the real schema needs 5);
deeper input is refused before PyYAML's recursive composer could overflow the stack."""
MAX_INT = 2**63
"""Integers at or beyond +-2**63 are refused: no setting means that much, and Python would
otherwise overflow when comparing them with float limits."""
_STANDARD_TAGS = frozenset([*_TAG_NAMES, "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map", "!"])


def _check_events(text: str, source: str) -> None:
    """Refuse, from PyYAML's event stream (iterative, so no recursion), nesting deeper
    than MAX_DEPTH and tags outside YAML's core schema (`!foo`, `!!python/...`)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = int(event.start_mark.line) + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(source, line, "", f"nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in _STANDARD_TAGS:
            raise ConfigError(
                source, line, "", f"tag {_quoted(tag)} is not allowed (plain YAML values only)"
            )


def _check_merge_keys(root: yaml.Node, source: str) -> None:
    """Refuse `<<:` merge keys: they hide where a setting comes from, and PyYAML's safe
    constructor does not apply them to the composed tree this parser walks."""
    pending = [root]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if str(key_node.tag) == "tag:yaml.org,2002:merge":
                    raise ConfigError(
                        source, _line(key_node), "", "merge keys (<<) are not supported"
                    )
                pending += [key_node, value_node]
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value


def _code_point(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character[:1] or "\0")


def _quoted(text: str) -> str:
    """`text` in quotes with every control character escaped, so a message stays one line."""
    return ascii(text) if not text.isprintable() else repr(text)


def parse_config(text: str, source: str = CONFIG_NAMES[0]) -> Config:
    """Validate a config file's text; raises ConfigError naming line and key."""
    try:
        _check_events(text, source)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(source, line, "", f"invalid YAML: {problem}") from None
    except yaml.reader.ReaderError as exc:
        raise ConfigError(
            source,
            None,
            "",
            f"invalid YAML: character U+{_code_point(exc.character):04X} is not allowed"
            f" (position {exc.position})",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, None, "", f"invalid YAML: {' '.join(str(exc).split())}") from None
    parser = _Parser(source)
    if root is None or (isinstance(root, yaml.ScalarNode) and parser.scalar(root) is None):
        return Config(source=source)
    _check_merge_keys(root, source)
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


def _parse_format(parser: _Parser, node: yaml.Node) -> dict[str, Any]:
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


def _parse_detectors(parser: _Parser, node: yaml.Node) -> dict[str, DetectorSettings]:
    out: dict[str, DetectorSettings] = {}
    for name, (key_node, value_node) in parser.mapping(node, "detectors").items():
        with parser.collecting():
            out[name] = _parse_detector(parser, name, key_node, value_node)
    return out


def _parse_detector(
    parser: _Parser, name: str, key_node: yaml.Node, value_node: yaml.Node
) -> DetectorSettings:
    """One `detectors.<id>` entry; a bad parameter is recorded and the others still read."""
    key = f"detectors.{name}"
    if name not in DETECTORS:
        known = list(DETECTORS)
        hint = _suggest(name, known) or f" (one of: {', '.join(known) or 'none registered'})"
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
                hint = _suggest(param, allowed) or f" (one of: {', '.join(allowed)})"
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


def _parse_metrics(parser: _Parser, node: yaml.Node) -> dict[str, str]:
    entries = parser.mapping(node, "metrics", ("aliases",))
    if "aliases" not in entries:
        return {}
    aliases: dict[str, str] = {}
    for raw, (_, value_node) in parser.mapping(entries["aliases"][1], "metrics.aliases").items():
        key = f"metrics.aliases.{raw}"
        with parser.collecting():
            target = parser.string(value_node, key)
            if target not in CANONICAL:
                hint = _suggest(target, CANONICAL) or f" (one of: {', '.join(CANONICAL)})"
                parser.fail(value_node, key, f"{_quoted(target)} is not a metric name{hint}")
            aliases[raw] = target
    return aliases


def _parse_steps(parser: _Parser, node: yaml.Node, key: str) -> tuple[int | None, int | None]:
    def bound(child: yaml.Node) -> int | None:
        value = parser.scalar(child)
        if value is None and isinstance(child, yaml.ScalarNode):
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            parser.fail(child, key, f"a step must be an integer or null, got {_kind(child)}")
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
    parser.fail(node, key, f"expected [first, last] or one step, got {_kind(node)}")


def _parse_ignore(parser: _Parser, node: yaml.Node) -> tuple[IgnoreRule, ...]:
    if not isinstance(node, yaml.SequenceNode):
        parser.fail(node, "ignore", f"expected a list of rules, got {_kind(node)}")
    rules: list[IgnoreRule] = []
    detectors = ["*", *DETECTORS]
    for index, item in enumerate(node.value):
        with parser.collecting():
            rules.append(_parse_ignore_rule(parser, item, f"ignore[{index}]", detectors))
    return tuple(rules)


def _parse_ignore_rule(
    parser: _Parser, item: yaml.Node, key: str, detectors: Sequence[str]
) -> IgnoreRule:
    entries = parser.mapping(item, key, IGNORE_KEYS)
    for required in ("detector", "reason"):
        if required not in entries:
            parser.fail(item, key, f"missing {required!r} (every rule names a detector and why)")
    detector = parser.scalar(entries["detector"][1])
    if not isinstance(detector, str) or detector not in detectors:
        shown = repr(detector) if isinstance(detector, str) else _kind(entries["detector"][1])
        hint = _suggest(detector, detectors) if isinstance(detector, str) else ""
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
        line=_line(item),
    )
    return rule


def _parse_report(parser: _Parser, node: yaml.Node) -> ReportSettings:
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
                f"characters not allowed in an artifact name: {' '.join(map(_quoted, bad))}",
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
