"""The CI gate (`trainspotter.gate`), its CLI (`gate`, `analyze` with globs) and the
container's `entrypoint.py` run on the host: expansion rules, exit codes, every output,
safe file names, and the fencing of log-derived text inside GitHub Actions."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from workspace_support import DIVERGENT, HEALTHY, REPO

from trainspotter import gate_text
from trainspotter.cli import main
from trainspotter.config import Config, parse_config
from trainspotter.discover import expand_patterns
from trainspotter.errors import UsageError
from trainspotter.gate import GateOptions, report_file_name, run_gate
from trainspotter.model import Severity

TB_CSV_ROWS = "step,loss\n" + "".join(f"{i},{1.0 / (i + 1):.6f}\n" for i in range(60))


def _gate(
    base: Path, *patterns: str, config: Config | None = None, **options: object
) -> tuple[int, str, str, object]:
    out, err = io.StringIO(), io.StringIO()
    result = run_gate(
        GateOptions(patterns=patterns, config=config or Config(), base=base, **options),  # type: ignore[arg-type]
        out,
        err,
    )
    return result.exit_code, out.getvalue(), err.getvalue(), result


# --------------------------------------------------------------------------- expanding


def _touch(path: Path, text: str = TB_CSV_ROWS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _displays(base: Path, *patterns: str, **kwargs: object) -> list[str]:
    collected = expand_patterns(patterns, base=base, **kwargs)  # type: ignore[arg-type]
    return [t.display for t in collected.targets]


def test_double_star_is_recursive(tmp_path: Path) -> None:
    _touch(tmp_path / "logs" / "a" / "metrics.csv")
    _touch(tmp_path / "logs" / "b" / "c" / "metrics.csv")
    _touch(tmp_path / "logs" / "metrics.csv")
    assert _displays(tmp_path, "logs/**/metrics.csv") == [
        "logs/a/metrics.csv",
        "logs/b/c/metrics.csv",
        "logs/metrics.csv",
    ]


def test_tensorboard_run_folders_count_once(tmp_path: Path) -> None:
    for run in ("run1", "run2"):
        _touch(tmp_path / "runs" / run / "events.out.tfevents.1.host", "x")
        _touch(tmp_path / "runs" / run / "events.out.tfevents.2.host", "x")
    _touch(tmp_path / "runs" / "keras" / "train" / "events.out.tfevents.3.host", "x")
    _touch(tmp_path / "runs" / "keras" / "validation" / "events.out.tfevents.4.host", "x")
    expected = ["runs/keras", "runs/run1", "runs/run2"]
    assert sorted(_displays(tmp_path, "runs/*")) == expected
    assert sorted(_displays(tmp_path, "runs/**")) == expected
    assert sorted(_displays(tmp_path, "runs/**/events.out.tfevents.*")) == expected


def test_only_the_newest_trainer_state_of_an_output_folder(tmp_path: Path) -> None:
    state = '{"log_history": []}'
    for n in (100, 200, 1000):
        _touch(tmp_path / "out" / f"checkpoint-{n}" / "trainer_state.json", state)
    _touch(tmp_path / "other" / "checkpoint-5" / "trainer_state.json", state)
    _touch(tmp_path / "other" / "checkpoint-50" / "trainer_state.json", state)
    collected = expand_patterns(["**/trainer_state.json"], base=tmp_path)
    assert [t.display for t in collected.targets] == [
        "other/checkpoint-50/trainer_state.json",
        "out/checkpoint-1000/trainer_state.json",
    ]
    assert len(collected.skipped) == 3
    _touch(tmp_path / "out" / "trainer_state.json", state)
    assert "out/trainer_state.json" in _displays(tmp_path, "**/trainer_state.json")


def test_sweeps_skip_non_logs_but_named_files_must_be_logs(tmp_path: Path) -> None:
    _touch(tmp_path / "logs" / "run.csv")
    _touch(tmp_path / "logs" / "README.md", "# notes\nnothing numeric here\n")
    collected = expand_patterns(["logs/*"], base=tmp_path)
    assert [t.display for t in collected.targets] == ["logs/run.csv"]
    assert [p.display for p in collected.skipped] == ["logs/README.md"]
    # A pattern for specific files keeps every match: a broken one must fail the gate.
    assert _displays(tmp_path, "logs/*.md") == ["logs/README.md"]


def test_patterns_that_find_nothing(tmp_path: Path) -> None:
    collected = expand_patterns(["nothing/**/*.csv", "missing.csv"], base=tmp_path)
    assert [(p.display, p.reason) for p in collected.failures] == [
        ("nothing/**/*.csv", "matched no training log"),
        ("missing.csv", "no such file or folder"),
    ]
    assert not expand_patterns(["nothing/*"], base=tmp_path, allow_empty=True).failures


def test_invalid_glob_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="whole path component"):
        expand_patterns(["logs/**.csv"], base=tmp_path)


def test_dedupe_hidden_and_report_folder_excluded(tmp_path: Path) -> None:
    _touch(tmp_path / "a.csv")
    _touch(tmp_path / ".hidden" / "b.csv")
    _touch(tmp_path / "trainspotter-report" / "old.csv")
    assert _displays(tmp_path, "**/*.csv", "a.csv", exclude=tmp_path / "trainspotter-report") == [
        "a.csv"
    ]


# --------------------------------------------------------------------------- the gate


@pytest.mark.parametrize(
    ("pattern", "fail_on", "expected"),
    [
        (HEALTHY, Severity.ERROR, 0),
        (HEALTHY, Severity.WARNING, 0),
        (DIVERGENT, Severity.ERROR, 1),
        (DIVERGENT, Severity.WARNING, 1),
    ],
)
def test_exit_code_by_fail_on(
    workspace: Path, pattern: str, fail_on: Severity, expected: int
) -> None:
    code, out, _, result = _gate(workspace, pattern, fail_on=fail_on)
    assert code == expected
    worst = result.max_severity  # type: ignore[attr-defined]
    assert (worst is not None and worst >= fail_on) == (expected == 1)
    assert "trainspotter gate: 1 log checked" in out


def test_every_output_is_written(workspace: Path) -> None:
    config = parse_config(
        "report:\n  outputs: [summary, comment, html, json, sarif, codequality, junit]\n"
    )
    code, _, _, _result = _gate(workspace, "examples/*/trainer_state.json", config=config)
    assert code == 1
    report = workspace / "trainspotter-report"
    assert sorted(p.name for p in report.iterdir()) == [
        "comment.md",
        "gl-code-quality-report.json",
        "html",
        "junit.xml",
        "summary.md",
        "trainspotter.json",
        "trainspotter.sarif",
    ]
    assert sorted(p.name for p in (report / "html").iterdir()) == [
        "examples_divergence_trainer_state.json.html",
        "examples_healthy_trainer_state.json.html",
        "index.html",
    ]
    data = json.loads((report / "trainspotter.json").read_text())
    schema = json.loads((REPO / "trainspotter" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert [log["run"]["source_path"] for log in data["logs"]] == [DIVERGENT, HEALTHY]
    summary = (report / "summary.md").read_text()
    assert summary.startswith("**trainspotter gate \u274c failed")
    assert len(summary.encode()) < 1024 * 1024
    assert len((report / "comment.md").read_text()) < 65_536


def test_output_selection_and_comment_off(workspace: Path) -> None:
    config = parse_config("report:\n  outputs: [json, comment]\n  comment: false\n")
    _gate(workspace, HEALTHY, config=config)
    assert [p.name for p in (workspace / "trainspotter-report").iterdir()] == ["trainspotter.json"]


def test_unreadable_log_is_exit_2_after_the_others(workspace: Path) -> None:
    _touch(workspace / "examples" / "broken" / "trainer_state.json", '{"log_history": [')
    code, _out, err, result = _gate(workspace, "examples/*/trainer_state.json")
    assert code == 2
    assert len(result.analyses) == 2  # type: ignore[attr-defined]
    assert err.strip().startswith("trainspotter: error: examples/broken/trainer_state.json: ")
    assert "invalid JSON" in err
    summary = (workspace / "trainspotter-report" / "summary.md").read_text()
    assert "### Not checked" in summary and "examples/broken/trainer_state.json" in summary


def test_empty_pattern_is_exit_2_unless_allowed(workspace: Path) -> None:
    assert _gate(workspace, "nothing/**/*.csv")[0] == 2
    allowed = parse_config("allow_empty: true\n")
    code, out, _, _ = _gate(workspace, "nothing/**/*.csv", config=allowed)
    assert code == 0 and "0 logs checked" in out


def test_no_patterns_at_all_is_a_usage_error(workspace: Path) -> None:
    with pytest.raises(UsageError, match="no log patterns"):
        _gate(workspace)


def test_config_paths_and_suppressions(workspace: Path) -> None:
    config = parse_config(
        "paths: [examples/*/trainer_state.json]\n"
        "ignore:\n  - {detector: '*', path: examples/divergence/**, reason: known resume bug}\n"
    )
    code, out, _, result = _gate(workspace, config=config)
    assert code == 0
    divergent = next(a for a in result.analyses if "divergence" in a.run.source_path)  # type: ignore[attr-defined]
    assert divergent.findings and all(
        f.suppressed == "known resume bug" for f in divergent.findings
    )
    assert "suppressed" in out


def test_github_mode_fences_log_text_and_escapes_annotations(workspace: Path) -> None:
    """A hostile log: a file name and a metric name that try to issue workflow commands."""
    hostile_dir = workspace / "runs" / "::add-mask::x"
    rows = "step,::error::pwned%0A\n" + "".join(
        f"{i},{(1e9 if i == 30 else 1.0 / (i + 1)):.6f}\n" for i in range(60)
    )
    _touch(hostile_dir / "log.csv", rows)
    _code, out, err, _ = _gate(workspace, "runs/**/*.csv", DIVERGENT, github=True, config=Config())
    assert err == ""
    match = re.match(r"::stop-commands::([0-9a-f]{32})\n", out)
    assert match, out[:200]
    token = match.group(1)
    fenced, after = out[match.end() :].split(f"::{token}::\n", 1)
    assert "::add-mask::x" in fenced  # the raw name only ever appears inside the fence
    for line in after.splitlines():
        assert re.match(r"::(error|warning|notice) [^:]*::", line), line
        assert "::add-mask::" not in line and "\n" not in line
    assert "file=runs/%3A%3Aadd-mask%3A%3Ax/log.csv" in after or "runs/" not in after
    assert "::error file=examples/divergence/trainer_state.json," in after


def test_cli_gate_and_analyze_with_patterns(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert main(["gate", HEALTHY, "--outputs", "json", "--report-dir", "r"]) == 0
    assert (workspace / "r" / "trainspotter.json").is_file()
    assert main(["gate", "examples/*/trainer_state.json", "--outputs", "json"]) == 1
    assert main(["gate", "examples/*/trainer_state.json", "--outputs", "pdf"]) == 2
    capsys.readouterr()
    assert main(["analyze", "examples/**/trainer_state.json", "--output", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["logs"]
    (workspace / ".trainspotter.yml").write_text("fail_on: info\n")
    assert main(["analyze", HEALTHY]) in (0, 1)
    (workspace / "strict.yml").write_text("detectors: {spikes: {z_threshold: nope}}\n")
    capsys.readouterr()
    assert main(["analyze", HEALTHY, "--config", "strict.yml"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("strict.yml:1: detectors.spikes.z_threshold: expected a number, got a string")
    )


# --------------------------------------------------------------------------- file names


@pytest.mark.parametrize(
    ("display", "expected"),
    [
        ("examples/healthy/trainer_state.json", "examples_healthy_trainer_state.json.html"),
        ("../../etc/passwd", "etc_passwd.html"),
        ("/abs/path/run 1/log.csv", "abs_path_run_1_log.csv.html"),
        (".hidden", "hidden.html"),
        ("con", "log_con.html"),
        ("", "log.html"),
    ],
)
def test_report_file_names(display: str, expected: str) -> None:
    assert report_file_name(display, set()) == expected


@given(st.lists(st.text(min_size=0, max_size=300), min_size=1, max_size=20))
def test_report_file_names_are_safe_and_unique(displays: list[str]) -> None:
    used: set[str] = set()
    names = [report_file_name(d, used) for d in displays]
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.html", name), name
        assert len(name) <= 110 and "/" not in name and ".." not in name.removesuffix(".html")[:2]
    assert len({n.casefold() for n in names}) == len(names)


def test_analyze_inside_github_actions_is_fenced(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    main(["analyze", HEALTHY])
    out = capsys.readouterr().out
    match = re.match(r"::stop-commands::([0-9a-f]{32})\n", out)
    assert match and out.endswith(f"::{match.group(1)}::\n")
    main(["analyze", DIVERGENT, "--output", "github"])
    annotations = capsys.readouterr().out
    assert annotations.startswith("::error ") and "stop-commands" not in annotations


def test_a_listed_path_cannot_reorder_break_or_close_its_code_span() -> None:
    """The summary lists unreadable and skipped logs by path in a Markdown code span: a
    bidi override would show the name in another order (`run\u202etxt.exe`), a line
    separator or escape sequence would break the line, a backtick would close the span."""
    listed = gate_text.code_span("runs/a\u202eb`c\u2028d\x1b[31me\u2066f.csv")
    assert listed == "runs/ab'cdef.csv"
