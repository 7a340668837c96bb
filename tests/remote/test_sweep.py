"""Sweeps: the per-log check as a pure function of (bytes, format, config), and `gate
--engine dask` on a real dask.distributed LocalCluster of worker processes, against the
processes engine on the same logs."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_support import free_port, reports_by_path

from trainspotter import batch
from trainspotter.batch import analyze_targets, check_target
from trainspotter.cli import main
from trainspotter.config import Config
from trainspotter.discover import expand_patterns
from trainspotter.errors import InputError, TrainspotterError
from trainspotter.gate import GateOptions, run_gate
from trainspotter.sweep import check_log_bytes, pack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_packed_log_checks_as_the_log_on_disk_for_every_example() -> None:
    """Every example log (every format, folder logs included) gives the same report from
    its bytes in a fresh folder as from its place on disk."""
    collected = expand_patterns(["**"], base=EXAMPLES, config=Config())
    formats = set()
    errors = []
    for target in collected.targets:
        try:
            on_disk = check_target(target, Config())
        except TrainspotterError as exc:  # not a log after all: the same error either way
            with pytest.raises(TrainspotterError) as raised:
                check_log_bytes(pack(target), Config())
            assert str(raised.value) == str(exc)
            errors.append(target.display)
            continue
        packed = check_log_bytes(pack(target), Config())
        assert reports_by_path(packed) == reports_by_path(on_disk), target.display
        formats.update(a.run.source_format for a in on_disk)
    assert {"hf", "tensorboard", "lightning"} <= formats
    assert len(collected.targets) - len(errors) >= 30


def test_packing_leaves_weights_out_and_keeps_the_names_readers_use(tmp_path: Path) -> None:
    run = tmp_path / "exp" / "run" / "output"
    shutil.copytree(EXAMPLES / "hf_trainer/output", run)
    (run / "checkpoint-400/model.safetensors").write_bytes(bytes(1000))
    collected = expand_patterns([str(run)], base=tmp_path, config=Config())
    log = pack(collected.targets[0])
    assert log.name == "exp/run/output"
    assert sorted(name for name, _ in log.files) == [
        "exp/run/output/checkpoint-300/trainer_state.json",
        "exp/run/output/checkpoint-400/trainer_state.json",
    ]


def test_a_packed_log_with_an_unsafe_name_is_refused() -> None:
    collected = expand_patterns(["healthy/metrics.csv"], base=EXAMPLES, config=Config())
    log = pack(collected.targets[0])
    hostile = type(log)(log.display, log.pattern, log.name, (("../escape.csv", b"x"),))
    with pytest.raises(InputError, match="unsafe file name"):
        check_log_bytes(hostile, Config())


# --------------------------------------------------------------------------- Dask


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[Any]:
    """A LocalCluster of two worker processes; after it is closed, their PIDs are gone."""
    distributed = pytest.importorskip("distributed", reason="needs the 'dask' extra")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
    )
    with distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids
    try:
        yield cluster
    finally:
        cluster.close()
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)


def _sweep(folder: Path) -> list[str]:
    """Real example logs of several formats, with an unreadable log among them."""
    names = []
    for index, source in enumerate(
        [
            "divergence/trainer_state.json",
            "healthy/metrics.csv",
            "divergence/tensorboard",
            "loss_spike/trainer_state.json",
            "lightning_input_spike/lightning_logs",
            "overfitting/metrics.csv",
            "hf_trainer/output",
            "plateau/metrics.csv",
        ]
    ):
        target = folder / f"run{index}" / Path(source).name
        if (EXAMPLES / source).is_dir():
            shutil.copytree(EXAMPLES / source, target)
        else:
            target.parent.mkdir(parents=True)
            shutil.copyfile(EXAMPLES / source, target)
        names.append(target.relative_to(folder).as_posix())
    broken = folder / "run3b" / "trainer_state.json"  # cut off mid-write
    broken.parent.mkdir()
    broken.write_bytes((EXAMPLES / "loss_spike/trainer_state.json").read_bytes()[:5000])
    return names


def test_gate_on_dask_gives_the_processes_engine_s_results_in_input_order(
    dask_cluster: Any, tmp_path: Path
) -> None:
    _sweep(tmp_path)
    common = {"patterns": ("run*/*",), "base": tmp_path, "outputs": ("json",)}
    on_dask = run_gate(
        GateOptions(**common, engine="dask", scheduler=dask_cluster.scheduler_address),
        io.StringIO(),
        io.StringIO(),
    )
    local = run_gate(GateOptions(**common, jobs=1), io.StringIO(), io.StringIO())

    assert on_dask.exit_code == local.exit_code == 2
    assert len(on_dask.analyses) == 8
    assert list(reports_by_path(on_dask.analyses).items()) == list(
        reports_by_path(local.analyses).items()
    )
    assert on_dask.failures == local.failures
    assert [f.display for f in on_dask.failures] == ["run3b/trainer_state.json"]


def test_results_come_back_in_input_order_however_the_chunks_finish(
    dask_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One log per task, many tasks in flight: the order is the targets', and an
    unreadable log's error is in its own place."""
    _sweep(tmp_path)
    collected = expand_patterns(["run*/*"], base=tmp_path, config=Config())
    targets = collected.targets * 3
    monkeypatch.setattr(batch, "CHUNK_MAX", 1)
    results = analyze_targets(
        targets, Config(), engine="dask", scheduler=dask_cluster.scheduler_address
    )
    shown = ["error" if isinstance(r, TrainspotterError) else r[0].run.source_path for r in results]
    expected = ["error" if t.display == "run3b/trainer_state.json" else t.display for t in targets]
    assert shown == expected
    assert shown.count("error") == 3 and len(set(shown)) == 9


def test_gate_starts_a_local_cluster_when_no_scheduler_is_given(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="needs the 'dask' extra")
    shutil.copytree(EXAMPLES / "divergence", tmp_path / "divergence")
    shutil.copytree(EXAMPLES / "healthy", tmp_path / "healthy")
    common = {"patterns": ("*/metrics.csv", "*/trainer_state.json"), "base": tmp_path}
    on_dask = run_gate(
        GateOptions(**common, engine="dask", jobs=2, outputs=("json",)),
        io.StringIO(),
        io.StringIO(),
    )
    local = run_gate(GateOptions(**common, jobs=1, outputs=("json",)), io.StringIO(), io.StringIO())
    assert on_dask.exit_code == local.exit_code == 1
    assert list(reports_by_path(on_dask.analyses).items()) == list(
        reports_by_path(local.analyses).items()
    )


def test_an_unreachable_scheduler_is_the_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed", reason="needs the 'dask' extra")
    monkeypatch.setattr(batch, "DASK_CONNECT_TIMEOUT", "2s")
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(EXAMPLES / "healthy/metrics.csv", tmp_path / "metrics.csv")
    address = f"tcp://127.0.0.1:{free_port()}"
    code = main(["gate", "metrics.csv", "--engine", "dask", "--scheduler", address])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trainspotter: error: cannot reach the Dask scheduler {address}: ")
    assert err.count("\n") == 1


def test_scheduler_without_the_dask_engine_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["gate", "x.csv", "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    assert capsys.readouterr().err.startswith(
        "trainspotter: error: --scheduler needs --engine dask"
    )
