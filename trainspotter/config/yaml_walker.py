"""The YAML walker under `.trainspotter.yml`: typed reads of PyYAML nodes that name the
file, the line and the key in every error.

`compose` turns the text into PyYAML's node tree (`yaml.compose`) after refusing what a
settings file never needs and a hostile one could abuse (nesting deeper than `MAX_DEPTH`,
tags outside YAML's core schema, `<<:` merge keys); a YAML syntax error becomes a
`ConfigError` with its line. `YamlWalker` reads the nodes (a string, a choice, a glob, a
list, a value of a `Params` field's type hint) and raises, or records and goes on, with
file:line:key. It knows no setting: `parse.py` and `compare_keys.py` say which keys
there are and what each must hold.
"""

from __future__ import annotations

import contextlib
import math
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import yaml

from trainspotter.config.params import describe_type
from trainspotter.config.settings import ConfigError, ConfigErrors, glob_problem
from trainspotter.errors import did_you_mean

_TAG_NAMES = {
    "tag:yaml.org,2002:str": "a string",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "true/false",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
}


def line_of(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def kind_of(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return _TAG_NAMES.get(str(node.tag), "a tagged value")


def suggest(word: str, choices: Sequence[str]) -> str:
    return did_you_mean(word, tuple(choices))


class YamlWalker:
    """Reads the composed YAML tree node by node, raising (or recording) errors that name
    file:line:key."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.constructor = yaml.constructor.SafeConstructor()
        self.errors: list[ConfigError] = []
        """Every mistake found so far: check-config lists them all in one run."""

    def fail(self, node: yaml.Node | None, key: str, problem: str) -> typing.NoReturn:
        raise ConfigError(self.source, line_of(node) if node is not None else None, key, problem)

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
            self.fail(node, key, f"expected a mapping, got {kind_of(node)}")
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            name = self.scalar(key_node)
            full = f"{key}.{name}" if key else str(name)
            if not isinstance(name, str):
                self.note(key_node, full, f"keys must be strings, got {kind_of(key_node)}")
            elif name in entries:
                self.note(
                    key_node, full, f"duplicate key (first at line {line_of(entries[name][0])})"
                )
            elif allowed is not None and name not in allowed:
                hint = suggest(name, allowed)
                self.note(
                    key_node, full, f"unknown key{hint or ' (one of: ' + ', '.join(allowed) + ')'}"
                )
            else:
                entries[name] = (key_node, value_node)
        return entries

    def string(self, node: yaml.Node, key: str, *, nonempty: bool = True) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or str(node.tag) != "tag:yaml.org,2002:str":
            self.fail(node, key, f"expected a string, got {kind_of(node)}")
        if nonempty and not value.strip():
            self.fail(node, key, "must not be empty")
        return value

    def boolean(self, node: yaml.Node, key: str) -> bool:
        value = self.scalar(node)
        if not isinstance(value, bool):
            self.fail(node, key, f"expected true or false, got {kind_of(node)}")
        return value

    def choice(self, node: yaml.Node, key: str, choices: Sequence[str]) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or value not in choices:
            shown = repr(value) if isinstance(value, str) else kind_of(node)
            hint = suggest(value, choices) if isinstance(value, str) else ""
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
            self.fail(node, key, f"expected a list of strings, got {kind_of(node)}")
        return tuple(item(child, f"{key}[{i}]") for i, child in enumerate(node.value))

    def typed(self, node: yaml.Node, key: str, hint: Any) -> Any:
        """A value checked against a Params field's type hint."""
        ok, value = self._typed(node, hint)
        if not ok:
            self.fail(node, key, f"expected {describe_type(hint)}, got {kind_of(node)}")
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


# --------------------------------------------------------------------------- composing

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
                source, line, "", f"tag {quoted(tag)} is not allowed (plain YAML values only)"
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
                        source, line_of(key_node), "", "merge keys (<<) are not supported"
                    )
                pending += [key_node, value_node]
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value


def _code_point(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character[:1] or "\0")


def quoted(text: str) -> str:
    """`text` in quotes with every control character escaped, so a message stays one line."""
    return ascii(text) if not text.isprintable() else repr(text)


def compose(text: str, source: str) -> yaml.Node | None:
    """The document's node tree (None for an empty one), after the checks above; a YAML
    error is a ConfigError naming its line."""
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
    if root is not None:
        _check_merge_keys(root, source)
    return root


__all__ = [
    "MAX_DEPTH",
    "MAX_INT",
    "YamlWalker",
    "compose",
    "kind_of",
    "line_of",
    "quoted",
    "suggest",
]
