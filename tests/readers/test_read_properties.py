"""Property tests: whatever the bytes, every reader returns a well-formed Run or raises
InputError, never another exception; and the step rule (sorted, last value wins) holds for
unsorted, duplicate and non-finite input in every text format."""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readers_support import PRINTED_LOGS, assert_well_formed

from trainspotter.errors import InputError
from trainspotter.readers import READERS, read_log

FORMATS = [None, *sorted(READERS)]
NAMES = [
    "log.csv",
    "metrics.csv",
    "trainer_state.json",
    "log.jsonl",
    "events.out.tfevents.1.h",
    "train.log",
    "loss",
]
DATA = Path(__file__).resolve().parents[1] / "data"
# TRAINSPOTTER_PROPERTY_EXAMPLES=2000 for a thorough run; the default keeps the suite fast.
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("TRAINSPOTTER_PROPERTY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def read_or_reject(path: Path, fmt: str | None) -> None:
    """The property: a well-formed Run, or an InputError with a one-line message."""
    try:
        run = read_log(path, fmt=fmt)
    except InputError as exc:
        assert exc.problem and "\n" not in exc.problem
        return
    assert_well_formed(run)


@functools.cache
def samples() -> dict[str, bytes]:
    """One valid file per format, to truncate and corrupt."""
    hf_state = {
        "global_step": 4,
        "log_history": [
            {"epoch": 0.5, "loss": 2.0, "grad_norm": float("nan"), "step": 2},
            {"epoch": 1.0, "eval_loss": 1.9, "step": 2},
            {"epoch": 1.0, "loss": 1.5, "learning_rate": 1e-4, "step": 4},
            {"step": 4, "train_loss": 1.7, "train_runtime": 3.0},
        ],
    }
    found = {
        "trainer_state.json": json.dumps(hf_state, indent=2).encode(),
        "log.csv": b"epoch,loss,val_loss\r\n0,1.5,1.6\r\n1,1.2,nan\r\n2,0.9,1.1\r\n",
        "metrics.csv": b"epoch,step,train_loss_step,val_loss,lr-Adam\n0,1,2.0,,0.1\n0,1,,1.9,\n",
        "wandb_export.csv": b'"Step","a - loss","a - loss__MIN","a - loss__MAX"\n"1","2","2","2"\n',
        "log.jsonl": b'{"step": 1, "loss": 2.0, "eval": {"loss": 2.1}}\n{"step": 2, "loss": NaN}\n',
    }
    # Printed output and an MLflow metric file, as the real tools wrote them.
    found["train.log"] = (DATA / "stdout" / "keras_verbose1.log").read_bytes()[:6000] + (
        DATA / "stdout" / "hf_trainer_tqdm.log"
    ).read_bytes()[-3000:]
    (metric_file,) = sorted((DATA / "mlflow" / "mlruns").glob("*/*/metrics/grad_norm"))[:1]
    found["loss"] = metric_file.read_bytes()
    tensorboardx = pytest.importorskip("tensorboardX")
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        writer = tensorboardx.SummaryWriter(folder)
        for step in range(20):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.close()
        (event_file,) = Path(folder).glob("events.out.tfevents*")
        found["events.out.tfevents.1.host"] = event_file.read_bytes()
    return found


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("properties")


@PROPERTY_SETTINGS
@given(data=st.binary(max_size=2048), name=st.sampled_from(NAMES), fmt=st.sampled_from(FORMATS))
def test_random_bytes(workdir: Path, data: bytes, name: str, fmt: str | None) -> None:
    path = workdir / name
    path.write_bytes(data)
    read_or_reject(path, fmt)


@PROPERTY_SETTINGS
@given(
    sample=st.sampled_from(sorted(samples())),
    cut=st.floats(min_value=0.0, max_value=1.0),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), max_size=3),
    fmt=st.sampled_from(FORMATS),
)
def test_truncated_and_corrupted_files(
    workdir: Path,
    sample: str,
    cut: float,
    flips: list[tuple[float, int]],
    fmt: str | None,
) -> None:
    data = bytearray(samples()[sample])
    for where, byte in flips:
        data[min(int(where * len(data)), len(data) - 1)] = byte
    path = workdir / sample
    path.write_bytes(bytes(data[: int(cut * len(data))]))
    read_or_reject(path, fmt)


