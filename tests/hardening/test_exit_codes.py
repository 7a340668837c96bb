"""D1, D12, D15, D17 (ADVERSARIAL.md): exit 3 only for our own bugs. Extreme floats,
unreadable files and folders, names too long and an unusable runner environment give a
report, a listed problem or the one-line exit 2; the gate still writes every report."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from types import ModuleType

import pytest
from hardening_support import (
    HEALTHY_CSV,
    one_line_error,
    reported_paths,
    run_cli,
    run_entrypoint,
    shared_folder,
)
from workspace_support import DIVERGENT, EXAMPLES, need_examples

from trainspotter.cli import main
from trainspotter.report import REPORTS


def _csv(values: list[str]) -> str:
    return "step,loss\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values, start=1))


EXTREME_LOGS = {
    "overflow_point": _csv(["2.0", "1e308", "1.0"]),
    "denormal_points": _csv(["5e-324" if i in (10, 20) else "1.0" for i in range(1, 21)]),
    "all_denormal": _csv(["5e-324"] * 3),
    "every_tenth_1e308": _csv(["1e308" if i % 10 == 0 else f"{1.0 / i}" for i in range(1, 101)]),
    "float_max_plateau": _csv(["1.7976931348623157e308"] * 12),
    "negative_extremes": _csv(["-1e308", "1e308", "-5e-324", "5e-324"] * 5),
}


@pytest.mark.parametrize("name", sorted(EXTREME_LOGS))
@pytest.mark.parametrize("output", sorted(REPORTS))
def test_extreme_floats_in_every_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, output: str
) -> None:
    """D1: the reproducers crashed the HTML axes and the plateau units (exit 3)."""
    log = tmp_path / f"{name}.csv"
    log.write_text(EXTREME_LOGS[name])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["analyze", str(log), "--output", output, "--out", str(tmp_path / "r")])
    assert code in (0, 1), capsys.readouterr().err
    (tmp_path / "r").read_text(encoding="utf-8")  # written, strict UTF-8 (may be empty: github)
    # numpy's overflow warnings used to reach stderr
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_gate_with_an_extreme_log_writes_every_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a_healthy.csv").write_text(HEALTHY_CSV)
    (tmp_path / "logs" / "b_extreme.csv").write_text(EXTREME_LOGS["every_tenth_1e308"])
    code = main(["gate", "logs/*", "--outputs", "summary,comment,json,html"])
    assert code in (0, 1)
    report = tmp_path / "trainspotter-report"
    for name in ("summary.md", "comment.md", "trainspotter.json", "html/index.html"):
        assert (report / name).is_file(), name
    assert len(reported_paths(report / "trainspotter.json")) == 2


# --- D12: unreadable files and folders (as nobody: root reads everything)


def test_unreadable_file_is_exit_2_one_line() -> None:
    with shared_folder() as folder:
        locked = folder / "locked.csv"
        locked.write_text(HEALTHY_CSV)
        locked.chmod(0)
        for args in (["analyze", "locked.csv"], ["analyze", "*.csv"], ["gate", "locked.csv"]):
            line = one_line_error(run_cli(args, folder, unprivileged=True))
            assert "locked.csv: cannot read: Permission denied" in line, args


def test_gate_lists_unreadable_logs_and_reports_the_rest() -> None:
    with shared_folder() as folder:
        logs = folder / "logs"
        logs.mkdir(mode=0o777)
        (logs / "healthy.csv").write_text(HEALTHY_CSV)
        (logs / "locked.csv").write_text(HEALTHY_CSV)
        (logs / "locked.csv").chmod(0)
        (logs / "sub").mkdir()
        (logs / "sub" / "inner.csv").write_text(HEALTHY_CSV)
        (logs / "sub").chmod(0)
        result = run_cli(["gate", "logs/**", "--report-dir", "out"], folder, unprivileged=True)
        assert result.returncode == 2, result.stderr
        assert "internal error" not in result.stderr + result.stdout
        summary = (folder / "out" / "summary.md").read_text()
        assert "logs/locked.csv" in summary and "logs/sub" in summary
        assert summary.count("Permission denied") == 2
        assert reported_paths(folder / "out" / "trainspotter.json") == ["logs/healthy.csv"]


# --- D15: names too long


def test_file_name_too_long(tmp_path: Path) -> None:
    name = "a" * 256
    for args in (
        ["analyze", name],
        ["check-config", name],
        ["gate", name],
        ["analyze", name + "/*"],
    ):
        result = run_cli(args, tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert "internal error" not in result.stderr


def test_sweep_over_a_tree_deeper_than_path_max(tmp_path: Path) -> None:
    """Made with dir_fd (no path longer than PATH_MAX is ever passed to mkdir)."""
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "ok.csv").write_text(HEALTHY_CSV)
    fd = os.open(tmp_path / "deep", os.O_RDONLY)
    try:
        for _ in range(20):  # 20 x 241 bytes: past Linux's 4096
            os.mkdir("d" * 240, dir_fd=fd)
            inner = os.open("d" * 240, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    result = run_cli(["gate", "deep/**", "--report-dir", "out"], tmp_path)
    assert result.returncode == 2, result.stderr
    assert "internal error" not in result.stderr
    assert "File name too long" in (tmp_path / "out" / "summary.md").read_text()
    assert reported_paths(tmp_path / "out" / "trainspotter.json") == ["deep/ok.csv"]
    shutil.rmtree(tmp_path / "deep")


# --- D17: the Action's environment


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    need_examples("divergence")
    shutil.copytree(EXAMPLES / "divergence", tmp_path / "examples" / "divergence")
    return tmp_path


def _action_env(checkout: Path, **inputs: str) -> dict[str, str]:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(checkout), "INPUT_PATHS": DIVERGENT}
    return env | {f"INPUT_{k.upper()}": v for k, v in inputs.items()}


@pytest.mark.parametrize("where", ["folder", "dev_full", "fifo", "missing_folder", "proc"])
@pytest.mark.parametrize("variable", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"])
def test_unusable_file_command_is_a_warning_and_keeps_the_verdict(
    entry: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str], variable: str, where: str
) -> None:
    places = {
        "folder": str(checkout),
        "dev_full": "/dev/full",
        "fifo": str(checkout / "fifo"),
        "missing_folder": str(checkout / "missing" / "out"),
        "proc": "/proc/version",
    }
    if where == "dev_full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    if where == "fifo":
        os.mkfifo(checkout / "fifo")  # no reader: opening it for writing would block
    env = _action_env(checkout) | {variable: places[where]}
    assert entry.main([], env) == 1  # the divergent run's verdict, not 3
    out = capsys.readouterr().out
    assert f"::warning title=trainspotter::trainspotter: cannot write ${variable}" in out


def test_read_only_output_file_as_nobody() -> None:
    need_examples("divergence")
    with shared_folder() as folder:
        shutil.copytree(EXAMPLES / "divergence", folder / "examples" / "divergence")
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        output = folder / "output.txt"
        output.write_text("")
        output.chmod(0o444)
        env = _action_env(folder) | {"GITHUB_OUTPUT": str(output)}
        done = run_entrypoint(env, folder, unprivileged=True)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "cannot write $GITHUB_OUTPUT" in done.stdout
        assert output.read_text() == ""


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({"config": "../../../../../../../../etc/passwd"}, "input config: must be inside"),
        ({"config": "/dev/zero"}, "input config: must be inside"),
        ({"config": "fifo.yml"}, "not a regular file"),
        ({"artifact_name": "name\n::warning::x"}, "input artifact-name"),
        ({"working_directory": "../.."}, "input working-directory: must be inside"),
        ({"working_directory": "w" * 6000}, "input working-directory"),
        ({"config": "c" * 6000}, "File name too long"),
    ],
)
def test_hostile_action_inputs_are_exit_2(
    entry: ModuleType,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    inputs: dict[str, str],
    words: str,
) -> None:
    os.mkfifo(checkout / "fifo.yml")
    (checkout / "output.txt").write_text("")
    env = _action_env(checkout, **inputs) | {"GITHUB_OUTPUT": str(checkout / "output.txt")}
    assert entry.main([], env) == 2
    out = capsys.readouterr().out
    assert words in out.replace("%0A", "\n"), out
    outputs = (checkout / "output.txt").read_text()
    assert "artifact-name<<" in outputs and "::warning::x" not in outputs


def test_very_long_paths_input_is_not_an_internal_error(
    entry: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _action_env(checkout, paths="x" * 120_000)
    assert entry.main([], env) == 2
    assert "internal error" not in capsys.readouterr().out
