"""D7, D8, D9, D16 (ADVERSARIAL.md): every file written stays in the report folder (or the
file the user named), follows no symlink out of it, never replaces an input log; a
report folder that cannot be used is the one-line exit-2 error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hardening_support import HEALTHY_CSV, one_line_error, run_cli, shared_folder

from trainspotter.cli import main
from trainspotter.config import ConfigError, parse_config


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.csv").write_text(HEALTHY_CSV)
    (tmp_path / "runs" / "b.csv").write_text(HEALTHY_CSV)
    return tmp_path


# --- D7: report.directory from a config must be a relative path inside the working folder


@pytest.mark.parametrize(
    ("directory", "words"),
    [
        ("../outside", "'..'"),
        ("reports/../../outside", "'..'"),
        ("/tmp/OUTSIDE", "absolute"),
        ("C:/OUTSIDE", "absolute"),
        ("\\\\server\\share", "absolute"),
    ],
)
def test_check_config_refuses_a_report_folder_outside(directory: str, words: str) -> None:
    text = f"paths: ['runs/*.csv']\nreport:\n  directory: {json.dumps(directory)}\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, ".trainspotter.yml")
    message = str(caught.value)
    assert message.startswith(".trainspotter.yml:3: report.directory:"), message
    assert words in message


def test_check_config_accepts_a_folder_inside() -> None:
    config = parse_config("report:\n  directory: out/reports/./x\n", "c.yml")
    assert config.report.directory == "out/reports/./x"


def test_check_config_cli_names_file_and_line(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (logs / ".trainspotter.yml").write_text("report:\n  directory: ../outside\n")
    assert main(["check-config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainspotter: error: .trainspotter.yml:2: report.directory:"), err


def test_gate_refuses_a_committed_symlink_as_report_folder(
    logs: Path, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (logs / "trainspotter-report").symlink_to(outside, target_is_directory=True)
    assert main(["gate", "runs/*.csv"]) == 2
    err = capsys.readouterr().err
    assert "must lie inside the working folder" in err
    assert list(outside.iterdir()) == []


# --- D8: no write through a symlink, no input replaced


def test_gate_replaces_a_symlink_in_the_report_folder_never_writing_through(
    logs: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    precious = tmp_path_factory.mktemp("elsewhere") / "precious.txt"
    precious.write_text("precious\n")
    report = logs / "trainspotter-report"
    report.mkdir()
    (report / "summary.md").symlink_to(precious)
    assert main(["gate", "runs/*.csv"]) == 0
    assert precious.read_text() == "precious\n"
    assert not (report / "summary.md").is_symlink()
    assert "trainspotter gate" in (report / "summary.md").read_text()


def test_gate_refuses_an_html_subfolder_that_is_a_symlink(
    logs: Path, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside_html")
    report = logs / "trainspotter-report"
    report.mkdir()
    (report / "html").symlink_to(outside, target_is_directory=True)
    assert main(["gate", "runs/*.csv"]) == 2
    assert "is a symbolic link; not writing through it" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_gate_never_replaces_an_input_log(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = logs / "trainspotter.json"
    original = '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.0}\n{"step": 3, "loss": 0.5}\n'
    log.write_text(original)
    code = main(["gate", "trainspotter.json", "--report-dir", "."])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert log.read_text() == original
    assert "the json report would replace this input log" in captured.err
    # every other report is still written, and says what was not
    assert "would replace this input log" in (logs / "summary.md").read_text()


def test_gate_never_replaces_its_baseline(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The config's `baseline:` is an input log too, even when it sits where a report goes."""
    baseline = logs / "reports" / "trainspotter.json"
    baseline.parent.mkdir()
    original = '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.0}\n{"step": 3, "loss": 0.5}\n'
    baseline.write_text(original)
    (logs / ".trainspotter.yml").write_text(
        "baseline: reports/trainspotter.json\nreport:\n  directory: reports\n"
    )
    code = main(["gate", "runs/*.csv"])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert baseline.read_text() == original
    assert "the json report would replace this input log" in captured.err


# --- D16: --out / --html against glob and folder inputs


def test_analyze_out_refuses_a_log_a_glob_matched(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (logs / "runs" / "a.csv").read_text()
    assert main(["analyze", "runs/*.csv", "--output", "json", "--out", "runs/a.csv"]) == 2
    assert "would overwrite an input log" in capsys.readouterr().err
    assert (logs / "runs" / "a.csv").read_text() == before


def test_analyze_html_refuses_the_log_inside_a_folder_input(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = logs / "hf_dir"
    folder.mkdir()
    state = {"log_history": [{"step": i, "loss": 2.0 / i} for i in range(1, 30)], "global_step": 29}
    (folder / "trainer_state.json").write_text(json.dumps(state))
    before = (folder / "trainer_state.json").read_text()
    assert main(["analyze", "hf_dir", "--html", "hf_dir/trainer_state.json"]) == 2
    assert "would overwrite an input log" in capsys.readouterr().err
    assert (folder / "trainer_state.json").read_text() == before
    # a new file beside the log is fine
    assert main(["analyze", "hf_dir", "--html", "hf_dir/report.html"]) == 0


def test_analyze_out_replaces_a_symlink_never_writing_through(
    logs: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    precious = tmp_path_factory.mktemp("elsewhere2") / "precious.txt"
    precious.write_text("precious\n")
    (logs / "out.json").symlink_to(precious)
    assert main(["analyze", "runs/a.csv", "--output", "json", "--out", "out.json"]) == 0
    assert precious.read_text() == "precious\n"
    json.loads((logs / "out.json").read_text())


def test_written_reports_are_readable_by_others(logs: Path) -> None:
    """Files are renamed into place from a temporary file: they keep the umask's mode,
    not mkstemp's 0600 (the Action's upload step reads them as another user)."""
    old = os.umask(0o022)
    try:
        assert main(["gate", "runs/*.csv"]) == 0
    finally:
        os.umask(old)
    summary = logs / "trainspotter-report" / "summary.md"
    assert summary.stat().st_mode & 0o777 == 0o644
    assert not [p for p in summary.parent.rglob("*.tmp")]


# --- D9: an unusable report folder is exit 2, one line


def test_report_folder_is_an_existing_file(logs: Path) -> None:
    (logs / "afile").write_text("x")
    line = one_line_error(run_cli(["gate", "runs/*.csv", "--report-dir", "afile"], logs))
    assert "afile: the report folder exists and is not a folder" in line


def test_report_folder_below_a_file(logs: Path) -> None:
    (logs / "afile").write_text("x")
    line = one_line_error(run_cli(["gate", "runs/*.csv", "--report-dir", "afile/sub"], logs))
    assert "a file is in the way" in line


def test_report_folder_is_a_dangling_symlink(logs: Path) -> None:
    (logs / "dangling").symlink_to(logs / "missing")
    line = one_line_error(run_cli(["gate", "runs/*.csv", "--report-dir", "dangling"], logs))
    assert "symbolic link to nothing" in line


def test_report_folder_only_root_may_write() -> None:
    with shared_folder() as folder:
        (folder / "a.csv").write_text(HEALTHY_CSV)
        locked = folder / "locked"
        locked.mkdir(mode=0o755)
        if os.geteuid() != 0:
            locked.chmod(0o555)
        result = run_cli(
            ["gate", "a.csv", "--report-dir", "locked/report"], folder, unprivileged=True
        )
        assert "Permission denied" in one_line_error(result)
