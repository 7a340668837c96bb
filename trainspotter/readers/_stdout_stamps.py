"""Wall-clock times of printed progress lines: the date and time a logging formatter puts
at the start of each line (`readers/stdout.py` takes it as the line's points' wall time).

Known formats, at the very start of the line (nothing before it), then a character that
is not part of a word or number (`2024-05-01 12:00:00,123 - INFO - ...`):

- Python `logging`'s default `%(asctime)s`, `YYYY-MM-DD HH:MM:SS,mmm`; the same with a `.`
  before the fraction (loguru's `YYYY-MM-DD HH:mm:ss.SSS`), with any number of fraction
  digits (1-9), or with none (a `datefmt` of `%Y-%m-%d %H:%M:%S`);
- ISO 8601 with a `T` between the date and the time, `YYYY-MM-DDTHH:MM:SS[.ffffff]`,
  possibly with a zone, `Z` or `+HH:MM` / `+HHMM` (`datetime.isoformat()`);
- either of them in square brackets, `[2024-05-01 12:00:00]`, `[2024-05-01T12:00:00Z]`.

A date is required: a time of day alone (`12:00:00`) cannot tell the day it rolls over at
midnight from a restart, so it is never read. The seconds are counted from the date
(days since 1970-01-01, leap years included), so a run that crosses midnight or a month's
end keeps counting. A time with a zone is converted to UTC; one without a zone is read as
if it were UTC (the local time of the machine that printed it, unknown here): only the
differences between the times of one log are used, and they are right except across a
daylight-saving change, where the clock printed goes back an hour (the reader's
monotonic check then drops the times, `stdout.py`) or jumps forward one (one logging
interval an hour longer, which a median ignores).

Each line is matched once by `stamp_of` on the line-by-line path; on the column path
(lines of one layout, `_stdout_shapes.layouts`: the same characters but for their digits,
so a stamp stands at the same place on every line, and the lines are of one length)
`stamp_column` matches the first line, joins the lines into a matrix of characters and
reads every field of every line with one matrix product; a block of lines of one date
(most of them) has its day counted once. `LineStamps` keeps the times of a log while
every progress line has one, and falls back to `stamp_of` line by line to name the line
that stops them, so both paths say the same.
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from collections.abc import Iterable
from typing import Protocol

import numpy as np
import numpy.typing as npt

# ASCII digits only: `layouts` turns ASCII digits alone into `1`.
_STAMP = re.compile(
    r"(?P<open>\[)?"
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})(?P<sep>[T ])"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:(?P<dot>[.,])(?P<fraction>[0-9]{1,9}))?"
    r"(?P<zone>Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"(?(open)\])"
    r"(?![\w.:,+-])"
)
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""February's 29 is checked against the year in `_valid`."""


def stamp_format(match: re.Match[str]) -> str:
    """The format of a matched stamp, as a note names it (`YYYY-MM-DD HH:MM:SS,mmm`)."""
    text = f"YYYY-MM-DD{match['sep']}HH:MM:SS"
    if match["fraction"] is not None:
        text += match["dot"] + "f" * len(match["fraction"])
    zone = match["zone"]
    if zone is not None:
        text += "Z" if zone == "Z" else ("+HH:MM" if ":" in zone else "+HHMM")
    return f"[{text}]" if match["open"] else text


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _zone_seconds(zone: str | None) -> int:
    """The zone's offset from UTC in seconds (`+02:00` -> 7200); 0 for none or `Z`."""
    if zone is None or zone == "Z":
        return 0
    digits = zone[1:].replace(":", "")
    offset = int(digits[:2]) * 3600 + int(digits[2:]) * 60
    return -offset if zone[0] == "-" else offset