CELLS = st.one_of(
    st.sampled_from(["", "nan", "NaN", "-inf", "Infinity", "x", '"', '"1,2"', "1e400", " "]),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet="0123456789.,;e-+ \t\"'abc", max_size=6),
)
HEADERS = st.lists(
    st.sampled_from(["step", "epoch", "loss", "val_loss", "_step", "Step", "a - loss", "lr"])
    | st.text(max_size=5),
    min_size=1,
    max_size=5,
)


@PROPERTY_SETTINGS
@given(
    header=HEADERS,
    rows=st.lists(st.lists(CELLS, max_size=6), max_size=12),
    delimiter=st.sampled_from([",", ";", "\t"]),
    newline=st.sampled_from(["\n", "\r\n", "\r\r\n"]),
    fmt=st.sampled_from([None, "csv", "lightning", "wandb"]),
)
def test_malformed_csv_rows(
    workdir: Path,
    header: list[str],
    rows: list[list[str]],
    delimiter: str,
    newline: str,
    fmt: str | None,
) -> None:
    lines = [delimiter.join(header), *(delimiter.join(row) for row in rows)]
    path = workdir / "malformed.csv"
    path.write_text(newline.join(lines), encoding="utf-8", newline="")
    read_or_reject(path, fmt)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)


@PROPERTY_SETTINGS
@given(
    lines=st.lists(
        st.dictionaries(st.sampled_from(["step", "iter", "loss", "eval", "x"]), JSON_VALUES)
        | JSON_VALUES,
        max_size=8,
    ),
    fmt=st.sampled_from([None, "jsonl", "hf"]),
)
def test_malformed_json(workdir: Path, lines: list[object], fmt: str | None) -> None:
    path = workdir / "log.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    read_or_reject(path, fmt)
    state = workdir / "trainer_state.json"
    state.write_text(json.dumps({"log_history": lines}), encoding="utf-8")
    read_or_reject(state, fmt)


# --- the step rule, end to end ----------------------------------------------------------

POINTS = st.lists(
    st.tuples(
        st.integers(min_value=-5, max_value=30),
        st.floats(allow_nan=True, allow_infinity=True, width=32),
    ),
    min_size=1,
    max_size=25,
)


def last_wins(points: list[tuple[int, float]]) -> tuple[list[int], list[float]]:
    latest: dict[int, float] = {}
    for step, value in points:
        latest[step] = value
    steps = sorted(latest)
    return steps, [latest[step] for step in steps]


def number_text(value: float) -> str:
    return "nan" if math.isnan(value) else repr(value)


def write_format(workdir: Path, fmt: str, points: list[tuple[int, float]]) -> Path:
    if fmt == "csv":
        path = workdir / "steps.csv"
        body = "".join(f"{s},{number_text(v)}\n" for s, v in points)
        path.write_text("step,loss\n" + body, encoding="utf-8")
    elif fmt == "lightning":
        path = workdir / "metrics.csv"
        body = "".join(f"0,{s},{number_text(v)}\n" for s, v in points)
        path.write_text("epoch,step,train_loss_step\n" + body, encoding="utf-8")
    elif fmt == "wandb":
        path = workdir / "wandb_export.csv"
        body = "".join(f"{s},0,{number_text(v)}\n" for s, v in points)
        path.write_text("_step,_runtime,loss\n" + body, encoding="utf-8")
    elif fmt == "jsonl":
        path = workdir / "steps.jsonl"
        path.write_text("".join(json.dumps({"step": s, "loss": v}) + "\n" for s, v in points))
    else:
        path = workdir / "trainer_state.json"
        history = [{"loss": v, "step": s} for s, v in points]
        path.write_text(json.dumps({"log_history": history}), encoding="utf-8")
    return path


