"""The adversarial property test (issue 11): every reader fed, through the layout its
library writes, extreme floats (1e308, float max, denormals, -0.0, nan, inf), integers far
beyond the float range, steps beyond int64, and metric names holding lone surrogates,
control characters, ANSI escapes, bidi overrides and Markdown/HTML/workflow-command
syntax. Each log gives a Run or the one-line InputError, never another exception; every
report format renders it as strict UTF-8; the human-readable formats carry no raw control
or bidi character. The test prints how many cases it ran."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_writers import WRITERS

from trainspotter.batch import check_run
from trainspotter.config import Config
from trainspotter.errors import InputError
from trainspotter.readers import read_log
from trainspotter.report import REPORTS, RenderOptions

EXAMPLES_PER_READER = 40
EXTREMES = [1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324, 2.2250738585072014e-308]
EXTREMES += [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-300, 3.0e38, 1.0]
HOSTILE_TEXT = [
    "\ud800",
    "\udfff_loss",
    "loss\u202egnp.exe",
    "\u2066eval\u2069/loss",
    "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
    "\x1bc",
    "a\n::warning::injected_loss",
    "run_www.evil.example",
    "GH-1 @someone #12",
    "<script>alert(1)</script>",
    "[x](javascript:alert(1))",
    "`$(rm -rf /)`",
    "\x00nul",
    "\x7f\x85\u2028",
    "loss",
    "train/loss",
]
HUMAN_FORMATS = ("terminal", "markdown", "github", "html")
UNSAFE_CHARACTERS = {"\x1b", "\x00", "\u202e", "\u2066", "\u2069", "\x07", "\x85", "\u2028"}

values = st.one_of(
    st.sampled_from(EXTREMES),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(min_value=0.01, max_value=10.0),
)
steps = st.one_of(
    st.integers(min_value=0, max_value=10_000),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, 2**63 - 1, 2**63, -1]),
)
names = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(min_size=1, max_size=30),
    st.builds("".join, st.lists(st.sampled_from(HOSTILE_TEXT), min_size=1, max_size=3)),
)


@pytest.fixture(scope="module")
def counter() -> dict[str, int]:
    return {"cases": 0, "runs": 0, "input_errors": 0, "renders": 0}


@pytest.mark.parametrize("reader", sorted(WRITERS))
def test_every_reader_and_report_survive_hostile_logs(
    reader: str,
    tmp_path_factory: pytest.TempPathFactory,
    counter: dict[str, int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    if reader == "tensorboard":
        pytest.importorskip("tensorboardX")
    before = counter["cases"]

    @settings(
        max_examples=EXAMPLES_PER_READER,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        name=names,
        points=st.lists(st.tuples(steps, values), min_size=1, max_size=30),
        ramp=st.integers(min_value=0, max_value=40),
    )
    def check(name: str, points: list[tuple[int, float | int]], ramp: int) -> None:
        # A plain falling stretch too, so detectors have a series to work on.
        points = [(1000 + i, 2.0 / (1 + i)) for i in range(ramp)] + points
        folder = tmp_path_factory.mktemp(reader)
        path = WRITERS[reader](folder, name, points)
        counter["cases"] += 1
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no numpy noise on stderr
            try:
                run = read_log(path, fmt=reader)
            except InputError:  # the one-line error (the CLI escapes its text)
                counter["input_errors"] += 1
                return
            counter["runs"] += 1
            analysis = check_run(run, Config())
            for output, report in REPORTS.items():
                text = report.render([analysis], RenderOptions(verbose=True))
                text.encode("utf-8")  # strict: no lone surrogate reaches a file
                counter["renders"] += 1
                if output in HUMAN_FORMATS:
                    raw = UNSAFE_CHARACTERS & set(text)
                    assert not raw, (output, sorted(map(ascii, raw)))

    check()
    with capsys.disabled():
        print(
            f"\n[adversarial property] {reader}: {counter['cases'] - before} cases; "
            f"total so far {counter['cases']} cases, {counter['runs']} runs read, "
            f"{counter['input_errors']} one-line input errors, {counter['renders']} reports"
        )
    assert counter["cases"] - before >= EXAMPLES_PER_READER // 2
