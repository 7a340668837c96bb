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
- `history_table`: the common `log_history` (every entry a flat dict of numbers and nulls
  with an integer step) turned into the `Table` `RecordTableBuilder` would build, column
  by column with list comprehensions and numpy instead of a Python step per cell (a
  million entries: ~1 s against ~5 s). Anything else (strings, booleans, nested objects,
  lists, float steps, non-dict entries) returns None and the entry loop runs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from trainspotter.readers._records import MAX_RECORD_CELLS
from trainspotter.readers._tabular import NumericColumn, Table

_fast_loads: Callable[[str], Any] | None
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


def _needs_json(state: object, step_key: str, summary_markers: tuple[str, ...]) -> bool:
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
        _has_widened(entry)
        for marker in summary_markers
        for entry in [e for e in entries if marker in e]
    )


def _has_widened(value: object) -> bool:
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
            if not _needs_json(state, step_key, summary_markers):
                return state
    return reference(text)


def history_table(
    entries: list[dict[str, Any]],
    step_key: str,
    epoch_key: str,
    eval_prefix: str,
    summary_keys: tuple[str, str, str],
) -> tuple[Table, list[int]] | None:
    """The Table of the non-summary entries and the indices of the summary entries, or
    None when `entries` is not the common shape (module docstring). `summary_keys`:
    the marker, `total_flos` and `loss` (see `hf.is_summary_entry`)."""
    count = len(entries)
    steps_raw = list(map(dict.get, entries, repeat(step_key)))
    if set(map(type, steps_raw)) != {int}:
        return None
    try:
        steps = np.array(steps_raw, dtype=np.int64)
    except OverflowError:
        return None
    shapes = list(map(tuple, entries))  # each entry's keys, in order
    distinct = dict.fromkeys(shapes)
    if len(distinct) > MAX_SHAPES:
        return None
    keys = list(dict.fromkeys(chain.from_iterable(distinct)))  # in order of first appearance
    if len(keys) * count > MAX_RECORD_CELLS:
        return None  # the entry loop gives the error
    shape_ids = dict(zip(distinct, range(len(distinct)), strict=True))
    shape_of = np.fromiter(map(shape_ids.__getitem__, shapes), np.int64, count)
    del shapes
    no = np.zeros(count, dtype=bool)
    # Per key: which entries hold it (null counts), from the shapes alone.
    has = {key: np.array([key in shape for shape in distinct])[shape_of] for key in keys}
    is_eval = np.logical_or.reduce([has[k] for k in keys if k.startswith(eval_prefix)] + [no])
    marker, flos, loss = summary_keys
    summary = has.get(marker, no) | (has.get(flos, no) & ~has.get(loss, no) & ~is_eval)
    rows = np.flatnonzero(~summary)
    values = {key: np.full(count, np.nan) for key in keys}
    present = {key: no.copy() for key in keys}
    for shape, index in shape_ids.items():
        members = np.flatnonzero(shape_of == index)
        if not shape or not members.shape[0]:
            continue
        group = [entries[i] for i in members.tolist()]
        cells = list(map(itemgetter(*shape), group)) if len(shape) > 1 else None
        block = _numbers(cells if cells is not None else [(e[shape[0]],) for e in group])
        if block is None:
            return None
        numbers, logged = block
        for column, key in enumerate(shape):
            values[key][members] = numbers[:, column]
            present[key][members] = logged[:, column]
    values[step_key] = steps.astype(np.float64)
    present[step_key] = np.ones(count, dtype=bool)
    train_steps = steps[rows][~is_eval[rows]]
    if epoch_key in present:
        present[epoch_key][rows[is_eval[rows] & np.isin(steps[rows], train_steps)]] = False
    columns: dict[str, NumericColumn] = {}
    first_seen: dict[str, int] = {}
    for key in keys:
        logged_rows = present[key][rows]
        held = np.flatnonzero(logged_rows)
        if held.shape[0]:
            columns[key] = NumericColumn(values[key][rows], logged_rows)
            first_seen[key] = int(held[0])

    # RecordTableBuilder's column order: by the first row that holds a value, then by the
    # key's position in that row.
    def order(key: str) -> tuple[int, int]:
        return first_seen[key], list(entries[int(rows[first_seen[key]])]).index(key)

    ordered = {key: columns[key] for key in sorted(columns, key=order)}
    return Table(ordered, int(rows.shape[0])), np.flatnonzero(summary).tolist()


def _numbers(cells: list[tuple[Any, ...]]) -> tuple[Any, Any] | None:
    """Rows of cells as float values and a logged mask (null: not logged), or None when
    a cell is not a plain number or null."""
    types = set(map(type, chain.from_iterable(cells)))
    if not types <= _PLAIN_TYPES or bool in types:
        return None
    flat = chain.from_iterable(cells)
    size = len(cells) * len(cells[0])
    logged = np.fromiter(map(operator.is_not, flat, repeat(None)), bool, size)
    try:
        numbers = np.array(cells, dtype=np.float64)  # None becomes NaN: not logged
    except OverflowError:  # an integer beyond float range: the entry loop says how
        return None
    return numbers, logged.reshape(numbers.shape)