def stamp_of(line: str) -> tuple[str, float] | None:
    """The format and the seconds (since 1970-01-01, see the module docstring) of the
    stamp at the start of `line`, or None when it has none in a known format or its date
    or time is impossible (month 13, 25 o'clock)."""
    match = _STAMP.match(line)
    if match is None:
        return None
    year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
    hour, minute, second = int(match["hour"]), int(match["minute"]), int(match["second"])
    if not _valid_date(year, month, day) or hour > 23 or minute > 59 or second > 60:
        return None  # second 60: a leap second
    fraction = match["fraction"]
    seconds = float(
        _days_from_civil(year, month, day) * 86400
        + hour * 3600
        + minute * 60
        + second
        - _zone_seconds(match["zone"])
    )
    if fraction is not None:
        seconds += int(fraction) / 10 ** len(fraction)
    return stamp_format(match), seconds


_FIELDS = ("year", "month", "day", "hour", "minute", "second", "fraction")
_TIME_LIMITS = np.array([23, 59, 60])
"""The largest hour, minute and second (60: a leap second)."""


def _valid_date(year: int, month: int, day: int) -> bool:
    if not (1 <= month <= 12 and 1 <= day <= _DAYS_IN_MONTH[month - 1]):
        return False
    return not (month == 2 and day == 29 and not _leap(year))


@functools.lru_cache(maxsize=64)
def _digit_weights(spans: tuple[tuple[int, int], ...], width: int) -> npt.NDArray[np.float64]:
    """The matrix that turns a row of digits (`width` of them) into the numbers at
    `spans`: each number is the weighted sum of its digits."""
    weights = np.zeros((width, len(spans)))
    for field, (start, end) in enumerate(spans):
        weights[start:end, field] = 10.0 ** np.arange(end - start - 1, -1, -1)
    return weights


