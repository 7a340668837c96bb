"""Metric-name classes seen on unseen published logs, pinned on real runs: a count column
named for the loss (`num_loss_tokens`) beside losses named `nll` (examples/sft_nll_counts.py),
and one learning rate per optimizer parameter group (Lightning's `lr-Adam/pg1`, written by
its LearningRateMonitor in examples/lightning_param_group_lr.py; ultralytics' `lr/pg0`,
written by a real YOLO run in examples/yolo_param_groups.py).

Checked against the raw values in the logs (read with the json and csv modules, not through
trainspotter) and the ground truth the training scripts measured (expected.json).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from trainspotter import names
from trainspotter.analysis import analyze
from trainspotter.detectors import plateau
from trainspotter.model import Severity
from trainspotter.readers import read_log

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())


def _log(run: str) -> Path:
    return EXAMPLES / run / EXPECTED[run]["files"][0]


def test_a_token_count_beside_the_nll_is_not_judged_as_a_loss() -> None:
    run = "sft_nll_counts"
    rows = [json.loads(line) for line in _log(run).read_text().splitlines()]
    counts = [row["num_loss_tokens"] for row in rows]
    facts = EXPECTED[run]["facts"]
    assert (min(counts), max(counts)) == (
        facts["num_loss_tokens_min"],
        facts["num_loss_tokens_max"],
    )
    log = read_log(_log(run))
    assert "num_loss_tokens" in log.metrics and not names.is_loss_like("num_loss_tokens")
    found = analyze(log).findings
    assert not [f for f in found if f.metric == "num_loss_tokens"], found
    assert not [f for f in found if f.severity >= Severity.WARNING], found


def test_the_nll_is_the_train_loss_and_the_test_nll_the_eval_loss() -> None:
    log = read_log(_log("sft_nll_counts"))
    train = [m for m in log.metrics if names.is_loss_like(m) and not names.is_eval(m)]
    held_out = [m for m in log.metrics if names.is_loss_like(m) and names.is_eval(m)]
    assert (train, held_out) == (["train_mean_nll"], ["test/nll"])
    # plateau judges train_mean_nll as the run's loss: converged (info), flat at the end of
    # an annealed schedule, at the level the loop measured over its last 10 steps.
    judged = plateau.DETECTOR.detect(log, plateau.PlateauParams())
    assert [(f.metric, f.severity) for f in judged] == [("train_mean_nll", Severity.INFO)]
    last10 = EXPECTED["sft_nll_counts"]["facts"]["train_mean_nll_median_last_10"]
    assert abs(float(judged[0].evidence["flat_level"]) - last10) < 0.1 * last10


def test_the_first_parameter_groups_lr_is_read_as_lr_and_judged() -> None:
    """Lightning's LearningRateMonitor writes one column per parameter group; the first is
    `lr`, the other keeps its name, and the LR at ~0 from step 150 is found on it."""
    run = "lightning_param_group_lr"
    with _log(run).open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert [c for c in header if c.startswith("lr")] == ["lr-Adam/pg1", "lr-Adam/pg2"]
    log = read_log(_log(run))
    assert names.LR in log.metrics and "lr-Adam/pg2" in log.metrics
    assert float(log.metrics[names.LR].values.max()) == EXPECTED[run]["facts"]["body_lr_peak"]
    zero = EXPECTED[run]["facts"]["lr_zero_from_step"]
    found = [f for f in analyze(log).findings if f.detector == "lr_schedule"]
    assert [(f.metric, f.severity) for f in found] == [(names.LR, Severity.WARNING)]
    assert abs(found[0].step_start - zero) <= 1, found


def test_ultralytics_lr_per_group_columns_are_read_as_lr_and_judged() -> None:
    """A real YOLO results.csv: lr/pg0 is `lr`, the LR checks run on it (they abstained
    when no column was read as an LR) and find ultralytics' own schedule healthy."""
    run = "yolo_param_groups"
    with _log(run).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [c for c in rows[0] if c.startswith("lr")] == ["lr/pg0", "lr/pg1", "lr/pg2"]
    facts = EXPECTED[run]["facts"]
    assert [float(r["lr/pg0"]) for r in rows] == pytest.approx(facts["lr_pg0"], rel=1e-5)
    result = analyze(read_log(_log(run)))
    assert {"lr/pg1", "lr/pg2"} <= set(result.run.metrics)
    assert list(result.run.metrics[names.LR].values) == pytest.approx(facts["lr_pg0"], rel=1e-5)
    check = next(c for c in result.checks if c.detector == "lr_schedule")
    assert (check.status, check.metrics) == ("ran", (names.LR,))
    assert not [f for f in result.findings if f.detector == "lr_schedule"], result.findings


def test_a_warmup_in_the_bias_group_alone_is_no_missing_warmup(tmp_path: Path) -> None:
    """Older ultralytics versions put the biases first: lr/pg0 then falls from
    warmup_bias_lr (0.1) while the weight groups rise from 0. Read as `lr`, it has no
    warmup; with no `train/loss` (YOLO logs box/cls/dfl terms) no missing-warmup case is
    claimed, and the decay sized for 10 of 30 epochs is still found (~0 from epoch 11)."""
    path = tmp_path / "results.csv"
    header = ["epoch", "train/box_loss", "train/cls_loss", "train/dfl_loss"]
    header += ["metrics/mAP50(B)", "val/box_loss", "lr/pg0", "lr/pg1", "lr/pg2"]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for epoch in range(1, 31):
            decay = max(0.0, 1 - (epoch - 1) / 10) * 0.01
            weights = 0.01 * epoch / 3 if epoch <= 3 else decay
            bias = 0.1 - (0.1 - 0.01) * epoch / 3 if epoch <= 3 else decay
            loss = 1.5 / epoch**0.5
            writer.writerow([epoch, loss, loss, loss, 0.5, loss, bias, weights, weights])
    log = read_log(path)
    assert names.LR in log.metrics and {"lr/pg1", "lr/pg2"} <= set(log.metrics)
    assert float(log.metrics[names.LR].values[0]) == pytest.approx(0.07)  # pg0, the first
    found = [f for f in analyze(log).findings if f.detector == "lr_schedule"]
    assert [(f.step_start, f.severity) for f in found] == [(11, Severity.WARNING)], found
