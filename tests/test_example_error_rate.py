"""A character error rate that never improved, pinned on real Lightning runs
(examples/lightning_char_error_rate.py): a bidirectional GRU reversing 8-symbol strings,
`val_cer` logged per epoch by Lightning's `CSVLogger`. With the training labels shuffled
against their inputs the CER stays ~0.87 at all 30 evaluations while the train loss falls
(memorising): reported, quoting the raw first, best and last values at their steps. The
same model with the labels right learns (CER 0.68 -> 0.03): silent.

Checked against the raw values in the CSV Lightning wrote (read with the csv module, not
through trainspotter) and the ground truth the training script measured (expected.json).
"""

from __future__ import annotations

import pytest
from test_example_train_side import EXPECTED, log_of, raw_column

from trainspotter.analysis import analyze
from trainspotter.model import Severity
from trainspotter.readers import read_log


def test_a_cer_that_never_improved_under_shuffled_labels_is_no_generalisation() -> None:
    run = "lightning_cer_shuffled_labels"
    cer = raw_column(log_of(run), "val_cer")
    facts = EXPECTED[run]["facts"]
    # The script's own measurement, written as float32 by Lightning, 6 digits in expected.json.
    assert cer[0][1] == pytest.approx(facts["val_cer_first"], rel=1e-5)
    assert cer[-1][1] == pytest.approx(facts["val_cer_last"], rel=1e-5)
    (first_step, first), (last_step, last) = cer[0], cer[-1]
    best_step, best = min(cer, key=lambda point: point[1])
    findings = [
        f
        for f in analyze(read_log(log_of(run))).findings
        if f.metric == "val_cer" and f.severity >= Severity.WARNING
    ]
    assert len(findings) == 1, [f.title for f in findings]
    finding = findings[0]
    assert finding.detector == "overfitting"
    # Its best is a little below its first (0.8627 < 0.885): "never improved" would be
    # false of it, "did not improve materially" is what the rule found.
    assert best < first
    assert "did not improve materially on its first evaluation" in finding.title
    assert (finding.step_start, finding.step_end) == (first_step, last_step)
    message = finding.message
    assert "never improved" not in finding.title + message
    assert f"{first:.4g} at its first evaluation (step {first_step})" in message
    assert f"its best, {best:.4g} at step {best_step}" in message
    assert f"its last is {last:.4g} (step {last_step})" in message
    assert "at least half of its 0-1 scale" in message
    assert finding.fixes[0].startswith("Check that labels match inputs")


def test_the_cer_run_that_learns_says_nothing_about_its_cer() -> None:
    run = "lightning_cer_healthy"
    cer = [value for _, value in raw_column(log_of(run), "val_cer")]
    assert cer[-1] < 0.1 * cer[0]  # it learned: the healthy twin the rule must leave alone
    findings = analyze(read_log(log_of(run))).findings
    assert not [f for f in findings if f.severity >= Severity.WARNING]
    assert not [f for f in findings if f.metric == "val_cer" and f.detector != "eval_noise"]