def _days_of_dates(fields: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
    """Days since 1970-01-01 of each row's (year, month, day), as `_days_from_civil`;
    None when one is impossible."""
    year, month, day = fields[:, 0], fields[:, 1], fields[:, 2]
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    in_month = np.array(_DAYS_IN_MONTH, dtype=np.int64)[np.clip(month, 1, 12) - 1]
    valid = (month >= 1) & (month <= 12) & (day >= 1) & (day <= in_month)
    valid &= ~((month == 2) & (day == 29) & ~leap)
    if not bool(valid.all()):
        return None
    shifted = year - (month <= 2)
    era = shifted // 400
    year_of_era = shifted - era * 400
    day_of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return np.asarray(era * 146097 + day_of_era - 719468, dtype=np.int64)


def stamp_column(lines: list[str]) -> tuple[str, npt.NDArray[np.float64]] | None:
    """The format and the seconds of the stamps of lines of one layout (the digits of
    every line at the places of the first's), or None when the first has no stamp in a
    known format or a line's date or time is impossible. The same values as `stamp_of`
    line by line."""
    match = _STAMP.match(lines[0])
    if match is None:
        return None
    width = match.end()
    # Lines of one layout are of one length: joined, they are rows of a character matrix
    # (a character outside ASCII, past the stamp, is one `?` byte).
    size = len(lines[0])
    raw = "".join(lines).encode("ascii", errors="replace")
    if len(raw) != size * len(lines):
        raw, size = "".join([line[:width] for line in lines]).encode("ascii", "replace"), width
    characters = np.frombuffer(raw, dtype=np.uint8).reshape(len(lines), size)[:, :width]
    spans = [match.span(name) for name in _FIELDS if match[name] is not None]
    zone = match["zone"]
    if zone is not None and zone != "Z":
        start = match.start("zone")
        minutes_at = start + (4 if ":" in zone else 3)
        spans += [(start + 1, start + 3), (minutes_at, minutes_at + 2)]
    # One matrix product reads every number of every line (float64 is exact: each is
    # below 2**53; a non-digit column has weight 0).
    weights = _digit_weights(tuple(spans), width)
    fields = ((characters - 48) @ weights).astype(np.int64)
    if not bool((fields[:, 3:6] <= _TIME_LIMITS).all()):
        return None
    date_end = match.end("day")
    if bool((characters[:, :date_end] == characters[0, :date_end]).all()):
        # One date for all (most blocks of lines): computed once.
        year, month, day = (int(v) for v in fields[0, :3])
        if not _valid_date(year, month, day):
            return None
        days: int | npt.NDArray[np.int64] = _days_from_civil(year, month, day)
    else:
        found = _days_of_dates(fields)
        if found is None:
            return None
        days = found
    whole = days * 86400 + fields[:, 3:6] @ np.array([3600, 60, 1], dtype=np.int64)
    if zone is not None and zone != "Z":
        signs = np.where(characters[:, match.start("zone")] == ord("-"), -1, 1)
        whole = whole - signs * (fields[:, -2] * 3600 + fields[:, -1] * 60)
    seconds = whole.astype(np.float64)
    if match["fraction"] is not None:
        seconds += fields[:, 6] / 10 ** len(match["fraction"])
    return stamp_format(match), seconds


LOGGING_DEFAULT = "YYYY-MM-DD HH:MM:SS,fff"
"""Python `logging`'s default `%(asctime)s`."""


class _HasWalls(Protocol):
    walls: array[float]


class LineStamps:
    """The wall times of a log's progress lines while every one of them carries a stamp
    in one known format, in order (see `stdout.py`); the first that does not stops it
    for the rest of the log and the times read so far are dropped."""

    def __init__(self) -> None:
        self.format: str | None = None
        """The format of the first progress line's stamp, None before one is seen."""
        self.stopped: str | None = None
        """Why the times are not read (None while they are)."""
        self._last = -math.inf

    @property
    def read(self) -> bool:
        """Every progress line so far carried a stamp in one format, in order."""
        return self.stopped is None and self.format is not None

    def _stop(self, why: str, metrics: Iterable[_HasWalls]) -> None:
        self.stopped = why
        for metric in metrics:
            metric.walls = array("d")

    def _check(self, found: str, line_number: int, metrics: Iterable[_HasWalls]) -> bool:
        if self.format is None:
            self.format = found
        elif found != self.format:
            self._stop(
                f"the stamp of line {line_number} is written {found}, earlier ones {self.format}",
                metrics,
            )
        return self.stopped is None

    def line(self, line: str, line_number: int, metrics: Iterable[_HasWalls]) -> float | None:
        """The wall time of one progress line (`line_number` in the file), or None when
        the times are not (or no longer) read."""
        if self.stopped is not None:
            return None
        found = stamp_of(line)
        if found is None:
            self._stop(
                f"line {line_number} does not start with a timestamp in a known format",
                metrics,
            )
            return None
        if not self._check(found[0], line_number, metrics):
            return None
        seconds = found[1]
        if seconds < self._last:
            self._stop(f"the timestamp goes backwards in line {line_number}", metrics)
            return None
        self._last = seconds
        return seconds

    def column(
        self, lines: list[str], first_line: int, metrics: Iterable[_HasWalls]
    ) -> bytes | None:
        """The wall times (float64 bytes) of progress lines of one layout, the first of
        them line `first_line` of the file; None when the times are not read."""
        if self.stopped is not None:
            return None
        found = stamp_column(lines)
        if found is not None and found[0] == (self.format or found[0]):
            seconds = found[1]
            if not (np.diff(seconds, prepend=self._last) < 0).any():
                self.format = found[0]
                self._last = float(seconds[-1])
                return seconds.tobytes()
        # Something to report: line by line, so the note names the line it would name
        # had every line been read one by one.
        walls = array("d")
        for index, line in enumerate(lines):
            wall = self.line(line, first_line + index, metrics)
            if wall is None:
                return None
            walls.append(wall)
        return walls.tobytes()

    def note(self) -> str | None:
        """The reader note on the wall times: which format was read, or why stamps seen
        were not used; None for a log whose progress lines carry none."""
        if self.format is None:
            return None
        default = self.format == LOGGING_DEFAULT
        name = self.format + (" (Python logging's default)" if default else "")
        if self.stopped is not None:
            return (
                f"no wall-clock times: progress lines start with a timestamp ({name}), but "
                f"{self.stopped}; the times are read only when every progress line carries "
                "one, in one format, never going backwards"
            )
        zone = "Z" in self.format or "+" in self.format
        return (
            f"wall-clock times read from the timestamp that starts every progress line: "
            f"{name}" + ("" if zone else ", no time zone (only the time between lines is used)")
        )
