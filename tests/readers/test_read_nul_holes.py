"""A log truncated while its writer kept writing starts with a NUL hole (`readers/_holes.py`):
the lines after it are read, with a note; a binary file is still the one-line error.

`truncated*.log` and their `.log.1` copies are a real seeded torch loop's output and
logrotate's copytruncate done to it from another process, the loop writing the log itself
or through `grep` (tests/data/stdout/generate_truncated.py)."""

from __future__ import annotations

import itertools
import os
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from readers_support import STDOUT_DATA, MakeFile, assert_well_formed
from test_incremental import assert_same_run, tail_for

from trainspotter.cli import main
from trainspotter.errors import InputError
from trainspotter.readers import read_log
from trainspotter.readers._holes import TRUNCATION, NulHoles

TRUNCATED = STDOUT_DATA / "truncated.log"
ROTATED = STDOUT_DATA / "truncated.log.1"
THROUGH_GREP = STDOUT_DATA / "truncated_grep.log"
ROTATED_GREP = STDOUT_DATA / "truncated_grep.log.1"
LINE = re.compile(r"step (\d+) \| loss (\S+) \| lr (\S+)")


def lines(first: int, count: int) -> bytes:
    return b"".join(
        b"step %d | loss %.4f | lr 3.00e-04\n" % (s, 2 / (s + 1))
        for s in range(first, first + count)
    )


