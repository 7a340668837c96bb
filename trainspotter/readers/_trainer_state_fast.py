"""A large `trainer_state.json` read fast, with exactly the result of the plain path.

Two parts, each falling back to the reference code (json, then `hf.py`'s entry loop)
whenever it cannot vouch for an identical result:

- `parse_state`: orjson when installed (the `fast` extra: ~2.5x faster than json on a
  million-entry file), json for whatever orjson rejects (the `NaN` / `Infinity` tokens the
  Trainer writes, numbers out of double range, lone surrogates: the error messages stay
  json's). orjson reads an integer beyond 64 bits as a float where json keeps an int; the
  reader treats such a `step` or top-level count differently, so when a value the reader
  keeps as-is (a step, a top-level scalar, a run-summary entry) is an integral float of
  magnitude 2**63 or more, json parses the text again.
- `HistoryColumns` (and `history_table`, all entries at once): the common `log_history`
  (every entry a flat dict of numbers and nulls with an integer step) turned into the
  `Table` `RecordTableBuilder` would build, column by column with C-level passes over each
  shape's dicts and numpy instead of a Python step per cell (a million entries: ~1 s
  against ~5 s). Entries may be added in pieces (`_trainer_state_chunks.py` drops each
  piece's dicts once added). Anything else (strings, booleans, nested objects, lists,
  float steps, non-dict entries) returns None and the entry loop runs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

import numpy as np

from trainspotter.model import FloatArray, IntArray
from trainspotter.readers._records import MAX_RECORD_CELLS
from trainspotter.readers._tabular import BoolArray, NumericColumn, Table

_fast_loads: Callable[[str | bytes], Any] | None
try:  # optional speed-up, see the module docstring
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None

_FLOAT_INT_LIMIT = 2.0**63
MAX_SHAPES = 256
"""Distinct key sets among the entries above which the entry loop reads them."""
_PLAIN_TYPES = frozenset({float, int, type(None)})


def _widened_int(value: object) -> bool:
    """A float orjson may have made of an integer literal json keeps as an int."""
    return type(value) is float and value.is_integer() and abs(value) >= _FLOAT_INT_LIMIT


def needs_json(state: object, step_key: str, summary_markers: tuple[str, ...]) -> bool:
    """Whether orjson's result may differ from json's where the reader looks (docstring):
    top-level scalars, steps, and entries that may be run summaries."""
    if not isinstance(state, dict):
        return False
    if any(_widened_int(value) for value in state.values()):
        return True
    history = state.get("log_history")
    if not isinstance(history, list):
        return False
    entries = [entry for entry in history if type(entry) is dict]
    steps = list(map(dict.get, entries, repeat(step_key)))
    if float in set(map(type, steps)) and any(map(_widened_int, steps)):
        return True
    return any(
        has_widened(entry)
        for marker in summary_markers
        for entry in [e for e in entries if marker in e]
    )


def has_widened(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif _widened_int(item):
            return True
    return False


def parse_state(
    text: str,
    reference: Callable[[str], object],
    step_key: str,
    summary_markers: tuple[str, ...],
) -> object:
    """The parsed document: orjson's when it equals what `reference` (json) would give
    where the reader looks, else `reference(text)` (whose errors are the messages).
    `summary_markers`: keys of which a run-summary entry holds at least one."""
    if _fast_loads is not None:
        try:
            state = _fast_loads(text)
        except Exception:  # orjson.JSONDecodeError and friends: let json decide
            pass
        else:
            if not needs_json(state, step_key, summary_markers):
                return state
    return reference(text)


@dataclass
class HistoryColumns:
    """`log_history` entries added in pieces (in file order), kept as columns: per key a
    float array (NaN where absent) and a logged mask per piece, so the entries' dicts can
    be dropped after each piece (a million entries as dicts take ~350 MB)."""

    step_key: str
    count: int = 0
    shapes: dict[tuple[str, ...], int] = field(default_factory=dict)
    """Each distinct key tuple (an entry's keys in order) and its id, in order of first
    appearance."""
    steps: list[IntArray] = field(default_factory=list)
    shape_of: list[IntArray] = field(default_factory=list)
    cells: dict[str, list[tuple[int, FloatArray, BoolArray]]] = field(default_factory=dict)
    """Per key: (offset of the piece, values, logged) for the pieces holding the key."""
    maybe_summaries: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The entries holding a run-summary key (`summary_keys` in `table`), by index."""

    def add(self, entries: list[Any], summary_keys: tuple[str, str, str]) -> bool:
        """Add a piece; False when it is not the common shape (module docstring)."""
        count = len(entries)
        if not set(map(type, entries)) <= {dict}:
            return False
        steps_raw = list(map(dict.get, entries, repeat(self.step_key)))
        if not set(map(type, steps_raw)) <= {int}:
            return False
        try:
            steps = np.array(steps_raw, dtype=np.int64)
        except OverflowError:
            return False
        shapes = list(map(tuple, entries))  # each entry's keys, in order
        distinct = list(dict.fromkeys(shapes))
        for shape in distinct:
            self.shapes.setdefault(shape, len(self.shapes))
        if len(self.shapes) > MAX_SHAPES:
            return False
        shape_of = np.fromiter(map(self.shapes.__getitem__, shapes), np.int64, count)
        del shapes
        for shape in distinct:
            members = np.flatnonzero(shape_of == self.shapes[shape])
            if not shape:
                continue
            group = entries if members.shape[0] == count else [entries[i] for i in members]
            block = _numbers(group, len(shape))
            if block is None:
                return False
            numbers, logged = block
            for column, key in enumerate(shape):
                held = self.cells.setdefault(key, [])
                if not held or held[-1][0] != self.count:
                    held.append((self.count, np.full(count, np.nan), np.zeros(count, bool)))
                held[-1][1][members] = numbers[:, column]
                held[-1][2][members] = logged[:, column]
            if summary_keys[0] in shape or summary_keys[1] in shape:
                for index in members.tolist():
                    self.maybe_summaries[self.count + index] = entries[index]
        self.steps.append(steps)
        self.shape_of.append(shape_of)
        self.count += count
        return True

    def add_typed(
        self, steps: IntArray, keys: tuple[str, ...], values: FloatArray, present: BoolArray
    ) -> bool:
        """Add a piece decoded as columns (`_trainer_state_typed.py`): per entry its step
        and, per key, its value and whether the entry holds the key (no nulls there: held
        is logged). Its entries' shapes are their key sets in `keys` order, which is all
        `table` reads of them (their keys' column order is settled by earlier pieces)."""
        count = steps.shape[0]
        codes = present @ (np.int64(1) << np.arange(len(keys), dtype=np.int64))
        distinct, inverse = np.unique(codes, return_inverse=True)
        ids = []
        for code in distinct.tolist():
            shape = (self.step_key, *(k for j, k in enumerate(keys) if code >> j & 1))
            ids.append(self.shapes.setdefault(shape, len(self.shapes)))
        if len(self.shapes) > MAX_SHAPES:
            return False
        for column, key in enumerate(keys):
            logged = present[:, column]
            if logged.any():
                piece = np.ascontiguousarray(values[:, column])
                self.cells.setdefault(key, []).append((self.count, piece, logged.copy()))
        self.steps.append(steps)
        self.shape_of.append(np.asarray(ids, dtype=np.int64)[inverse.reshape(-1)])
        self.count += count
        return True

    def settled(
        self, before: int, epoch_key: str, eval_prefix: str, summary_keys: tuple[str, str, str]
    ) -> set[str]:
        """The keys whose place in `table`'s column order the entries added since entry
        `before` fix: a key with a value in an entry that is not a run summary (for
        `epoch_key`, not an eval entry either, whose epoch `table` may drop). No later
        entry can change where such a key's column goes."""
        marker, flos, loss = summary_keys
        found: set[str] = set()
        for shape, shape_id in self.shapes.items():
            is_eval = any(key.startswith(eval_prefix) for key in shape)
            if marker in shape or (flos in shape and loss not in shape and not is_eval):
                continue
            for key in shape:
                if key in found or key == self.step_key or (key == epoch_key and is_eval):
                    continue
                for offset, _, logged in self.cells.get(key, []):
                    if offset < before:
                        continue
                    rows = self.shape_of_rows(offset, logged.shape[0])
                    if (logged & (rows == shape_id)).any():
                        found.add(key)
                        break
        return found

    def shape_of_rows(self, offset: int, count: int) -> IntArray:
        """The shape ids of entries `offset` to `offset + count` (one piece)."""
        start = 0
        for piece in self.shape_of:
            if start == offset:
                return piece[:count]
            start += piece.shape[0]
        raise ValueError(offset)

    def take_column(self, key: str) -> tuple[FloatArray, BoolArray]:
        """A key's values and logged mask over every entry added (its pieces are dropped)."""
        values = np.full(self.count, np.nan)
        logged = np.zeros(self.count, dtype=bool)
        for offset, piece_values, piece_logged in self.cells.pop(key, []):
            values[offset : offset + piece_values.shape[0]] = piece_values
            logged[offset : offset + piece_values.shape[0]] = piece_logged
        return values, logged

    def table(
        self, epoch_key: str, eval_prefix: str, summary_keys: tuple[str, str, str]
    ) -> tuple[Table, list[dict[str, Any]]] | None:
        """The Table of the non-summary entries and the summary entries, or None when there
        are no entries or too many cells (the entry loop gives the error). Uses up the
        columns: call once."""
        count = self.count
        if not count:
            return None
        distinct = list(self.shapes)
        keys = list(dict.fromkeys(chain.from_iterable(distinct)))  # in order of first appearance
        if len(keys) * count > MAX_RECORD_CELLS:
            return None
        steps = np.concatenate(self.steps)
        shape_of = np.concatenate(self.shape_of)
        no = np.zeros(count, dtype=bool)
        # Per key: which entries hold it (null counts), from the shapes alone.
        has = {key: np.array([key in shape for shape in distinct])[shape_of] for key in keys}
        is_eval = np.logical_or.reduce([has[k] for k in keys if k.startswith(eval_prefix)] + [no])
        marker, flos, loss = summary_keys
        summary = has.get(marker, no) | (has.get(flos, no) & ~has.get(loss, no) & ~is_eval)
        rows = np.flatnonzero(~summary)
        train_steps = steps[rows][~is_eval[rows]]
        columns: dict[str, NumericColumn] = {}
        first_seen: dict[str, int] = {}
        for key in keys:
            if key == self.step_key:
                values, present = steps.astype(np.float64), np.ones(count, dtype=bool)
            else:
                values, present = self.take_column(key)
            if key == epoch_key:
                present[rows[is_eval[rows] & np.isin(steps[rows], train_steps)]] = False
            logged_rows = present[rows]
            held = np.flatnonzero(logged_rows)
            if held.shape[0]:
                columns[key] = NumericColumn(values[rows], logged_rows)
                first_seen[key] = int(held[0])

        # RecordTableBuilder's column order: by the first row that holds a value, then by
        # the key's position in that row.
        def order(key: str) -> tuple[int, int]:
            row = int(rows[first_seen[key]])
            return first_seen[key], distinct[int(shape_of[row])].index(key)

        ordered = {key: columns[key] for key in sorted(columns, key=order)}
        summaries = [self.maybe_summaries[i] for i in np.flatnonzero(summary).tolist()]
        return Table(ordered, int(rows.shape[0])), summaries


def history_table(
    entries: list[dict[str, Any]],
    step_key: str,
    epoch_key: str,
    eval_prefix: str,
    summary_keys: tuple[str, str, str],
) -> tuple[Table, list[dict[str, Any]]] | None:
    """The Table of the non-summary entries and the summary entries, or None when
    `entries` is not the common shape (module docstring). `summary_keys`: the marker,
    `total_flos` and `loss` (see `hf.is_summary_entry`)."""
    columns = HistoryColumns(step_key)
    if not columns.add(entries, summary_keys):
        return None
    return columns.table(epoch_key, eval_prefix, summary_keys)


def _numbers(group: list[dict[str, Any]], width: int) -> tuple[Any, Any] | None:
    """The values of entries with the same keys in the same order, as a float array of
    rows and a logged mask (null: not logged), or None when a value is not a plain number
    or null. One flat pass over the dicts' values: no tuple per entry."""

    def flat() -> Any:
        return chain.from_iterable(map(dict.values, group))

    types = set(map(type, flat()))
    if not types <= _PLAIN_TYPES or bool in types:
        return None
    size = len(group) * width
    try:
        numbers = np.fromiter(flat(), np.float64, size)  # None becomes NaN: not logged
    except OverflowError:  # an integer beyond float range: the entry loop says how
        return None
    if type(None) in types:
        logged = np.fromiter(map(operator.is_not, flat(), repeat(None)), bool, size)
    else:
        logged = np.ones(size, dtype=bool)
    return numbers.reshape(len(group), width), logged.reshape(len(group), width)
