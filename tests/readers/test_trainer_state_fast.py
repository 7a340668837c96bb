"""The fast trainer_state.json path (`readers/_trainer_state_fast.py`) gives exactly the Run
of the plain path (json + the entry loop): property tests over log histories of every
shape the reader meets (NaN tokens, nulls, booleans, strings, nested objects, huge
integers, float steps, eval entries at train steps, run summaries)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers import _trainer_state_chunks, _trainer_state_fast, read_log

pytest.importorskip("orjson")

cell = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.none(),
    st.booleans(),
    st.sampled_from(["0.5", "nan", "", "text"]),
    st.just({"inner": 1.5}),
    st.just([1.0]),
)
plain_cell = st.one_of(st.floats(allow_nan=True), st.integers(-(2**40), 2**40), st.none())
keys = st.sampled_from(
    ["loss", "grad_norm", "learning_rate", "epoch", "eval_loss", "eval_runtime", "total_flos"]
)
step = st.one_of(st.integers(0, 50), st.just(2**64 + 3), st.just(7.0), st.just("3"))


def entries(values: st.SearchStrategy[object], steps: st.SearchStrategy[object]) -> object:
    entry = st.builds(
        lambda fields, at, summary: {
            **fields,
            **({"step": at} if at is not None else {}),
            **({"train_runtime": 1.5, "train_loss": 0.5} if summary else {}),
        },
        st.dictionaries(keys, values, max_size=5),
        st.one_of(steps, st.none()),
        st.booleans(),
    )
    return st.lists(entry, max_size=30)


def run_both_ways(tmp_path: Path, state: dict[str, object]) -> tuple[object, object]:
    """The Run (or the error) with the fast path, and with orjson and the columns off."""
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps(state))  # NaN/Infinity tokens as the Trainer writes them

    def outcome() -> object:
        try:
            return describe(read_log(path))
        except InputError as exc:
            return exc.problem

    fast = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_trainer_state_fast, "_fast_loads", None)
        patch.setattr(_trainer_state_fast, "history_table", lambda *a, **k: None)
        plain = outcome()
    return fast, plain


def describe(run: Run) -> str:
    """Everything a Run says, NaN-safe (repr)."""
    metrics = {
        name: (s.steps.tolist(), s.values.tolist(), s.wall_time) for name, s in run.metrics.items()
    }
    return repr((list(run.metrics), metrics, run.meta, run.notes()))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=entries(plain_cell, st.integers(0, 50)))
def test_common_histories_agree(tmp_path_factory: pytest.TempPathFactory, history: object) -> None:
    tmp = tmp_path_factory.mktemp("common")
    fast, plain = run_both_ways(tmp, {"global_step": 3, "log_history": history})
    assert fast == plain


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=entries(cell, step), top=st.one_of(st.integers(-(2**70), 2**70), st.floats()))
def test_any_history_agrees(
    tmp_path_factory: pytest.TempPathFactory, history: object, top: object
) -> None:
    tmp = tmp_path_factory.mktemp("any")
    state = {"global_step": top, "max_steps": top, "log_history": history}
    fast, plain = run_both_ways(tmp, state)
    assert fast == plain


def test_the_common_shape_takes_the_columns(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A Trainer-shaped history (NaN grad_norm included) is read by the columnar path."""
    history: list[dict[str, object]] = [
        {"epoch": s / 10, "grad_norm": math.nan if s == 3 else 1.0, "loss": 2.0 / s, "step": s}
        for s in range(1, 8)
    ]
    history.append({"epoch": 0.7, "eval_loss": 1.1, "step": 7})
    history.append({"step": 7, "total_flos": 1.0, "train_loss": 1.0, "train_runtime": 3.0})
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history}, indent=2))
    calls: list[object] = []
    original = _trainer_state_chunks.read_history

    def spy(*args: object, **kwargs: object) -> object:
        result = original(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(result)
        return result

    monkeypatch.setattr("trainspotter.readers.hf.read_history", spy)
    run = read_log(path)
    assert calls and calls[0] is not None
    assert math.isnan(run.metrics["grad_norm"].values[2])
    assert run.metrics["eval/loss"].values.tolist() == [1.1]
    assert run.meta["summary"]["train_runtime"] == 3.0
    assert np.array_equal(run.metrics["train/loss"].steps, np.arange(1, 8))


tricky_cell = st.one_of(
    plain_cell,
    st.sampled_from(["},{", '"}, {"step": 1}', "\\", "log_history"]),
    st.just({"inner": {"x": [1.0, {"y": "},"}]}}),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=entries(
        st.one_of(plain_cell, tricky_cell, st.integers(-(2**70), 2**70)), st.integers(0, 50)
    ),
    chunk=st.integers(1, 400),
    indent=st.sampled_from([None, 2]),
    after=st.sampled_from([{}, {"logging_steps": 5, "x": [1, 2]}]),
)
def test_chunked_reading_agrees_wherever_it_cuts(
    tmp_path_factory: pytest.TempPathFactory,
    history: object,
    chunk: int,
    indent: int | None,
    after: dict[str, object],
) -> None:
    """Property: the log_history read in chunks of any size (cuts inside entries, strings
    holding `},` or the key, nested objects) gives the Run of the whole-document path."""
    path = tmp_path_factory.mktemp("chunks") / "trainer_state.json"
    state = {"epoch": 1.0, "log_history": history, **after}
    path.write_text(json.dumps(state, indent=indent, sort_keys=True))

    def outcome() -> object:
        try:
            return describe(read_log(path))
        except InputError as exc:
            return exc.problem

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_trainer_state_chunks, "CHUNK_BYTES", chunk)
        chunked = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_trainer_state_fast, "_fast_loads", None)
        patch.setattr(_trainer_state_fast, "history_table", lambda *a, **k: None)
        plain = outcome()
    assert chunked == plain


def test_a_trainer_state_is_read_in_many_chunks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Trainer-shaped (indent 2, sorted keys, NaN tokens) and cut into many chunks: the
    chunked path reads it, with the values json reads."""
    history: list[dict[str, object]] = [
        {
            "epoch": s / 100,
            "grad_norm": math.nan if s % 17 == 0 else 1.0 + s,
            "loss": 1 / s,
            "step": s,
        }
        for s in range(1, 301)
    ]
    history.append(
        {"epoch": 3.0, "step": 300, "total_flos": 1.0, "train_loss": 0.1, "train_runtime": 9.0}
    )
    path = tmp_path / "trainer_state.json"
    path.write_text(
        json.dumps({"global_step": 300, "log_history": history}, indent=2, sort_keys=True)
    )
    monkeypatch.setattr(_trainer_state_chunks, "CHUNK_BYTES", 500)
    taken: list[object] = []
    original = _trainer_state_chunks.read_history
    monkeypatch.setattr(
        "trainspotter.readers.hf.read_history", lambda *a: taken.append(original(*a)) or taken[-1]
    )
    run = read_log(path)
    assert taken and taken[0] is not None
    grad = run.metrics["grad_norm"].values
    assert np.isnan(grad[16]) and grad[0] == 2.0 and len(grad) == 300
    assert run.meta["summary"]["train_runtime"] == 9.0
    assert run.meta["trainer_state"]["global_step"] == 300
