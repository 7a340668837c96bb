"""Conformance on real logs from public repositories (../shared/wild, beside the repo root).

Every file must read into a Run or be rejected with an InputError, never anything else, and
a few specifics from wild/README.md must hold. Skipped when the folder is absent (it is not
part of the project). Run with `-s` to see the tally (read / rejected with the reason).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from trainspotter.errors import InputError
from trainspotter.model import Run
from trainspotter.readers import READERS, ReadOptions, read_log

WILD = Path(__file__).resolve().parents[1].parent / "shared" / "wild"
NOT_LOGS = {"README.md", "manifest.json", "candidates.json", "track.tsv"}

if not WILD.is_dir():
    pytest.skip("../shared/wild is not present", allow_module_level=True)


def wild_files() -> list[Path]:
    return sorted(
        path
        for path in WILD.rglob("*")
        if path.is_file()
        and path.name not in NOT_LOGS
        and "tools" not in path.relative_to(WILD).parts
    )


def wild(short_id: str) -> Path:
    """`hf/007` -> the wild file with that folder and number."""
    folder, number = short_id.split("/")
    (found,) = (WILD / folder).glob(f"{number}__*")
    return found


def short_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name[:3]}"


TALLY: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def print_tally() -> Iterator[None]:
    yield
    read = sorted(key for key, value in TALLY.items() if value.startswith("read"))
    rejected = sorted(key for key, value in TALLY.items() if not value.startswith("read"))
    print(f"\nwild: {len(read)} read, {len(rejected)} rejected of {len(TALLY)}")
    for key in rejected:
        print(f"  rejected {key}: {TALLY[key]}")


@pytest.mark.parametrize("path", wild_files(), ids=short_id)
def test_reads_or_rejects_cleanly(path: Path) -> None:
    try:
        run = read_log(path)
    except InputError as exc:
        assert exc.problem and "\n" not in exc.problem
        TALLY[short_id(path)] = exc.problem
        return
    assert isinstance(run, Run)
    for series in run.metrics.values():
        assert bool(np.all(np.diff(series.steps) > 0))
    TALLY[short_id(path)] = f"read as {run.source_format}: {len(run.metrics)} metrics"


def test_hf_summary_only_has_no_train_loss() -> None:
    with pytest.raises(InputError, match=r"no data points: .*only the run summary"):
        read_log(wild("hf/007"))
    run = READERS["hf"].read(wild("hf/007"), ReadOptions())
    assert "train/loss" not in run.metrics
    assert run.meta["summary"]["train_loss"] == pytest.approx(0.9732094605763754)
    assert run.meta["summary"]["train_runtime"] == pytest.approx(5980.6912)


def test_hf_nan_grad_norm_is_kept() -> None:
    grad_norm = read_log(wild("hf/010")).metrics["grad_norm"]
    assert grad_norm.steps[~grad_norm.finite].tolist() == [1, 2, 18, 74]


def test_hf_empty_log_history_is_rejected_as_no_data() -> None:
    for case in ("hf/012", "hf/013"):
        assert READERS["hf"].read(wild(case), ReadOptions()).metrics == {}
        with pytest.raises(InputError, match="no data points"):
            read_log(wild(case))


def test_hf_stub_without_log_history_is_rejected() -> None:
    with pytest.raises(InputError, match="no log_history"):
        read_log(wild("hf/022"))


def test_hf_eval_metrics() -> None:
    run = read_log(wild("hf/005"))
    assert len(run.metrics["eval/loss"]) == 5 and "eval/wer" in run.metrics
    assert len(run.metrics["train/loss"]) == 200


def test_keras_semicolons_after_a_junk_line() -> None:
    run = read_log(wild("keras/004"))
    assert run.source_format == "csv"
    assert len(run.metrics["train/loss"]) == 17
    assert run.metrics["eval/loss"].values.min() == pytest.approx(0.144, abs=1e-3)


def test_keras_double_cr_and_appended_runs() -> None:
    assert len(read_log(wild("keras/006")).metrics["eval/loss"]) == 10
    appended = read_log(wild("keras/005"))  # epoch 0,0,0: three appended one-epoch runs
    assert appended.meta["duplicate_steps"] == {"accuracy": 2, "train/loss": 2}


def test_wandb_runs_table_is_rejected() -> None:
    with pytest.raises(InputError, match="runs-table export"):
        read_log(wild("wandb/001"))


def test_wandb_chart_export_has_three_runs() -> None:
    path = wild("wandb/002")
    run = read_log(path)
    names = [run.meta["run_name"], *run.meta["other_runs"]]
    assert len(names) == 3
    last_steps = {
        name: int(
            read_log(path, options=ReadOptions(run_name=name)).metrics["train/loss"].steps[-1]
        )
        for name in names
    }
    assert sorted(last_steps.values()) == [119, 122, 127]


def test_lightning_nan_divergence() -> None:
    run = read_log(wild("lightning/006"))
    assert run.metrics["train_gen_loss"].nonfinite_count() == 320
    assert math.isclose(run.metrics["train_disc_loss"].values[0], 1.6226933508321501e24)


def test_lightning_sparse_step_and_epoch_columns() -> None:
    # One metric per quantity: the per-step curves are kept, their _epoch twins dropped.
    run = read_log(wild("lightning/007"))
    assert {"train/loss", "dynamics_loss"} <= set(run.metrics)
    assert not {"train_loss_epoch", "dynamics_loss_epoch"} & set(run.metrics)
    assert any("dropped dynamics_loss_epoch (kept dynamics_loss_step)" in n for n in run.notes())


def test_csv_without_step_or_header() -> None:
    assert read_log(wild("csv/001")).meta["step_column"] is None
    assert read_log(wild("csv/002")).meta["step_column"] == "Epoch"
    with pytest.raises(InputError, match="no header row"):
        read_log(wild("csv/003"))
    assert "eval/loss" in read_log(wild("csv/004")).metrics  # ", val_loss" header spacing


def test_jsonl_nested() -> None:
    run = read_log(wild("jsonl/002"))
    assert "eval/10/loss" in run.metrics and "train/loss" in run.metrics