def problem_of(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(InputError) as caught:
        read_log(path, fmt=fmt)
    return caught.value.problem


def leading_note(count: int) -> str:
    return f"the file starts with {count} NUL bytes ({TRUNCATION}); read from byte {count}"


def test_copytruncated_log_reads_from_its_first_line_after_the_hole() -> None:
    data = TRUNCATED.read_bytes()
    text = data.lstrip(b"\x00")
    hole = len(data) - len(text)
    # copytruncate: the writer's next line landed where the copy ends.
    assert hole == ROTATED.stat().st_size > 0
    printed = [LINE.match(line) for line in text.decode().splitlines()]
    assert all(printed)
    run = read_log(TRUNCATED)
    assert_well_formed(run)
    assert run.notes()[0] == leading_note(hole)
    loss = run.metrics["train/loss"]
    assert len(loss) == len(printed)
    assert int(loss.steps[0]) == int(printed[0].group(1))  # type: ignore[union-attr]
    assert float(loss.values[0]) == float(printed[0].group(2))  # type: ignore[union-attr]
    # The first step read is the one after the last step the rotated copy holds.
    before = read_log(ROTATED).metrics["train/loss"]
    assert int(loss.steps[0]) == int(before.steps[-1]) + 1
    assert not read_log(ROTATED).notes()


def test_line_cut_by_the_hole_is_not_read() -> None:
    """grep writes 4096-byte blocks: the copy ends mid-line and the rest of that line
    follows the hole. It is not read (a piece of a line is not a point), with a note."""
    data = THROUGH_GREP.read_bytes()
    text = data.lstrip(b"\x00")
    hole = len(data) - len(text)
    copy = ROTATED_GREP.read_bytes()
    assert hole == len(copy) and not copy.endswith(b"\n")
    cut, rest = text.split(b"\n", 1)
    whole = LINE.fullmatch((copy.rsplit(b"\n", 1)[1] + cut).decode())
    assert whole is not None  # the copy's last bytes and the cut line are one printed line
    run = read_log(THROUGH_GREP)
    assert_well_formed(run)
    assert run.notes()[:2] == [
        leading_note(hole),
        f"not read: the line at byte {hole} after a NUL hole, {cut.decode()!r}, is the end of "
        "a line whose start the truncation removed (it is shaped as the end of the line after "
        "it)",
    ]
    assert set(run.metrics) == {"train/loss", "lr"}
    assert run.meta["step_source"] == {"line": len(rest.splitlines())}
    loss = run.metrics["train/loss"]
    assert int(loss.steps[0]) == int(whole.group(1)) + 1
    assert len(loss) == len(rest.splitlines())


def test_first_line_after_a_hole_unlike_the_next_is_read(make_file: MakeFile) -> None:
    """Only the end of a line shaped like the next is a cut line: an evaluation line
    after the hole is read."""
    path = make_file("train.log", b"\x00" * 64 + b"step 9 | val_loss 0.5\n" + lines(10, 5))
    run = read_log(path)
    assert run.notes() == [leading_note(64)]
    assert list(run.metrics["eval/loss"].steps) == [9]


def test_hole_in_the_middle_at_a_line_start(make_file: MakeFile) -> None:
    path = make_file("train.log", lines(0, 20) + b"\x00" * 5000 + lines(20, 20))
    run = read_log(path)
    assert len(run.metrics["train/loss"]) == 40
    at = len(lines(0, 20))
    assert run.notes() == [
        f"skipped 5000 NUL bytes at the start of the line at byte {at} (a hole: {TRUNCATION}); "
        "the lines before and after it are read"
    ]


def test_hole_larger_than_the_head_and_a_line(make_file: MakeFile) -> None:
    """Longer than the sniffed head (64 KiB) and the longest line (1 MiB); sparse."""
    path = make_file("train.log", b"")
    size = 3 << 20
    with path.open("r+b") as handle:
        handle.truncate(size)  # a sparse hole, as a truncated log's is
        handle.seek(size)
        handle.write(lines(500, 30))
    run = read_log(path)
    assert run.notes()[0] == leading_note(size)
    assert int(run.metrics["train/loss"].steps[0]) == 500


def test_jsonl_after_a_hole(make_file: MakeFile) -> None:
    records = b"".join(b'{"step": %d, "loss": %.3f}\n' % (s, 1 / (s + 1)) for s in range(40, 60))
    run = read_log(make_file("metrics.jsonl", b"\x00" * 300 + records))
    assert run.notes()[0] == leading_note(300)
    assert int(run.metrics["train/loss"].steps[0]) == 40


def test_csv_after_a_hole_says_why_it_cannot_be_read(make_file: MakeFile) -> None:
    rows = b"".join(b"%d,%.3f,0.001\n" % (s, 1 / (s + 1)) for s in range(40, 60))
    assert problem_of(make_file("log.csv", b"\x00" * 300 + rows)) == (
        f"the file starts with 300 NUL bytes ({TRUNCATION}); this format cannot be read "
        "without the lines the truncation removed"
    )


def test_csv_with_a_hole_at_a_line_start(make_file: MakeFile) -> None:
    rows = [b"%d,%.3f\n" % (s, 1 / (s + 1)) for s in range(40)]
    head = b"step,loss\n" + b"".join(rows[:20])
    path = make_file("log.csv", head + b"\x00" * 300 + b"".join(rows[20:]))
    assert problem_of(path) == (
        f"300 NUL bytes at the start of the line at byte {len(head)} (a hole: {TRUNCATION}); "
        "this format cannot be read past it"
    )


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"\x00" * 500 + random.Random(3).randbytes(4000), id="random bytes"),
        pytest.param(b"\x00" * 64 + lines(0, 5) + b"\x00\x01\x02" * 50 + lines(5, 5), id="NULs in"),
        pytest.param(lines(0, 5)[:-7] + b"\x00" * 100 + lines(5, 5), id="mid-line run"),
        pytest.param(bytes(range(256)) * 4, id="every byte"),
        pytest.param(b"\x00\x01\x02 not a training log\n", id="NUL then control bytes"),
    ],
)
def test_binary_data_is_still_the_one_line_error(
    make_file: MakeFile, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = make_file("train.log", content)
    assert problem_of(path) == "not a text training log (binary data or not UTF-8)"
    assert main(["analyze", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err
    assert "not a text training log" in captured.err


def test_non_utf8_after_the_hole_names_its_file_offset(make_file: MakeFile) -> None:
    text = lines(0, 5) + "caf\xe9 loss 3\n".encode("latin-1") + lines(5, 5)
    path = make_file("train.log", b"\x00" * 100 + text)
    at = 100 + text.index(b"\xe9")
    assert problem_of(path) == f"not UTF-8 text (byte 0xe9 at offset {at})"
    assert problem_of(path, "stdout") == f"not UTF-8 text (byte 0xe9 at offset {at})"


def test_only_nul_bytes(make_file: MakeFile) -> None:
    path = make_file("train.log", b"\x00" * 5000)
    expected = (
        f"the file holds only 5000 NUL bytes and no text ({TRUNCATION}, nothing written since)"
    )
    assert problem_of(path) == expected
    assert problem_of(path, "stdout") == expected


def test_watch_follows_a_log_truncated_under_its_writer(tmp_path: Path) -> None:
    """A writer without O_APPEND (the shell's `>`) and a real truncation between polls."""
    target = tmp_path / "train.log"
    with target.open("wb") as writer:
        writer.write(lines(0, 30))
        writer.flush()
        tail = tail_for(target)
        assert tail.poll().points == 30
        os.truncate(target, 0)  # `: > train.log`, copytruncate's second half
        writer.write(lines(30, 10))
        writer.flush()
        growth = tail.poll()
        assert growth.restarted and growth.points == 10 and growth.last_step == 39
        writer.write(lines(40, 10))
        writer.flush()
        assert tail.poll().points == 10
    tail.poll(final=True)
    run = tail.run()
    assert run is not None and run.notes()[0] == leading_note(len(lines(0, 30)))
    assert_same_run(run, read_log(target))


PIECES = [b"\x00" * 3, b"\x00", b"\n", b"\r", b"ab 1", b"2.5", b" ", b"step 3 | loss 1.5\n"]


@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=30),
    cuts=st.lists(st.integers(0, 300), max_size=6),
)
def test_strip_is_the_same_in_any_blocks(pieces: list[bytes], cuts: list[int]) -> None:
    """Property: bytes fed in any blocks give the same kept bytes, runs and cut lines,
    and every kept byte maps back to its own offset in the file."""
    data = b"".join(pieces)
    whole = NulHoles()
    kept = whole.strip(data) + whole.finish()
    fed = NulHoles()
    bounds = [0, *sorted(min(c, len(data)) for c in cuts), len(data)]
    given_back = b"".join(fed.strip(data[a:b]) for a, b in itertools.pairwise(bounds))
    assert given_back + fed.finish() == kept
    assert (fed.offsets, fed.lengths) == (whole.offsets, whole.lengths)
    assert fed.cut_lines == whole.cut_lines
    assert fed.kept == whole.kept == len(kept)
    assert bytes(data[whole.file_offset(i)] for i in range(len(kept))) == kept
    for offset, line in whole.cut_lines:
        assert data[offset : offset + len(line) + 1] == line + b"\n"
    assert not kept.startswith(b"\x00")
    assert b"\n\x00" not in kept and b"\r\x00" not in kept