@PROPERTY_SETTINGS
@given(points=POINTS, fmt=st.sampled_from(["csv", "lightning", "wandb", "jsonl", "hf"]))
def test_unsorted_duplicate_and_non_finite_steps(
    workdir: Path, points: list[tuple[int, float]], fmt: str
) -> None:
    run = read_log(write_format(workdir, fmt, points))
    assert run.source_format == fmt
    assert_well_formed(run)
    series = run.metrics["train/loss"]
    if "appended_runs" in run.meta:
        # A restart (back to at or below the first step): the last run is read alone.
        assert fmt in {"csv", "jsonl"}
        first = points[0][0]
        restarts = [
            i
            for i in range(1, len(points))
            if points[i][0] < points[i - 1][0] and points[i][0] <= first
        ]
        points = points[restarts[-1] :]
    steps, values = last_wins(points)
    assert series.steps.tolist() == steps
    for got, want in zip(series.values.tolist(), values, strict=True):
        assert (math.isnan(got) and math.isnan(want)) or got == want


# --- printed output and MLflow stores: interleaved, garbled, truncated ------------------


@functools.cache
def printed_lines() -> list[str]:
    """Every \\n-line of the captured real training output (tests/data/stdout)."""
    lines: list[str] = []
    for path in PRINTED_LOGS:
        lines.extend(path.read_text(encoding="utf-8").split("\n"))
    return lines


@PROPERTY_SETTINGS
@given(
    picks=st.lists(st.integers(min_value=0), min_size=1, max_size=30),
    junk=st.lists(st.text(max_size=40), max_size=5),
    cut=st.integers(min_value=0, max_value=200),
    fmt=st.sampled_from([None, "stdout"]),
)
def test_interleaved_printed_output(
    workdir: Path, picks: list[int], junk: list[str], cut: int, fmt: str | None
) -> None:
    """Lines of different real logs in any order, with junk lines and a cut last line."""
    pool = printed_lines()
    lines = [pool[i % len(pool)] for i in picks] + junk
    text = "\n".join(lines)
    path = workdir / "interleaved.log"
    path.write_text(text[: max(len(text) - cut, 0)], encoding="utf-8", errors="replace")
    read_or_reject(path, fmt)


METRIC_LINES = st.one_of(
    st.tuples(
        st.integers(0, 2**45), st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 9)
    ).map(lambda t: f"{t[0]} {t[1]!r} {t[2]}"),
    st.text(alphabet="0123456789 .-nainfe\t", max_size=25),
)


@PROPERTY_SETTINGS
@given(
    files=st.dictionaries(
        st.sampled_from(["loss", "train/loss", "val_loss", "a/b/c", "lr"]),
        st.lists(METRIC_LINES, max_size=12),
        max_size=4,
    ),
    meta=st.sampled_from(["run_name: r\n", "", ":\n[", "run_name: [1, 2]\n", "- a\n"]),
    target=st.sampled_from(["store", "experiment", "run"]),
)
def test_mlflow_store_with_damaged_files(
    tmp_path_factory: pytest.TempPathFactory,
    files: dict[str, list[str]],
    meta: str,
    target: str,
) -> None:
    root = tmp_path_factory.mktemp("mlruns")
    run = root / "mlruns" / "1" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run.parent / "meta.yaml").write_text("name: e\n", encoding="utf-8")
    (run / "meta.yaml").write_text(meta, encoding="utf-8")
    for name, lines in files.items():
        path = run / "metrics" / name
        if any(parent.is_file() for parent in path.parents):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
    chosen = {"store": root / "mlruns", "experiment": run.parent, "run": run}[target]
    for fmt in (None, "mlflow"):
        read_or_reject(chosen, fmt)


def test_a_column_named_newline_keeps_the_error_on_one_line(workdir: Path) -> None:
    """Found by hypothesis: a JSONL key "\\n" was quoted raw in the problem text."""
    path = workdir / "log.jsonl"
    path.write_text('{"step": 0}\n{"\\n": 0}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_log(path)
    assert "\n" not in str(caught.value) and "\\n" in caught.value.problem
