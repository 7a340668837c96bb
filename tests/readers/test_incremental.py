"""Incremental reading (`readers/incremental.py`): a log written in pieces and polled after
each piece must, after the final poll, give exactly the Run `read_log` gives for the whole
file: same metrics (arrays equal, NaN equal), same meta and notes."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers import ReadOptions, detect_format, read_log, require_data
from trainspotter.readers.base import Tail

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def assert_same_run(got: Run | None, want: Run) -> None:
    assert got is not None
    assert got.source_format == want.source_format
    assert got.source_path == want.source_path
    assert got.meta == want.meta
    assert list(got.metrics) == list(want.metrics)
    for name, series in want.metrics.items():
        other = got.metrics[name]
        assert np.array_equal(other.steps, series.steps), name
        assert np.array_equal(other.values, series.values, equal_nan=True), name
        assert np.array_equal(other.wall_time, series.wall_time, equal_nan=True), name


def tail_for(path: Path, display: str | None = None) -> Tail:
    display = display or str(path)
    reader, target = detect_format(path, display)
    return reader.open_tail(target, display, ReadOptions(display_path=display))


def grow(source: bytes, target: Path, cuts: list[int], *, as_format: Path | None = None) -> Tail:
    """Write `source` to `target` in pieces ending at `cuts`, polling after each."""
    target.write_bytes(source[: cuts[0]])
    tail = tail_for(as_format or target, str(target)) if as_format else None
    previous = cuts[0]
    for cut in cuts[1:]:
        if tail is None and target.stat().st_size:
            try:
                tail = tail_for(target)
            except InputError:
                tail = None
        if tail is not None:
            tail.poll()
        with target.open("ab") as handle:
            handle.write(source[previous:cut])
        previous = cut
    if tail is None:
        tail = tail_for(target)
    tail.poll()
    tail.poll(final=True)
    return tail


def random_cuts(size: int, pieces: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, size), min(pieces, size - 1)))
    return [*cuts, size]


@pytest.mark.parametrize("example", ["divergence", "loss_spike", "plateau", "noisy_eval"])
def test_examples_metrics_csv_in_pieces(tmp_path: Path, example: str) -> None:
    source = (EXAMPLES / example / "metrics.csv").read_bytes()
    target = tmp_path / "metrics.csv"
    tail = grow(source, target, random_cuts(len(source), 40, seed=len(example)))
    assert_same_run(tail.run(), read_log(target))


def test_generic_csv_with_quirks_in_pieces(tmp_path: Path) -> None:
    text = (
        "model_history_log\n"
        "epoch;loss;note;val_loss\n"
        '0;1.5;"a;b";\n'
        "1;nan;x;1.2\n"
        "\n"
        '2;1.1;"multi\nline";1.0;extra\n'
        "3;inf;y;0.9\n"
        "4;0.8;z;\n"
        "5;0.7;z;0.85"
    )
    target = tmp_path / "log.csv"
    source = text.encode()
    for seed in range(5):
        tail = grow(source, target, random_cuts(len(source), 12, seed))
        assert_same_run(tail.run(), read_log(target))


def test_jsonl_in_pieces_with_damage(tmp_path: Path) -> None:
    lines = [
        json.dumps({"step": i, "loss": 1.0 / (i + 1), "eval": {"loss": 2.0}}) for i in range(60)
    ]
    lines[10] = "not json"
    lines[20] = '{"step": 20, "loss": NaN}'
    lines[30] = "[1, 2]"
    source = ("\n".join(lines) + '\n{"step": 61, "lo').encode()
    target = tmp_path / "log.jsonl"
    for seed in range(3):
        tail = grow(source, target, random_cuts(len(source), 25, seed))
        assert_same_run(tail.run(), read_log(target))


def test_trainer_state_rewritten_whole(tmp_path: Path) -> None:
    state = json.loads((EXAMPLES / "divergence" / "trainer_state.json").read_text())
    history = state["log_history"]
    target = tmp_path / "trainer_state.json"
    target.write_text(json.dumps({**state, "log_history": history[:5]}, indent=2))
    tail = tail_for(target)
    for end in range(10, len(history) + 1, 37):
        text = json.dumps({**state, "log_history": history[:end]}, indent=2)
        target.write_text(text[: len(text) // 2])  # a save caught half-way: ignored
        growth = tail.poll()
        assert growth.points == 0
        target.write_text(text)
        growth = tail.poll()
        assert growth.points > 0 and not growth.restarted
    target.write_text(json.dumps(state, indent=2))
    tail.poll(final=True)
    assert_same_run(tail.run(), read_log(target))


def test_tensorboard_folder_in_pieces(tmp_path: Path) -> None:
    source_folder = EXAMPLES / "divergence" / "tensorboard"
    (event_file,) = source_folder.glob("events.out.tfevents*")
    source = event_file.read_bytes()
    folder = tmp_path / "tb"
    folder.mkdir()
    target = folder / event_file.name
    target.write_bytes(source[:5])
    tail = tail_for(folder)
    for cut in random_cuts(len(source), 30, seed=3):
        tail.poll()
        target.write_bytes(source[:cut])
    tail.poll(final=True)
    assert_same_run(tail.run(), read_log(folder))
    # A second event file appearing in the folder (a resumed run) is picked up.
    second = folder / (event_file.name + ".2")
    shutil.copyfile(event_file, second)
    tail.poll(final=True)
    assert_same_run(tail.run(), read_log(folder))


def test_truncation_restarts(tmp_path: Path) -> None:
    target = tmp_path / "log.csv"
    target.write_text("step,loss\n1,0.5\n2,0.4\n3,0.3\n")
    tail = tail_for(target)
    assert tail.poll().points == 3
    target.write_text("step,loss\n1,0.9\n")
    growth = tail.poll()
    assert growth.restarted and growth.points == 1
    assert_same_run(tail.run(), read_log(target))


def test_replaced_file_restarts(tmp_path: Path) -> None:
    target = tmp_path / "log.jsonl"
    target.write_text('{"step": 1, "loss": 0.5}\n')
    tail = tail_for(target)
    tail.poll()
    replacement = tmp_path / "new.jsonl"
    replacement.write_text('{"step": 1, "loss": 0.7}\n{"step": 2, "loss": 0.6}\n')
    os.replace(replacement, target)
    growth = tail.poll()
    assert growth.restarted and growth.points == 2
    assert_same_run(tail.run(), read_log(target))


def test_half_written_line_waits(tmp_path: Path) -> None:
    target = tmp_path / "log.csv"
    target.write_text("step,loss\n1,0.5\n2,0.4")
    tail = tail_for(target)
    growth = tail.poll()
    assert growth.points == 1 and growth.fresh["train/loss"].tolist() == [0.5]
    with target.open("a") as handle:
        handle.write("2\n")
    growth = tail.poll()
    assert growth.fresh["train/loss"].tolist() == [0.42] and growth.last_step == 2


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 50),
            st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["", "x"])),
            st.sampled_from(["", "1", "a,b", "2,3,4"]),
        ),
        min_size=1,
        max_size=30,
    ),
    seed=st.integers(0, 1000),
    crlf=st.booleans(),
)
def test_csv_property_pieces_equal_whole(
    tmp_path: Path, rows: list[tuple[int, float | str, str]], seed: int, crlf: bool
) -> None:
    end = "\r\n" if crlf else "\n"
    lines = ["step,loss,extra"]
    for step, loss, extra in rows:
        lines.append(f"{step},{loss},{extra}")
    source = (end.join(lines) + end).encode()
    target = tmp_path / f"p{seed}.csv"
    tail = grow(source, target, random_cuts(len(source), 8, seed))
    try:
        want = read_log(target)
    except InputError as exc:
        with pytest.raises(InputError) as caught:
            run = tail.run()
            assert run is not None
            require_data(run, str(target))  # what read_log and watch add to every Run
        assert caught.value.problem == exc.problem
    else:
        assert_same_run(tail.run(), want)
    target.unlink()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["loss", "lr", "eval", "step"]), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(
        st.dictionaries(st.sampled_from(["step", "loss", "lr", "eval", "x"]), json_values),
        min_size=1,
        max_size=12,
    )
)
def test_jsonl_fast_parser_gives_the_same_run(records: list[dict[str, object]]) -> None:
    """orjson (when installed) and json give identical Runs, whatever the values."""
    from trainspotter.readers import jsonl

    lines = [json.dumps(r) for r in records] + ["not json", '{"loss": 1e400}']
    outcomes = []
    for fast in (jsonl._fast_loads, None):
        original = jsonl._fast_loads
        jsonl._fast_loads = fast
        try:
            parsed = jsonl.JsonlLines()
            parsed.add(lines)
            outcomes.append(parsed.run("jsonl", "x.jsonl", ReadOptions()))
        except InputError as exc:
            outcomes.append(exc.problem)  # type: ignore[arg-type]
        finally:
            jsonl._fast_loads = original
    fast_run, reference = outcomes
    if isinstance(reference, str):
        assert fast_run == reference
    else:
        assert isinstance(fast_run, Run)
        assert_same_run(fast_run, reference)


@settings(max_examples=80, deadline=None)
@given(
    data=st.binary(max_size=60)
    | st.text(alphabet="ab\n\r\u00e9\u2028{}", max_size=60).map(lambda t: t.encode()),
    bom=st.booleans(),
    block=st.integers(1, 9),
)
def test_text_pieces_join_to_read_text(data: bytes, bom: bool, block: int) -> None:
    """`read_text_pieces` (used by the JSONL reader) = `read_text`, errors included."""
    import tempfile

    from trainspotter.readers._files import read_text, read_text_pieces

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
        try:
            whole: str | None = read_text(path, "log.jsonl")
        except InputError as exc:
            whole, problem = None, exc.problem
        if whole is None:
            with pytest.raises(InputError) as caught:
                list(read_text_pieces(path, "log.jsonl", block=block))
            assert caught.value.problem == problem
        else:
            pieces = [text for _, text in read_text_pieces(path, "log.jsonl", block=block)]
            assert "".join(pieces) == whole
            assert all(p.endswith("\n") for p in pieces[:-1])
            assert [ln for p in pieces for ln in p.splitlines()] == whole.splitlines()


@pytest.mark.parametrize("block", [1, 4, 1 << 20])
@pytest.mark.parametrize(("data", "offset"), [(b"\n\x80", 4), (b"\x80\n", 3)])
def test_bad_byte_after_a_bom_is_named_at_its_file_offset(
    tmp_path: Path, block: int, data: bytes, offset: int
) -> None:
    """Regression (found by the property test above): after a BOM, `read_text` named the
    BOM's second byte (0xbb at offset 1) instead of the real bad byte, 0x80 at offset 4."""
    from trainspotter.readers._files import read_text, read_text_pieces

    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + data)
    expected = f"not UTF-8 text (byte 0x80 at offset {offset})"
    with pytest.raises(InputError) as whole:
        read_text(path, "log.jsonl")
    assert whole.value.problem == expected
    with pytest.raises(InputError) as pieces:
        list(read_text_pieces(path, "log.jsonl", block=block))
    assert pieces.value.problem == expected
