"""A chunk of `log_history` decoded by msgspec into typed structs, then into columns.

Why: orjson builds a dict and a float object per value (a million entries: ~1 s of
parsing plus ~1 s of turning the dicts into columns); msgspec decodes the same text into
structs of known fields about twice as fast, and a struct's fields come out as one flat
float array in one C-level pass. It is used only where its result is the one json (the
format's reference parser) gives, and refuses everything else, which then takes the
orjson/json path of `_trainer_state_chunks.py`:

- the struct's fields are the keys already seen (and "settled", `HistoryColumns.settled`)
  in earlier chunks, minus the run-summary keys; a key it does not know, a missing or
  non-integer step, a null, a boolean, a string, a nested value, `NaN`/`Infinity` tokens
  and numbers out of double range are all errors to msgspec here (`forbid_unknown_fields`,
  typed fields), so such a chunk is refused as a whole;
- integers go into float fields as the nearest double, as `float(int)` gives; decimal
  numbers are correctly rounded (checked against `float()` in the tests); a key repeated
  in one entry keeps its last value, as in json; escaped keys are decoded before they are
  matched;
- msgspec reports no key order: a typed chunk holds only settled keys, whose column order
  was fixed by an earlier chunk (`HistoryColumns.table`), so the order never matters here.

A missing field is NaN (msgspec rejects NaN in the text, so NaN can only mean absent).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np

from trainspotter.model import FloatArray, IntArray
from trainspotter.readers._tabular import BoolArray

_msgspec: Any
try:  # optional speed-up (the `fast` extra), see the module docstring
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - depends on the environment
    _msgspec = None

_ABSENT = float("nan")
MAX_FIELDS = 62
"""Fields above which the typed path is not tried (entries' key sets as int64 bit masks)."""


class TypedChunks:
    """Decodes chunks whose entries hold only `keys` (and the step) into columns."""

    def __init__(self, step_key: str, keys: Sequence[str]) -> None:
        self.keys = tuple(keys)
        names = [f"k{index}" for index in range(len(self.keys))]
        fields: list[tuple[str, type, float] | tuple[str, type]] = [("s", int)]
        fields += [(name, float, _ABSENT) for name in names]
        rename = {"s": step_key, **dict(zip(names, self.keys, strict=True))}
        entry: Any = _msgspec.defstruct(
            "Entry", fields, rename=rename, forbid_unknown_fields=True, gc=False
        )
        entries: Any = list[entry]  # a struct class made at run time
        self._decode: Callable[[bytes], list[Any]] = _msgspec.json.Decoder(entries).decode
        self._errors = (_msgspec.DecodeError, _msgspec.ValidationError)
        self._step = operator.attrgetter("s")
        self._values = operator.attrgetter(*names)

    def decode(self, wrapped: bytes) -> tuple[IntArray, FloatArray, BoolArray] | None:
        """(steps, values per entry and key (NaN: absent), present) of the entries in
        `wrapped` (a JSON array), or None when the chunk is not one this path may read."""
        try:
            entries = self._decode(wrapped)
        except self._errors:
            return None
        count, width = len(entries), len(self.keys)
        try:
            steps = np.fromiter(map(self._step, entries), np.int64, count)
        except OverflowError:  # a step beyond 64 bits: the columns refuse it
            return None
        cells = map(self._values, entries)
        flat = chain.from_iterable(cells) if width > 1 else cells
        values = np.fromiter(flat, np.float64, count * width).reshape(count, width)
        return steps, values, ~np.isnan(values)


def _field_name(key: str) -> bool:
    """Whether msgspec takes `key` as a field's JSON name: UTF-8, without a backslash, a
    quote or a control character. An entry holding any other key is refused as unknown."""
    if any(char in '\\"' or char < " " for char in key):
        return False
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def typed_chunks(step_key: str, keys: Sequence[str]) -> TypedChunks | None:
    """The decoder for `keys` (those msgspec can name), or None without msgspec, with no or
    too many keys, or for a step key msgspec cannot name."""
    usable = [key for key in keys if _field_name(key)]
    if _msgspec is None or not usable or len(usable) > MAX_FIELDS or not _field_name(step_key):
        return None
    return TypedChunks(step_key, usable)
