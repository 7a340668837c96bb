"""A large `trainer_state.json` read piece by piece: its `log_history` parsed in chunks of
entries straight into columns, so the million dicts of a whole-document parse (~350 MB
beside the text) never exist at once.

The document is split into the text before the `log_history` array, the array, and the
text after it; each part is checked rather than trusted:

- the top level is the document with the array replaced by `[]`, parsed by
  `parse_state` (orjson, json where they could differ). The split is accepted only when
  that parses to an object whose `log_history` is `[]`, the key `"log_history"` occurs
  once outside the array and no backslash is in the text around it (so no escaped spelling
  of the key hides another one): the array cut out is then the document's `log_history`;
- the array is cut after a `},` about every `CHUNK_BYTES`, and each chunk, wrapped in
  brackets, must parse as a list of entries (orjson, json for what orjson rejects, such
  as the `NaN` tokens the Trainer writes, or where a step may have been widened): a cut
  inside an entry makes a chunk that does not parse, so the next `},` is tried. Chunks
  that parse, joined by the commas cut at, are the array.

Once a chunk parsed this way has fixed the column order of its keys
(`HistoryColumns.settled`), later chunks holding only such keys are decoded by msgspec
straight into typed columns (`_trainer_state_typed.py`, ~2x faster, no dict per entry);
a chunk it refuses (a new key, a NaN token, a null, a run summary...) takes the path
above. Each chunk's entries go to `HistoryColumns` and are dropped. Whatever is unusual (no
orjson, a non-dict entry, a shape the columns do not take, text that does not split
cleanly, no entries) returns None: `hf.py` then reads the document whole, which also
gives the error messages.
"""

from __future__ import annotations

from typing import Any

from trainspotter.readers import _trainer_state_fast
from trainspotter.readers._trainer_state_fast import (
    HistoryColumns,
    has_widened,
    needs_json,
    parse_state,
)
from trainspotter.readers._trainer_state_typed import TypedChunks, typed_chunks
from trainspotter.readers.jsonl import parse_json

CHUNK_BYTES = 4 << 20
"""Text parsed at a time (bounds the dicts alive at once: ~25,000 entries)."""
MAX_CUT_TRIES = 16
"""`},` tried per chunk before the document is read whole."""
MAX_END_TRIES = 16
"""`]` tried from the end of the document for the end of the array."""
_KEY = b'"log_history"'
_WHITESPACE = b" \t\r\n"


def _array_start(data: bytes) -> tuple[bytes, int] | None:
    """The text up to the `:` after the key, and the offset of the array's `[`."""
    at = data.find(_KEY)
    if at < 0:
        return None
    pos = at + len(_KEY)
    while pos < len(data) and data[pos] in _WHITESPACE:
        pos += 1
    if pos >= len(data) or data[pos] != ord(":"):
        return None
    head = data[: pos + 1]
    pos += 1
    while pos < len(data) and data[pos] in _WHITESPACE:
        pos += 1
    if pos >= len(data) or data[pos] != ord("[") or b"\\" in head:
        return None
    return head, pos


def split_state(data: bytes, step_key: str, markers: tuple[str, ...]) -> Any:
    """(top-level state with `log_history: []`, offset of `[`, offset of `]`) or None
    (module docstring)."""
    found = _array_start(data)
    if found is None:
        return None
    head, start = found
    end = len(data)
    for _ in range(MAX_END_TRIES):
        end = data.rfind(b"]", start, end)
        if end < 0:
            return None
        tail = data[end + 1 :]
        if b"\\" in tail or _KEY in tail:
            continue
        try:
            text = (head + b"[]" + tail).decode("utf-8")
            state = parse_state(text, parse_json, step_key, markers)
        except ValueError:  # UnicodeDecodeError included
            continue
        if isinstance(state, dict) and state.get("log_history") == []:
            return state, start, end
    return None


