"""The CLI's contract: one-line errors with exit code 2, exit codes by severity, outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainspotter.cli import main

REPO = Path(__file__).resolve().parents[1]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_error(err: str, path: str, fragment: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith(f"trainspotter: error: {path}: "), err
    assert fragment in lines[-1], err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("empty.csv", b"", "file is empty"),
        ("bad.json", b'{"log_history": [', "invalid JSON"),
        ("trainer_state.json", b'{"global_step": 3}', "no log_history"),
        ("words.csv", b"name,colour\nalpha,red\nbeta,blue\n", "no numeric column"),
        ("garbage.bin", bytes(range(256)) * 8, "binary"),
        ("latin1.csv", "step,loss\n1,0.5\n# caf\xe9\n".encode("latin-1"), "UTF-8"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, fragment: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    code, _, err = _run(capsys, "analyze", str(path))
    assert code == 2
    _assert_one_line_error(err, str(path), fragment)
    assert path.read_bytes() == content, "the input must never be modified"


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "nope.csv")
    code, _, err = _run(capsys, "analyze", path)
    assert code == 2
    _assert_one_line_error(err, path, "no such file or folder")


def test_folder_without_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "README.txt").write_text("nothing here\n")
    code, _, err = _run(capsys, "analyze", str(tmp_path))
    assert code == 2
    _assert_one_line_error(err, str(tmp_path), "no training log found")


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "analyze", "x.csv", "--fail-on", "fatal")
    assert code == 2
    assert "trainspotter: error:" in err and "Traceback" not in err
    code, _, err = _run(capsys, "explain", "no_such_detector")
    assert code == 2 and "unknown detector" in err


def test_out_refuses_to_overwrite_an_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.csv"
    content = "step,loss\n0,2.0\n1,1.9\n2,1.8\n"
    log.write_text(content)
    code, _, err = _run(capsys, "analyze", str(log), "--out", str(log))
    assert code == 2 and "would overwrite an input" in err
    assert log.read_text() == content


def test_json_output_to_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.csv"
    log.write_text("step,loss,lr\n" + "".join(f"{i},{2.0 / (1 + i)},0.001\n" for i in range(50)))
    out = tmp_path / "report.json"
    code, stdout, _ = _run(capsys, "analyze", str(log), "--output", "json", "--out", str(out))
    assert stdout == ""
    doc = json.loads(out.read_text())
    assert doc["run"]["source_format"] == "csv"
    assert doc["run"]["metrics"]["train/loss"]["count"] == 50
    assert code in (0, 1)


def test_detectors_and_explain_list_every_registered_detector(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from trainspotter.detectors import DETECTORS

    code, out, _ = _run(capsys, "detectors")
    assert code == 0
    for name in DETECTORS:
        assert f"{name}:" in out
        code, text, _ = _run(capsys, "explain", name)
        assert code == 0 and "false" in text.lower(), f"{name} must document false alarms"


def test_python_dash_m_and_no_color_when_piped(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("step,loss\n" + "".join(f"{i},{1.0 / (1 + i)}\n" for i in range(20)))
    proc = subprocess.run(
        [sys.executable, "-m", "trainspotter", "analyze", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout
    assert "log.csv" in proc.stdout
