"""`trainspotter watch`: the same findings as `analyze` on the final file, each reported
once; the exits (--fail-on, --idle-exit, Ctrl-C), --exec hooks, waiting and restarting.

Logs are grown in the test by appending the bundled examples' real logs in pieces; the
clock is a fake one, so nothing here sleeps or depends on the machine's speed."""

from __future__ import annotations

import io
import itertools
import json
import random
import sys
from pathlib import Path

import pytest

from trainspotter.analysis import analyze
from trainspotter.cli import main
from trainspotter.config import load_config
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log
from trainspotter.watch import FindingEvent, Watcher, WatchOptions, finding_key

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_watcher(
    tmp_path: Path, patterns: list[str], **options: object
) -> tuple[Watcher, io.StringIO, io.StringIO, Clock]:
    out, err, clock = io.StringIO(), io.StringIO(), Clock()
    settings = WatchOptions(
        patterns=tuple(patterns), config=load_config(None), base=tmp_path, **options
    )  # type: ignore[arg-type]
    return Watcher(settings, out, err, clock=clock), out, err, clock


def comparable(findings: list[Finding]) -> list[tuple[object, ...]]:
    return [
        (f.detector, f.metric, f.step_start, f.step_end, f.severity, f.title, f.message)
        for f in findings
        if f.suppressed is None
    ]


def expected_findings(path: Path, display: str) -> list[tuple[object, ...]]:
    from trainspotter.readers import ReadOptions

    run = read_log(path, options=ReadOptions(display_path=display))
    return comparable(analyze(run).findings)


def pieces(data: bytes, count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), count - 1))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def assert_reported_once(events: list[FindingEvent]) -> None:
    new = [finding_key(e.finding) for e in events if e.kind == "new"]
    assert len(new) == len(set(new))


@pytest.mark.parametrize(
    "example", ["divergence", "loss_spike", "grad_explosion", "overfitting", "throughput_drop"]
)
def test_metrics_csv_in_pieces_ends_with_analyze_findings(tmp_path: Path, example: str) -> None:
    data = (EXAMPLES / example / "metrics.csv").read_bytes()
    target = tmp_path / "metrics.csv"
    target.write_bytes(b"")
    watcher, _, _, clock = make_watcher(tmp_path, ["metrics.csv"])
    events: list[FindingEvent] = []
    for piece in pieces(data, 25, seed=len(example)):
        with target.open("ab") as handle:
            handle.write(piece)
        events += watcher.poll()
        clock.now += 2
    events += watcher.finish()
    (analysis,) = watcher.analyses()
    assert comparable(analysis.findings) == expected_findings(target, "metrics.csv")
    assert_reported_once(events)
    # Every final warning or error was reported, as new or updated; info notes (a
    # converged tail) are only in the summary.
    reported = {finding_key(e.finding) for e in events}
    loud = [f for f in analysis.findings if f.suppressed is None and f.severity >= Severity.WARNING]
    assert {finding_key(f) for f in loud} <= reported
    assert all(e.finding.severity >= Severity.WARNING for e in events)


