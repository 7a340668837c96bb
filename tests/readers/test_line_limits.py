"""D5 (ADVERSARIAL.md): a line longer than the documented limit (or a CSV header naming
too many columns) is the one-line error, found while streaming, so memory never follows one
huge line. The limit is lowered here; benchmarks/bench_long_lines.py measures 200 MB."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainspotter.errors import InputError
from trainspotter.readers import _csv, _files, jsonl
from trainspotter.readers._files import LineLengthGuard


def _guard_error(chunks: list[bytes], limit: int) -> str | None:
    guard = LineLengthGuard("f", limit)
    try:
        for chunk in chunks:
            guard.feed(chunk)
    except InputError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("split", [1, 3, 7, 100])
def test_guard_is_exact_at_the_limit_whatever_the_blocks(split: int) -> None:
    data = b"ab\n" + b"x" * 10 + b"\n" + b"y" * 11 + b"\nz\n"
    chunks = [data[i : i + split] for i in range(0, len(data), split)]
    assert _guard_error(chunks, 11) is None
    assert (
        _guard_error(chunks, 10)
        == "f: line 3 is longer than 10 bytes (the limit for one line of a log)"
    )


def test_guard_catches_a_last_line_without_break() -> None:
    assert _guard_error([b"a\n", b"b" * 6], 5) is not None


def test_jsonl_line_over_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "wide.jsonl"
    keys = ",".join(f'"k{i}_loss": 1.5' for i in range(1000))
    path.write_text('{"step": 1, "loss": 2}\n{"step": 2, ' + keys + "}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"wide.jsonl: line 2 is longer than 4096 bytes"):
        jsonl.JsonlReader().read(path, jsonl.ReadOptions())


def test_csv_header_without_break_over_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "header.csv"
    path.write_bytes(b"a," * 5000 + b"a")
    with pytest.raises(InputError, match=r"header.csv: line 1 is longer than 4096 bytes"):
        _csv.read_csv_table(path, "header.csv")


def test_csv_header_with_too_many_columns(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"m{i}" for i in range(10_001)) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"wide.csv: the header names at least 10,001 columns"):
        _csv.read_csv_table(path, "wide.csv")
