"""The stdout reader takes the timestamp that starts every progress line as its points'
wall time (`readers/_stdout_stamps.py`): the known formats, day, month and year
rollover, time zones, and the cases where the times are not read (a line without a
stamp, a time going backwards, a time of day without a date)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from readers_support import MakeFile, assert_well_formed

from trainspotter.model import Run
from trainspotter.readers import read_log
from trainspotter.readers._stdout_stamps import stamp_column, stamp_of
from trainspotter.readers.base import ReadOptions


def read_lines(make_file: MakeFile, lines: list[str]) -> Run:
    run = read_log(make_file("train.log", "\n".join(lines) + "\n"), fmt="stdout")
    assert_well_formed(run)
    return run


def utc(text: str) -> float:
    """Seconds since 1970 of an ISO date and time, read as UTC by the standard library."""
    moment = datetime.fromisoformat(text.replace(",", "."))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


STAMPED = [
    # Python logging's default %(asctime)s, across a midnight, a leap day's month end and
    # a year end.
    (
        "{} - INFO - Epoch {}/9, Train Loss: 0.5",
        [
            "2023-12-31 23:59:58,900",
            "2024-01-01 00:00:01,050",
            "2024-02-28 23:59:59,999",
            "2024-02-29 00:10:00,000",
            "2024-03-01 00:00:00,001",
        ],
        "YYYY-MM-DD HH:MM:SS,fff",
    ),
    # loguru's `YYYY-MM-DD HH:mm:ss.SSS | LEVEL | ...`
    (
        "{} | INFO     | __main__:train:42 - step {} loss 0.5",
        ["2025-06-30 23:59:59.500", "2025-07-01 00:00:00.250", "2025-07-01 00:00:02.000"],
        "YYYY-MM-DD HH:MM:SS.fff",
    ),
    # ISO 8601 with a zone, bracketed: 03:00 at +02:00 is 01:00 UTC, a minute after the
    # first line.
    (
        "[{}] iter {}: loss 0.5",
        ["2025-03-30T00:59:00+00:00", "2025-03-30T03:00:00+02:00", "2025-03-30T01:00:30+00:00"],
        "[YYYY-MM-DDTHH:MM:SS+HH:MM]",
    ),
    # A bracketed date and time without a fraction.
    (
        "[{}] Epoch {} | train_loss=0.5",
        ["2024-05-01 12:00:00", "2024-05-01 12:25:00", "2024-05-02 01:00:00"],
        "[YYYY-MM-DD HH:MM:SS]",
    ),
]


@pytest.mark.parametrize(("shape", "stamps", "name"), STAMPED)
def test_every_progress_line_stamped_gives_its_points_wall_times(
    make_file: MakeFile, shape: str, stamps: list[str], name: str | None
) -> None:
    run = read_lines(make_file, [shape.format(s, i + 1) for i, s in enumerate(stamps)])
    walls = run.metrics["train/loss"].wall_time
    assert walls.tolist() == pytest.approx([utc(s.strip("[]")) for s in stamps], abs=1e-6)
    notes = [n for n in run.notes() if "wall-clock" in n]
    assert len(notes) == 1 and "wall-clock times read from the timestamp" in notes[0]
    assert name in notes[0]


def test_the_column_path_reads_what_each_line_reads() -> None:
    """Lines of one layout (`stamp_column`): the digits read by position across a day's,
    a month's and a year's end, and an offset east and west of UTC."""
    days = ["2023-12-31 23:59:59,999", "2024-01-01 00:00:00,000", "2024-02-29 12:34:56,789"]
    assert stamp_column([f"{d} - loss 0.5" for d in days]) == (
        "YYYY-MM-DD HH:MM:SS,fff",
        pytest.approx([utc(d) for d in days]),
    )
    zoned = ["2024-07-01T10:00:00.5+05:30", "2024-07-01T10:00:00.5-03:00"]
    seconds = [utc(z) for z in zoned]
    assert [stamp_of(z) for z in zoned] == [("YYYY-MM-DDTHH:MM:SS.f+HH:MM", s) for s in seconds]
    found = stamp_column(zoned)
    assert found is not None and found[1].tolist() == seconds


@pytest.mark.parametrize(
    "line",
    [
        "12:00:00 - INFO - loss 0.5",  # a time of day alone: no day to roll over to
        "2024-13-01 12:00:00,000 - loss 0.5",  # month 13
        "2023-02-29 12:00:00,000 - loss 0.5",  # not a leap year
        "2024-05-01 24:00:00,000 - loss 0.5",
        "INFO:root:2024-05-01 12:00:00 loss 0.5",  # not at the start of the line
        "2024-05-01 12:00:00,1234567890 - loss 0.5",  # ten digits of a fraction
        "20240501 120000 loss 0.5",
    ],
)
def test_no_stamp_in_a_known_format(line: str) -> None:
    assert stamp_of(line) is None
    assert stamp_column([line, line]) is None


def test_logging_lines_without_a_time_have_no_wall_times(make_file: MakeFile) -> None:
    run = read_lines(make_file, [f"INFO:root:Epoch {e}/9, Train Loss: 0.{e}" for e in range(1, 9)])
    assert np.isnan(run.metrics["train/loss"].wall_time).all()
    assert not [n for n in run.notes() if "wall-clock" in n]


def test_a_progress_line_without_a_stamp_drops_every_time(make_file: MakeFile) -> None:
    lines = [f"2024-05-01 12:00:{s:02d},000 - INFO - step {s} loss 0.5" for s in range(1, 9)]
    lines[5] = "step 6 loss 0.5"  # printed with print(), not the logger
    lines.insert(3, "a warning printed without a stamp")  # not a progress line: no matter
    run = read_lines(make_file, lines * 2)
    assert np.isnan(run.metrics["train/loss"].wall_time).all()
    assert (
        "no wall-clock times: progress lines start with a timestamp (YYYY-MM-DD HH:MM:SS,fff "
        "(Python logging's default)), but line 7 does not start with a timestamp in a known "
        "format; the times are read only when every progress line carries one, in one "
        "format, never going backwards"
    ) in run.notes()


def test_a_time_going_backwards_drops_every_time(make_file: MakeFile) -> None:
    """Daylight saving's end, a machine's clock set back, or two processes' lines: the
    differences are no longer the time a step took."""
    stamps = ["01:58:00", "01:59:00", "02:00:00", "02:01:00", "01:02:00", "01:03:00"]
    lines = [f"2024-10-27 {t},000 - INFO - step {i} loss 0.5" for i, t in enumerate(stamps)]
    run = read_lines(make_file, lines * 3)
    assert np.isnan(run.metrics["train/loss"].wall_time).all()
    assert any("the timestamp goes backwards in line 5;" in n for n in run.notes())


def test_two_formats_drop_every_time(make_file: MakeFile) -> None:
    lines = [
        "2024-05-01 12:00:00,000 - step 1 loss 0.5",
        "2024-05-01T12:00:01 - step 2 loss 0.4",
    ]
    run = read_lines(make_file, lines)
    assert np.isnan(run.metrics["train/loss"].wall_time).all()
    assert any("line 2 is written YYYY-MM-DDTHH:MM:SS" in n for n in run.notes())


def test_each_appended_run_keeps_its_own_times(make_file: MakeFile) -> None:
    """Two launches of one script in one file (058 of the wild7 audit has three)."""
    first = [
        f"2025-04-24 21:{10 + e:02d}:00,000 - INFO - Epoch [{e}/50], Train Loss: 1.{e}"
        for e in range(1, 9)
    ]
    second = [
        f"2025-04-25 00:{10 + e:02d}:30,500 - INFO - Epoch [{e}/50], Train Loss: 1.{e}"
        for e in range(1, 7)
    ]
    path = make_file("train.log", "\n".join(first + second) + "\n")
    latest = read_log(path, fmt="stdout")
    assert latest.meta["appended_runs"] == 2
    assert latest.metrics["train/loss"].wall_time.tolist() == [utc(s[:23]) for s in second]
    earlier = read_log(path, fmt="stdout", options=ReadOptions(run_name="1"))
    assert earlier.metrics["train/loss"].wall_time.tolist() == [utc(s[:23]) for s in first]