def _may_differ(entries: Any, wrapped: bytes, step_key: str, markers: tuple[str, ...]) -> bool:
    """Whether orjson's entries may differ from json's where the columns look
    (`needs_json`), checked in full only when the text holds an escape (that may spell a
    key). Float steps need no check here: the columns refuse them whoever parsed them, and
    run-summary entries are checked after `HistoryColumns.add` (`_exact_summaries`)."""
    return b"\\" in wrapped and needs_json({"log_history": entries}, step_key, markers)


def _parse_chunk(wrapped: bytes, step_key: str, markers: tuple[str, ...]) -> list[Any] | None:
    """The entries of the JSON array `wrapped`, parsed as `parse_state` would; None if it
    does not parse."""
    loads = _trainer_state_fast._fast_loads
    entries: Any = None
    if loads is not None:
        try:
            entries = loads(wrapped)
        except Exception:  # orjson.JSONDecodeError and friends: let json decide
            entries = None
    if entries is None or _may_differ(entries, wrapped, step_key, markers):
        try:
            entries = parse_json(wrapped.decode("utf-8"))
        except ValueError:
            return None
    return entries if isinstance(entries, list) else None


def _exact_summaries(columns: HistoryColumns, before: int, wrapped: bytes) -> bool:
    """The run-summary candidates added since entry `before` as json reads them: orjson
    reads an integer beyond 64 bits as a float where json keeps an int (the summary goes
    to `meta` as it is; in the columns both are the same float). False: no parse."""
    fresh = [index for index in columns.maybe_summaries if index >= before]
    if not any(has_widened(columns.maybe_summaries[index]) for index in fresh):
        return True
    try:
        exact = parse_json(wrapped.decode("utf-8"))
    except ValueError:
        return False
    if not isinstance(exact, list):
        return False
    for index in fresh:
        columns.maybe_summaries[index] = exact[index - before]
    return True


def read_history(
    data: bytes,
    step_key: str,
    keys: tuple[str, str, tuple[str, str, str]],
    markers: tuple[str, ...],
) -> tuple[dict[str, Any], HistoryColumns] | None:
    """(top-level state, the log_history as columns) or None (module docstring). `keys`:
    the epoch key, the eval prefix and the run-summary keys (`HistoryColumns.table`). The
    caller may drop `data` before `HistoryColumns.table` (the text is no longer needed)."""
    if _trainer_state_fast._fast_loads is None or data.startswith(b"\xef\xbb\xbf"):
        return None
    split = split_state(data, step_key, markers)
    if split is None:
        return None
    state, start, end = split
    epoch_key, eval_prefix, summary_keys = keys
    columns = HistoryColumns(step_key)
    settled: dict[str, None] = {}  # in the order found, so the struct is deterministic
    typed: TypedChunks | None = None
    entries: list[Any] | None = None
    pos = start + 1
    while pos < end:
        cut = end if end - pos <= CHUNK_BYTES else data.find(b"},", pos + CHUNK_BYTES, end)
        for _ in range(MAX_CUT_TRIES):
            if cut < 0:
                cut = end
            stop = cut + 1 if cut < end else end  # the `}` belongs to the chunk
            wrapped = b"".join((b"[", memoryview(data)[pos:stop], b"]"))
            piece = typed.decode(wrapped) if typed is not None else None
            if piece is not None:
                break
            entries = _parse_chunk(wrapped, step_key, markers)
            if entries is not None or cut == end:
                break
            cut = data.find(b"},", cut + 2, end)
        before = columns.count
        if piece is not None:
            if not columns.add_typed(piece[0], typed.keys if typed else (), piece[1], piece[2]):
                return None
        else:
            if entries is None or not columns.add(entries, summary_keys):
                return None
            del entries
            if not _exact_summaries(columns, before, wrapped):
                return None
            fresh = columns.settled(before, epoch_key, eval_prefix, summary_keys) - set(settled)
            if fresh:  # new keys the typed path may read from now on
                settled.update(dict.fromkeys(sorted(fresh)))
                typed = typed_chunks(step_key, [k for k in settled if k not in markers])
        del wrapped
        pos = stop + 1  # past the comma
    return state, columns
