"""A detector's documentation (its docstring, light Markdown) as terminal text.

`trainspotter explain ID` prints it. The docstring is written for the code's readers and
the generated docs: `**bold**` headings, `code` spans, numbered lists, and references to
the functions that implement a step (`stats.noise_scale`). For a terminal the emphasis
marks go (bold stays, in colour), paragraphs and list items are re-wrapped to the width,
and internal names are not shown: a parenthesis that only names functions is dropped,
another internal name is said in words (`stats.noise_scale` -> "noise scale").
"""

from __future__ import annotations

import re

from trainspotter.report import wording

_BOLD, _RESET = "\x1b[1m", "\x1b[0m"
# A code span naming code rather than a value or a file: `stats.noise_scale`,
# `rise._rising`, `stuck.py`, `meta["max_steps"]`.
_INTERNAL = re.compile(
    r"`(?:meta\[\"(?P<key>\w+)\"\]|[a-z_]+\.(?P<func>_?[a-z_][a-z0-9_]*)|(?P<file>[a-z_]+)\.py)`"
)
_FILE_SUFFIXES = ("json", "jsonl", "csv", "yml", "yaml", "txt", "md")
# A parenthesis holding only internal names (and "see", commas): "(`stats.episodes`)".
_ONLY_INTERNAL = re.compile(r"\s*\((?:see\s+)?`[^`()]+`(?:,\s*`[^`()]+`)*\)")
_LIST_ITEM = re.compile(r"^(\s*)(\d+\.|[-*])\s+")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:[^*\n]*?\S)?)\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")


def _is_internal(span: str) -> bool:
    match = _INTERNAL.fullmatch(span)
    if match is None:
        return False
    func = match.group("func")
    return not (func and func in _FILE_SUFFIXES)


def _words(match: re.Match[str]) -> str:
    name = match.group("key") or match.group("func") or match.group("file") or ""
    return name.strip("_").replace("_", " ")


def _without_internal_names(text: str) -> str:
    def drop_parenthesis(match: re.Match[str]) -> str:
        spans = re.findall(r"`[^`]+`", match.group())
        return "" if all(_is_internal(s) for s in spans) else match.group()

    def say(match: re.Match[str]) -> str:
        return _words(match) if _is_internal(match.group()) else match.group()

    return _INTERNAL.sub(say, _ONLY_INTERNAL.sub(drop_parenthesis, text))


def inline_text(text: str, color: bool = False) -> str:
    """One paragraph's Markdown as plain text: no internal names, no `*` or backticks,
    bold in colour when `color`."""
    text = _without_internal_names(text)
    text = _STRONG.sub(lambda m: f"{_BOLD}{m.group(1)}{_RESET}" if color else m.group(1), text)
    text = _EMPHASIS.sub(r"\1", text)
    return _CODE.sub(r"\1", text)


def _items(block: str) -> list[tuple[str, str]]:
    """A paragraph's list items as (marker, text); a plain paragraph is one item."""
    items: list[tuple[str, str]] = []
    for line in block.splitlines():
        match = _LIST_ITEM.match(line)
        if match or not items:
            marker = match.group(0).strip() if match else ""
            items.append((marker, line[match.end() :] if match else line.strip()))
        else:
            marker, text = items[-1]
            items[-1] = (marker, f"{text} {line.strip()}")
    return items


def render_doc(markdown: str, width: int, color: bool = False) -> str:
    """The docstring re-wrapped to `width` for a terminal (see the module docstring)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", markdown.strip()):
        if out:
            out.append("")
        for marker, text in _items(block):
            plain = inline_text(text, color=False)
            indent = " " * (len(marker) + 1) if marker else ""
            first = f"{marker} " if marker else ""
            lines = wording.wrap(plain, width, indent, first_indent=first)
            # Bold after wrapping, so escape codes never count towards the width.
            for strong in _STRONG.findall(text) if color else ():
                shown = inline_text(strong)
                lines = [line.replace(shown, f"{_BOLD}{shown}{_RESET}", 1) for line in lines]
            out.extend(lines)
    return "\n".join(out) + "\n"


__all__ = ["inline_text", "render_doc"]
