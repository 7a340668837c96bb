"""Metric-name classes seen on unseen published logs, pinned on real runs: a count column
named for the loss (`num_loss_tokens`) beside losses named `nll` (examples/sft_nll_counts.py).

Checked against the raw values in the log (read with the json module, not through
trainspotter) and the ground truth the training script measured (expected.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
