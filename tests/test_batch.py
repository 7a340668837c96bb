"""`trainspotter.batch`: many logs on several processes, results in a deterministic order,
errors returned in place (and, for `analyze`, the first one raised)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from trainspotter import batch
from trainspotter.batch import check_target
from trainspotter.cli import main
from trainspotter.config import load_config
from trainspotter.discover import expand_patterns
from trainspotter.errors import InputError, TrainspotterError, UsageError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def square(value: int) -> int:
    if value == 3:
        raise InputError("three.csv", "three is not allowed")
    if value == 4:
        raise UsageError("four is bad usage")
    return value * value


def test_parallel_map_keeps_order_and_returns_errors_in_place() -> None:
    results = list(batch.parallel_map(square, list(range(40)), jobs=2))
    assert [r for r in results if not isinstance(r, TrainspotterError)] == [
        v * v for v in range(40) if v not in (3, 4)
    ]
    three, four = results[3], results[4]
    assert isinstance(three, InputError) and three.path == "three.csv"
    assert three.problem == "three is not allowed"
    assert isinstance(four, UsageError) and str(four) == "four is bad usage"


def test_parallel_map_in_process_matches() -> None:
    assert [str(r) for r in batch.parallel_map(square, list(range(10)), jobs=1)] == [
        str(r) for r in batch.parallel_map(square, list(range(10)), jobs=2)
    ]


def test_default_jobs_is_at_least_one() -> None:
    assert batch.default_jobs() >= 1


@pytest.fixture
def many_logs(tmp_path: Path) -> Path:
    for example in sorted(p for p in EXAMPLES.iterdir() if (p / "metrics.csv").is_file()):
        shutil.copyfile(example / "metrics.csv", tmp_path / f"{example.name}.csv")
    return tmp_path


def test_analyze_paths_parallel_equals_sequential(many_logs: Path) -> None:
    config = load_config(None)
    serial = batch.analyze_paths(["*.csv"], config, jobs=1, base=many_logs)
    parallel = batch.analyze_paths(["*.csv"], config, jobs=2, base=many_logs)
    assert [a.run.source_path for a in parallel] == [a.run.source_path for a in serial]
    assert [a.findings for a in parallel] == [a.findings for a in serial]
    targets = expand_patterns(["*.csv"], base=many_logs, config=config).targets
    direct = [a for t in targets for a in check_target(t, config)]
    assert [a.findings for a in parallel] == [a.findings for a in direct]


def test_analyze_targets_returns_each_error_and_analyze_paths_raises_the_first(
    many_logs: Path,
) -> None:
    (many_logs / "b_broken.csv").write_bytes(b"\x00\x01binary")
    (many_logs / "a_empty.csv").write_text("")
    config = load_config(None)
    targets = expand_patterns(["*.csv"], base=many_logs, config=config).targets
    results = batch.analyze_targets(targets, config, jobs=2)
    errors = [r for r in results if isinstance(r, TrainspotterError)]
    assert [e.path for e in errors if isinstance(e, InputError)] == ["a_empty.csv", "b_broken.csv"]
    with pytest.raises(InputError) as caught:
        batch.analyze_paths(["*.csv"], config, jobs=2, base=many_logs)
    assert caught.value.path == "a_empty.csv"


def test_progress_bar_is_drawn_and_erased(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "PROGRESS_AFTER", 0.0)
    stream = io.StringIO()
    list(batch.parallel_map(square, [1, 2, 5], jobs=1, progress=stream, label="logs"))
    text = stream.getvalue()
    assert "3/3 logs" in text and text.endswith("\r\x1b[2K")


def test_cli_jobs_output_does_not_depend_on_jobs(
    many_logs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(many_logs)
    outputs = []
    for jobs in ("1", "2"):
        code = main(["analyze", "*.csv", "--jobs", jobs, "--output", "json"])
        assert code in (0, 1)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_cli_bad_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "x.csv", "--jobs", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_a_sweep_sniffs_each_log_once_and_reads_it_as_discovery_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery sniffs a sweep's matched files (to skip what is not a log); the check
    reads each with the reader found there instead of sniffing it again."""
    from trainspotter import discover, readers

    examples = ("divergence", "healthy")
    for name in examples:
        (tmp_path / name).mkdir()
        shutil.copyfile(EXAMPLES / name / "trainer_state.json", tmp_path / name / "log.json")
    (tmp_path / "healthy" / "notes.txt").write_text("not a training log\n")
    sniffed: list[str] = []
    real = readers.detect_format

    def counting(path: Path, display: str) -> object:
        sniffed.append(display)
        return real(path, display)

    monkeypatch.setattr(readers, "detect_format", counting)
    monkeypatch.setattr(discover, "detect_format", counting)
    config = load_config(None)
    collected = expand_patterns(["*/*"], base=tmp_path, config=config)
    assert [(t.display, t.detected) for t in collected.targets] == [
        ("divergence/log.json", "hf"),
        ("healthy/log.json", "hf"),
    ]
    assert [p.display for p in collected.skipped] == ["healthy/notes.txt"]
    results = list(batch.analyze_targets(collected.targets, config, jobs=1))
    assert sorted(sniffed) == ["divergence/log.json", "healthy/log.json", "healthy/notes.txt"]
    assert all(not isinstance(r, TrainspotterError) for r in results)
    direct = [
        check_target(discover.LogTarget(t.path, t.display, t.pattern), config)
        for t in collected.targets
    ]
    assert [[a.findings for a in r] for r in results if isinstance(r, list)] == [
        [a.findings for a in d] for d in direct
    ]
