"""Is a file printed training output? The stdout reader's sniff (`readers/stdout.py`),
kept apart so that module stays the reading rules."""

from __future__ import annotations

from pathlib import Path

from trainspotter.readers._files import first_line
from trainspotter.readers._holes import head_after_hole
from trainspotter.readers._stdout_line import SEGMENTS, clean
from trainspotter.readers._stdout_shapes import ShapeParser

SCORE = 60
"""Above the generic CSV sniff (30: a nanoGPT line has commas) and a non-JSON `{` document
(20: an HF dict line starts with `{`), below every structured format (JSON Lines 70 and up),
so a file another reader can parse is never taken."""

SNIFF_LINES = 400
DEEP_SNIFF_BYTES = 1024 * 1024
"""A file whose head holds no progress line is read this far for two of them: scripts print
a config, prompts or a dataset-loading progress (`Scan 100/4541...`, thousands of short
lines) before the first training line. The cost, paid only by a file whose head is not
recognised, is one pass of the line parser over at most this much text."""


def sniff_printed_output(path: Path, head: str) -> int:
    """SCORE when the file's head (or, after a long preamble, its first MiB) holds
    progress lines and is not JSON, else 0."""
    return sniff_text(head) or _sniff_further(path, head)


def sniff_text(head: str, max_lines: int | None = SNIFF_LINES) -> int:
    """SCORE when the head of a file holds a progress line and is not JSON, else 0 (only
    its first `max_lines` lines are looked at; None: all)."""
    if "\x00" in head:
        return 0
    start = first_line(head).strip("\ufeff \t\r")
    if start in ("{", "[") or start.startswith(('{"', "[{", '["', "[[")):
        return 0  # JSON (Lines) and JSON documents belong to their own readers
    lines = head.split("\n")
    if len(lines) > 1:
        lines = lines[:-1]  # the head's last line may be cut
    # Two progress lines, or one in a tiny file: a document that mentions a loss once in
    # a sentence (a README, a report) is not a training log.
    found = seen = 0
    parser = ShapeParser()
    for line in lines[:max_lines]:
        for segment in SEGMENTS.split(clean(line)):
            if segment.strip():
                seen += 1
                found += parser.parse(segment) is not None
            if found >= 2:
                return SCORE
    return SCORE if found and seen <= 2 else 0


def _sniff_further(path: Path, head: str) -> int:
    """Two progress lines anywhere in the file's first DEEP_SNIFF_BYTES, when its head had
    none: a long preamble printed before training starts (a prompt or config dump, a
    dataset-loading progress)."""
    try:
        with path.open("rb") as fh:
            raw, _ = head_after_hole(fh, DEEP_SNIFF_BYTES)  # as `read` reads it
    except OSError:
        return 0
    whole_head_seen = head.count("\n") < SNIFF_LINES
    if whole_head_seen and len(raw) <= len(head.encode("utf-8", errors="replace")):
        return 0  # the head was the whole file, and every line of it was looked at
    return sniff_text(raw.decode("utf-8", errors="replace"), max_lines=None)
