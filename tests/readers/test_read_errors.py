"""Bad input gives one InputError naming the file and the problem, for every reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from readers_support import MakeFile

from trainspotter.errors import InputError
from trainspotter.readers import READERS, read_log

BINARY = bytes(range(256)) * 4
LATIN1 = "step,loss\n1,0.5\n2,caf\xe9\n".encode("latin-1")


def problem_of(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(InputError) as caught:
        read_log(path, fmt=fmt)
    assert str(caught.value) == f"{path}: {caught.value.problem}"
    return caught.value.problem


def test_missing_file(tmp_path: Path) -> None:
    assert problem_of(tmp_path / "nope.csv") == "no such file or folder"


def test_empty_file(make_file: MakeFile) -> None:
    assert problem_of(make_file("empty.csv", b"")) == "file is empty"


def test_folder_without_a_log(make_file: MakeFile, tmp_path: Path) -> None:
    make_file("run/notes.txt", "nothing here")
    assert problem_of(tmp_path / "run").startswith("no training log found in this folder")


def test_folder_with_several_csv_files_is_ambiguous(make_file: MakeFile, tmp_path: Path) -> None:
    make_file("run/a.csv", "step,loss\n1,0.5\n")
    make_file("run/b.csv", "step,loss\n1,0.5\n")
    assert problem_of(tmp_path / "run").startswith("no training log found in this folder")
    assert problem_of(tmp_path / "run", "csv") == "no csv log found in this folder"


def test_invalid_json(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", '{"log_history": [}')
    assert problem_of(path) == "invalid JSON: Expecting value at line 1 column 18"


def test_trainer_state_without_log_history(make_file: MakeFile) -> None:
    path = make_file("trainer_state.json", '{"best_metric": 1, "global_step": 3}')
    assert problem_of(path) == "not a trainer_state.json: no log_history"


def test_csv_without_a_numeric_column(make_file: MakeFile) -> None:
    path = make_file("log.csv", "run,status\na,done\nb,failed\n")
    assert problem_of(path) == "no numeric column"


def test_binary_garbage(make_file: MakeFile) -> None:
    assert problem_of(make_file("blob.csv", BINARY)) == (
        "not a text training log (binary data or not UTF-8)"
    )


def test_non_utf8_text(make_file: MakeFile) -> None:
    path = make_file("log.csv", LATIN1)
    assert problem_of(path) == "not UTF-8 text (byte 0xe9 at offset 21)"
    assert problem_of(path, "csv") == "not UTF-8 text (byte 0xe9 at offset 21)"


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_binary_garbage_forced_through_every_reader(make_file: MakeFile, fmt: str) -> None:
    problem = problem_of(make_file("blob", BINARY), fmt)
    assert problem and "\n" not in problem


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_non_utf8_forced_through_every_reader(make_file: MakeFile, fmt: str) -> None:
    problem = problem_of(make_file("log.txt", LATIN1), fmt)
    assert problem and "\n" not in problem


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_empty_file_forced_through_every_reader(make_file: MakeFile, fmt: str) -> None:
    assert problem_of(make_file("empty", b""), fmt) == "file is empty"