def test_trainer_state_rewritten_whole_ends_with_analyze_findings(tmp_path: Path) -> None:
    state = json.loads((EXAMPLES / "divergence" / "trainer_state.json").read_text())
    history = state["log_history"]
    target = tmp_path / "trainer_state.json"
    watcher, _, _, clock = make_watcher(tmp_path, ["trainer_state.json"])
    events: list[FindingEvent] = []
    for end in range(5, len(history) + 30, 30):
        text = json.dumps({**state, "log_history": history[:end]}, indent=2)
        target.write_text(text[: len(text) // 3])  # caught mid-save: waits, reports nothing
        events += watcher.poll()
        target.write_text(text)
        events += watcher.poll()
        clock.now += 5
    events += watcher.finish()
    (analysis,) = watcher.analyses()
    assert comparable(analysis.findings) == expected_findings(target, "trainer_state.json")
    assert_reported_once(events)


def test_tensorboard_folder_ends_with_analyze_findings(tmp_path: Path) -> None:
    (event_file,) = (EXAMPLES / "divergence" / "tensorboard").glob("events.out.tfevents*")
    folder = tmp_path / "tb"
    folder.mkdir()
    target = folder / event_file.name
    target.write_bytes(b"")
    watcher, _, _, clock = make_watcher(tmp_path, ["tb"])
    for piece in pieces(event_file.read_bytes(), 20, seed=1):
        with target.open("ab") as handle:
            handle.write(piece)
        watcher.poll()
        clock.now += 2
    watcher.finish()
    (analysis,) = watcher.analyses()
    assert comparable(analysis.findings) == expected_findings(folder, "tb")


def test_idle_poll_analyses_what_is_there(tmp_path: Path) -> None:
    lines = (EXAMPLES / "divergence" / "metrics.csv").read_bytes().splitlines(keepends=True)
    target = tmp_path / "m.csv"
    target.write_bytes(b"".join(lines[:390]))
    watcher, _, _, clock = make_watcher(tmp_path, ["m.csv"], duty=0.0)
    watcher.poll()
    with target.open("ab") as handle:
        handle.write(b"".join(lines[390:395]))  # < 10% growth: no analysis yet
    watcher.poll()
    analyses_before = watcher.logs[target.resolve()].analyses
    clock.now += 10
    watcher.poll()  # idle after growth: analyse
    log = watcher.logs[target.resolve()]
    assert log.analyses == analyses_before + 1
    assert log.analysis is not None
    assert comparable(log.analysis.findings) == expected_findings(target, "m.csv")


def test_analyses_are_amortised_not_per_poll(tmp_path: Path) -> None:
    """A log growing by a few rows per poll is analysed O(log n) times, not every poll."""
    header = "step,loss,lr\n"
    target = tmp_path / "big.csv"
    target.write_text(header)
    watcher, _, _, clock = make_watcher(tmp_path, ["big.csv"])
    step = 0
    polls = 400
    for _ in range(polls):
        rows = "".join(f"{step + i},{2.0 / (1 + (step + i) / 500)},0.001\n" for i in range(25))
        step += 25
        with target.open("a") as handle:
            handle.write(rows)
        watcher.poll()
        clock.now += 1
    log = watcher.logs[target.resolve()]
    assert log.points == polls * 25
    # Growth by 10% from 25 rows to 10,000 rows: about log(400)/log(1.1) = 63 analyses.
    assert log.analyses <= 70


def test_nonfinite_value_triggers_an_analysis_at_once(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    rows = "".join(f"{s},{1.0 / (1 + s / 100)}\n" for s in range(2000))
    target.write_text("step,loss\n" + rows)
    watcher, out, _, _clock = make_watcher(tmp_path, ["m.csv"])
    watcher.poll()
    log = watcher.logs[target.resolve()]
    before = log.analyses
    with target.open("a") as handle:
        handle.write("2000,nan\n2001,nan\n")
    events = watcher.poll()
    assert log.analyses == before + 1
    assert any(e.finding.detector == "divergence" for e in events)
    assert "NEW" in out.getvalue()


def test_missing_file_is_waited_for_and_glob_picks_up_new_files(tmp_path: Path) -> None:
    watcher, _, _, _ = make_watcher(tmp_path, ["runs/*.csv", "later.jsonl"])
    assert watcher.poll() == []
    assert watcher.logs == {}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.csv").write_text("step,loss\n1,0.5\n2,0.4\n")
    watcher.poll()
    assert len(watcher.logs) == 1
    (tmp_path / "later.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    (tmp_path / "runs" / "b.csv").write_text("step,loss\n1,0.5\n")
    watcher.poll()
    assert len(watcher.logs) == 3
    assert all(log.analysis is not None for log in watcher.logs.values())


def test_half_written_first_line_waits(tmp_path: Path) -> None:
    target = tmp_path / "log.txt"
    target.write_text('{"step": 1, "lo')
    watcher, _, _, _ = make_watcher(tmp_path, ["log.txt"])
    watcher.poll()
    (log,) = watcher.logs.values()
    assert log.tail is None and log.problem is not None
    target.write_text('{"step": 1, "loss": 0.5}\n')
    watcher.poll()
    assert log.tail is not None and log.analysis is not None
    assert log.analysis.run.source_format == "jsonl"


def test_truncation_starts_over(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    target.write_text("step,loss\n" + "".join(f"{s},1.0\n" for s in range(50)))
    watcher, _, err, _ = make_watcher(tmp_path, ["m.csv"])
    watcher.poll()
    target.write_text("step,loss\n1,0.5\n")
    watcher.poll()
    assert "reading it again from the start" in err.getvalue()
    (log,) = watcher.logs.values()
    assert log.points == 1


def test_fail_on_exits_1_at_the_first_error(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    target.write_bytes((EXAMPLES / "divergence" / "metrics.csv").read_bytes())
    watcher, out, _, _ = make_watcher(tmp_path, ["m.csv"], fail_on=Severity.ERROR)
    code = watcher.run(sleep=lambda _: pytest.fail("should stop before sleeping"))
    assert code == 1
    assert "stopped at a finding at or above error" in out.getvalue()


def test_ctrl_c_finishes_with_a_summary_and_130(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    target.write_text("step,loss\n1,0.5\n2,0.4\n3,0.3")  # last line without a newline

    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    watcher, out, _, _ = make_watcher(tmp_path, ["m.csv"])
    assert watcher.run(sleep=interrupt) == 130
    text = out.getvalue()
    assert "interrupted (Ctrl-C)" in text
    assert "3 points read, last step 3" in text  # the final poll read the last line


def test_idle_exit(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("step,loss\n1,0.5\n")
    watcher, out, _, clock = make_watcher(tmp_path, ["m.csv"], idle_exit=5.0)

    def tick(seconds: float) -> None:
        clock.now += seconds

    assert watcher.run(sleep=tick) == 0
    assert "no log grew for 5 s" in out.getvalue()


def test_no_log_ever_appeared_exits_2(tmp_path: Path) -> None:
    watcher, out, _, clock = make_watcher(tmp_path, ["nothing.csv"], idle_exit=1.0)

    def tick(seconds: float) -> None:
        clock.now += seconds

    assert watcher.run(sleep=tick) == 2
    assert "no log appeared" in out.getvalue()


def test_exec_gets_the_finding_json_on_stdin_without_a_shell(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    target.write_bytes((EXAMPLES / "divergence" / "metrics.csv").read_bytes())
    sink = tmp_path / "hooks.jsonl"
    script = (
        "import os, sys; data = sys.stdin.read(); "
        f"open({str(sink)!r}, 'a').write(os.environ['TRAINSPOTTER_EVENT'] + ' ' + data + '\\n')"
    )
    watcher, _, _, _ = make_watcher(
        tmp_path, ["m.csv"], exec_command=(sys.executable, "-c", script, "$(touch pwned)")
    )
    events = watcher.poll()
    hooks = sink.read_text().splitlines()
    assert len(hooks) == len([e for e in events if e.kind == "new"]) > 0
    kind, payload = hooks[0].split(" ", 1)
    assert kind == "new"
    finding = json.loads(payload)
    assert {"detector", "severity", "metric", "step_start", "step_end", "message"} <= set(finding)
    assert not (tmp_path / "pwned").exists()


def test_exec_failure_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    target.write_bytes((EXAMPLES / "divergence" / "metrics.csv").read_bytes())
    watcher, _, err, _ = make_watcher(
        tmp_path, ["m.csv"], exec_command=("/nonexistent/hook-command",)
    )
    watcher.poll()
    assert "--exec: command not found" in err.getvalue()


def test_log_text_is_escaped(tmp_path: Path) -> None:
    target = tmp_path / "m.csv"
    name = "loss\x1b[31m\x07"
    rows = "".join(f"{s},{1.0 if s < 300 else float('nan')}\n" for s in range(400))
    target.write_text(f"step,{name}\n{rows}")
    watcher, out, _, _ = make_watcher(tmp_path, ["m.csv"])
    watcher.poll()
    watcher.finish()
    text = out.getvalue() + watcher.summary("done")
    assert "\x1b" not in text and "\x07" not in text


def test_cli_watch_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "m.csv"
    target.write_bytes((EXAMPLES / "loss_spike" / "metrics.csv").read_bytes())
    code = main(["watch", str(target), "--interval", "0.05", "--idle-exit", "0.1"])
    captured = capsys.readouterr()
    assert code == 0
    assert "no log grew for 0.1 s" in captured.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["watch", "x.csv", "--interval", "0"], "must be a positive number"),
        (["watch", "x.csv", "--exec"], "--exec needs a command"),
        (["watch"], "required"),
    ],
)
def test_cli_watch_bad_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def _grow_healthy(tmp_path: Path, watcher: Watcher, clock: Clock) -> list[FindingEvent]:
    data = (EXAMPLES / "healthy" / "metrics.csv").read_bytes()
    target = tmp_path / "m.csv"
    target.write_bytes(b"")
    events: list[FindingEvent] = []
    for piece in pieces(data, 20, seed=3):
        with target.open("ab") as handle:
            handle.write(piece)
        events += watcher.poll()
        clock.now += 2
    return events + watcher.finish()


def test_a_healthy_run_followed_live_prints_nothing(tmp_path: Path) -> None:
    # While the log grows, the warmup is still rising and the loss looks flat between
    # polls: neither may be reported as a problem of a run that is not over yet.
    watcher, out, _, clock = make_watcher(tmp_path, ["m.csv"])
    events = _grow_healthy(tmp_path, watcher, clock)
    assert events == [] and out.getvalue() == ""
    (analysis,) = watcher.analyses()
    assert all(f.severity is Severity.INFO for f in analysis.findings)


def test_info_notes_are_printed_when_failing_on_info(tmp_path: Path) -> None:
    watcher, out, _, clock = make_watcher(tmp_path, ["m.csv"], fail_on=Severity.INFO)
    events = _grow_healthy(tmp_path, watcher, clock)
    assert events and all(e.finding.severity is Severity.INFO for e in events)
    assert "info" in out.getvalue()


def test_without_fail_on_the_exit_code_follows_analyze(tmp_path: Path) -> None:
    data = (EXAMPLES / "divergence" / "metrics.csv").read_bytes()
    (tmp_path / "m.csv").write_bytes(data)
    watcher, _, _, _ = make_watcher(tmp_path, ["m.csv"])
    watcher.poll()
    watcher.finish()
    assert not watcher.failed  # it never stopped early
    assert watcher.exit_code() == 1  # but the final findings hold errors, as analyze says
