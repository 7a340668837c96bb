"""The typed (msgspec) chunks of a big trainer_state.json (`readers/_trainer_state_typed.py`)
give exactly the Run of the plain path (json + the entry loop), and refuse, chunk by
chunk, whatever they cannot read as json does: NaN/Infinity tokens, nulls, booleans,
strings, nested values, integers beyond 64 bits, repeated and escaped keys."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers import _trainer_state_chunks, _trainer_state_fast, read_log
from trainspotter.readers._trainer_state_typed import TypedChunks, typed_chunks

pytest.importorskip("orjson")
pytest.importorskip("msgspec")


def describe(run: Run) -> str:
    """Everything a Run says, NaN-safe (repr)."""
    metrics = {
        name: (s.steps.tolist(), s.values.tolist(), s.wall_time) for name, s in run.metrics.items()
    }
    return repr((list(run.metrics), metrics, run.meta, run.notes()))


def outcome(path: Path) -> object:
    try:
        return describe(read_log(path))
    except InputError as exc:
        return exc.problem


def plain_outcome(path: Path) -> object:
    """json and the entry loop alone (no orjson, no chunks, no columns)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_trainer_state_fast, "_fast_loads", None)
        patch.setattr(_trainer_state_fast, "history_table", lambda *a, **k: None)
        return outcome(path)


def typed_outcome(path: Path, chunk: int) -> tuple[object, list[bool]]:
    """The chunked read with small chunks, and per typed decode whether it was taken."""
    taken: list[bool] = []
    original = TypedChunks.decode

    def spy(self: TypedChunks, wrapped: bytes) -> object:
        result = original(self, wrapped)
        taken.append(result is not None)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_trainer_state_chunks, "CHUNK_BYTES", chunk)
        patch.setattr(TypedChunks, "decode", spy)
        return outcome(path), taken


def trainer_entry(step: int) -> dict[str, object]:
    return {"epoch": step / 10, "grad_norm": 1.0 + step, "loss": 2.0 / step, "step": step}


odd_value = st.sampled_from(
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "null",
        "true",
        '"0.5"',
        '{"inner": 1}',
        "[1.0]",
        "123456789012345678901234567890",
        "-0",
        "1e400",
        "4.9e-324",
        "1E5",
        "0.1",
    ]
)
odd_key = st.sampled_from(["loss", "eval_loss", "lo\\u0073s", "new_key", "total_flos", "epoch"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    odd=st.lists(st.tuples(st.integers(0, 59), odd_key, odd_value), max_size=6),
    repeated=st.lists(st.integers(0, 59), max_size=3),
    odd_steps=st.lists(
        st.tuples(
            st.integers(0, 59), st.sampled_from(["2.0", "18446744073709551616", "-1", '"3"'])
        ),
        max_size=2,
    ),
    chunk=st.integers(60, 900),
    indent=st.sampled_from([None, 2]),
)
def test_typed_chunks_agree_with_json(
    tmp_path_factory: pytest.TempPathFactory,
    odd: list[tuple[int, str, str]],
    repeated: list[int],
    odd_steps: list[tuple[int, str]],
    chunk: int,
    indent: int | None,
) -> None:
    """Property: a Trainer-shaped history (whose later chunks the typed path reads) with
    odd values, keys and steps written into random entries gives the plain path's Run."""
    lines = []
    for index in range(60):
        step = index + 1
        entry = json.dumps(trainer_entry(step), indent=indent)[:-1].rstrip()
        extras = [f'"{key}": {value}' for at, key, value in odd if at == index]
        extras += ['"loss": 7.5' for at in repeated if at == index]  # a repeated key: last wins
        extras += [f'"step": {value}' for at, value in odd_steps if at == index]
        if index % 20 == 19:
            extras.append('"eval_loss": 1.25')
        lines.append(entry + "".join(", " + extra for extra in extras) + "}")
    text = '{"global_step": 60, "log_history": [' + ",\n".join(lines) + "]}"
    path = tmp_path_factory.mktemp("typed") / "trainer_state.json"
    path.write_text(text)
    typed, _ = typed_outcome(path, chunk)
    assert typed == plain_outcome(path)


def test_a_trainer_shaped_history_is_read_by_the_typed_path(tmp_path: Path) -> None:
    """After the first chunk settles the keys, plain chunks are typed; a chunk with a NaN
    token, a new key or the run summary is refused and read by orjson/json."""
    history: list[dict[str, object]] = [trainer_entry(s) for s in range(1, 201)]
    history[150]["grad_norm"] = math.nan  # the Trainer writes a bare NaN token
    history[170]["rewards/chosen"] = 0.5  # a key no earlier chunk held
    history.insert(100, {"epoch": 10.0, "eval_loss": 0.9, "step": 100})
    history.append({"step": 200, "total_flos": 1e18, "train_loss": 0.1, "train_runtime": 9.0})
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history}, indent=2, sort_keys=True))
    typed, taken = typed_outcome(path, 1000)
    assert typed == plain_outcome(path)
    assert taken.count(True) > 10 and taken.count(False) >= 3
    run = read_log(path)
    assert math.isnan(run.metrics["grad_norm"].values[150])
    assert run.metrics["rewards/chosen"].values.tolist() == [0.5]
    assert run.meta["summary"]["total_flos"] == 1e18


@settings(max_examples=300, deadline=None)
@given(
    number=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.integers(-(2**80), 2**80).map(str),
        st.from_regex(r"-?[1-9][0-9]{0,25}(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True),
    )
)
def test_typed_numbers_are_the_doubles_json_reads(number: str) -> None:
    """msgspec's number parsing against Python's: the same double (or a refusal)."""
    decoder = typed_chunks("step", ["loss"])
    assert decoder is not None
    piece = decoder.decode(f'[{{"step": 1, "loss": {number}}}]'.encode())
    reference = json.loads(number)
    if piece is None:
        assert math.isinf(float(reference))  # out of double range: json gives inf
        return
    value = float(piece[1][0, 0])
    assert value == float(reference) and math.copysign(1, value) == math.copysign(
        1, float(reference)
    )


@pytest.mark.parametrize("key", ["\x1f", "\ud800", 'a"b', "back\\slash", "caf\u00e9"])
def test_keys_msgspec_cannot_name_are_read_by_the_other_path(tmp_path: Path, key: str) -> None:
    """A key with a control character, a lone surrogate, a quote or a backslash is no
    struct field: entries holding it are refused by the typed path, never an error."""
    history = [{**trainer_entry(s), key: 0.5 * s} for s in range(1, 120)]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history}, indent=2), encoding="utf-8")
    typed, _ = typed_outcome(path, 300)
    assert typed == plain_outcome(path)
