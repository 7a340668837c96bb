"""The terminal front end: --quiet/--verbose/--finding/--color, explain, did-you-mean,
check-config listing every mistake. Exit codes do not depend on how much is printed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from trainspotter.cli import main

REPO = Path(__file__).resolve().parents[1]
DIVERGENCE = "examples/divergence/trainer_state.json"
HEALTHY = "examples/healthy/trainer_state.json"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--jobs", "1"] if argv[0] == "analyze" else list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_quiet_prints_one_verdict_per_log_and_keeps_the_exit_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "analyze", DIVERGENCE, HEALTHY, "--quiet", "--color", "never")
    assert code == 1
    verdicts = [line for line in out.splitlines() if not line.startswith(" ")]
    assert [v.split()[0] for v in verdicts] == ["FAILED", "PASSED"]
    assert "grad_norm exploded" in " ".join(out.split())  # the worst finding's title
    assert "fix:" not in out and "Root cause" not in out


def test_default_is_terse_and_verbose_has_the_evidence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, terse, _ = _run(capsys, "analyze", DIVERGENCE)
    assert code == 1
    assert terse.startswith("FAILED  examples/divergence/trainer_state.json (3 errors")
    ids = [
        line.split()[0] for line in terse.splitlines() if line[:1] == "F" and line[1:2].isdigit()
    ]
    assert ids == ["F1", "F2", "F3", "F4", "F5"]  # chain order, ids ascending
    assert "evidence:" not in terse and "--verbose" in terse
    code, verbose, _ = _run(capsys, "analyze", DIVERGENCE, "--verbose")
    assert code == 1
    assert "evidence: lr_before=0.04199" in verbose and "Metrics:" in verbose
    assert verbose.count("fix:") > terse.count("fix:")


def test_one_finding_in_detail(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", DIVERGENCE, "--finding", "F3")
    assert code == 1
    assert "F3 error" in out and "evidence: baseline_median=" in out
    assert "F4 " not in out and "F2 " not in out  # only the one asked for
    assert "about grad_norm:" in out and "trainspotter explain grad_norm" in out


def test_unknown_finding_is_a_one_line_error_with_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "analyze", DIVERGENCE, "--finding", "f2")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "no finding 'f2' (did you mean 'F2'?) (findings: F1, F2, F3, F4, F5)" in err


@pytest.mark.parametrize(
    ("argv", "env", "coloured"),
    [
        ([], {}, False),  # captured: not a terminal
        (["--color", "always"], {}, True),
        (["--color", "always"], {"NO_COLOR": "1"}, True),  # the flag wins
        ([], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ],
)
def test_color_flag_and_environment(
    argv: list[str],
    env: dict[str, str],
    coloured: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _, out, _ = _run(capsys, "analyze", DIVERGENCE, *argv)
    assert ("\x1b[" in out) is coloured


def test_columns_sets_the_width(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    _, out, _ = _run(capsys, "analyze", DIVERGENCE)
    assert max(len(line) for line in out.splitlines()) <= 60


def test_explain_renders_markdown_for_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for detector in ("lr_schedule", "spikes", "grad_norm", "divergence", "throughput"):
        code, out, _ = _run(capsys, "explain", detector)
        assert code == 0
        assert "**" not in out and "`" not in out, out
        for internal in ("stats.", "meta[", "rise._rising", "names.is_loss_like"):
            assert internal not in out, (detector, internal)
        assert max(len(line) for line in out.splitlines()) <= 80
    _, out, _ = _run(capsys, "explain", "lr_schedule")
    assert "What it finds. Six schedule bugs" in out
    assert "\n1. Missing warmup (warning)." in out  # list items keep their numbers


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["explain", "lr_shedule"], "(did you mean 'lr_schedule'?)"),
        (["analyze", HEALTHY, "--fail-on", "eror"], "(did you mean 'error'?)"),
        (["gate", "--fail-on", "warnign"], "(did you mean 'warning'?)"),
    ],
)
def test_did_you_mean(argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("trainspotter: error: ") and captured.err.count("\n") == 1
    assert suggestion in captured.err


FIVE_MISTAKES = """\
paths: ["logs/*.json"]
fail_on: eror
detectors:
  spikes:
    z_treshold: 6
  plateu: {enabled: false}
metrics:
  aliases:
    my_loss: train/los
colour: true
"""


def test_check_config_lists_every_mistake_sorted_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "five.yml"
    path.write_text(FIVE_MISTAKES)
    assert main(["check-config", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[-1] == "trainspotter: 5 mistakes found"
    where = f"{path}:"
    assert [line.split(where)[1].split(":")[0] for line in lines[:-1]] == [
        "2",
        "5",
        "6",
        "9",
        "10",
    ]
    assert "fail_on: 'eror' is not one of info, warning, error (did you mean 'error'?)" in lines[0]
    assert (
        "detectors.spikes.z_treshold: unknown parameter (did you mean 'z_threshold'?)" in lines[1]
    )
    assert "detectors.plateu: unknown detector (did you mean 'plateau'?)" in lines[2]
    assert "metrics.aliases.my_loss: 'train/los' is not a metric name" in lines[3]
    assert "(did you mean 'train/loss'?)" in lines[3]
    assert "colour: unknown key" in lines[4]
    # analyze stops at the same file with one line naming the first and how many more
    assert main(["analyze", HEALTHY, "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(and 4 more mistakes: trainspotter check-config" in err


def test_alias_to_a_canonical_name_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ok.yml"
    path.write_text("metrics:\n  aliases: {my_loss: train/loss, my_lr: lr}\n")
    assert main(["check-config", str(path)]) == 0
    assert ": OK" in capsys.readouterr().out


def _console_examples() -> list[tuple[str, str]]:
    """(command, output) for each `$ trainspotter ...` in the README's console blocks."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    examples: list[tuple[str, str]] = []
    for block in re.findall(r"^```console\n(.*?)^```$", readme, re.MULTILINE | re.DOTALL):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            examples.append((command, output))
    return examples


def test_readme_shows_the_real_terminal_output(capsys: pytest.CaptureFixture[str]) -> None:
    examples = _console_examples()
    assert examples, "the README shows no terminal output"
    for command, shown in examples:
        words = shlex.split(command)
        assert words[0] == "trainspotter"
        main(words[1:])
        assert capsys.readouterr().out == shown, command


def test_watch_lines_are_terse_wrapped_and_plural_right(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "trainer_state.json"
    log.write_bytes((REPO / "examples" / "grad_explosion" / "trainer_state.json").read_bytes())
    monkeypatch.chdir(tmp_path)
    code = main(["watch", log.name, "--interval", "0.05", "--idle-exit", "0.1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "(s)" not in out and "grad_norm, grad_norm" not in out, out
    assert "(grad_norm, steps 304-600)" in out  # detector named once when it is the metric
    assert re.search(r"after \d+ polls; 1 log\n  FAILED  ", out), out
    assert "2 errors, 1 info" in out and "1 error, 2 warning" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
