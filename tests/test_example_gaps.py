"""Classes seen on unseen published logs, pinned on real Lightning runs
(examples/lightning_metric_gaps.py): a metric other than the loss that turns NaN while the
loss stays finite, an eval spike at the second evaluation, too early for a baseline, and a
burst of raised batches none of which alone is an outlier.

Checked against the raw values in the CSV Lightning wrote (read with the csv module, not
through trainspotter) and the ground truth the training script measured (expected.json).
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
from test_example_train_side import EXPECTED, log_of, raw_column

from trainspotter.analysis import analyze
from trainspotter.detectors.base import fmt
from trainspotter.detectors.spikes import DETECTOR, SpikesParams
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log


def _findings(run: str) -> list[Finding]:
    return analyze(read_log(log_of(run))).findings


@pytest.mark.parametrize(
    ("column", "loss_column"), [("train_dice", "train_loss"), ("val_dice", "val_loss")]
)
def test_a_dice_that_turns_nan_beside_a_finite_loss_is_a_warning(
    column: str, loss_column: str
) -> None:
    run = "lightning_dice_nan"
    path = log_of(run)
    truth = next(p for p in EXPECTED[run]["pathologies"] if p["metric"] == column)
    rows = raw_column(path, column)
    onset = next(i for i, (_, value) in enumerate(rows) if math.isnan(value))
    assert rows[onset][0] == truth["first_step"]  # the module's count agrees with the CSV
    assert all(math.isfinite(v) for _, v in raw_column(path, loss_column))  # loss stays finite
    found = [f for f in _findings(run) if f.metric == column]
    assert len(found) == 1, found
    f = found[0]
    assert f.detector == "divergence" and f.severity is Severity.WARNING
    assert (f.step_start, f.step_end) == (truth["first_step"], rows[-1][0])
    after = rows[onset:]
    assert all(math.isnan(v) for _, v in after)  # NaN at every epoch from the onset on
    assert f.evidence["nonfinite_points"] == f.evidence["logged_points"] == len(after)
    assert f.evidence["until_end_of_log"] == "yes" and "finite_again_step" not in f.evidence
    assert f.evidence["loss_stayed_finite"] == "yes"
    last_step, last_value = rows[onset - 1]
    assert f"finite up to step {last_step} (last value {fmt(last_value)})" in f.message
    assert (
        f"undefined (NaN) from step {truth['first_step']} to the end of the log (step "
        f"{rows[-1][0]}): all {len(after)} logged points there" in f.message
    )
    assert "stayed finite" in f.message and "usually a 0/0" in f.message


def test_the_dice_run_has_no_error_and_its_loss_is_not_flagged() -> None:
    found = _findings("lightning_dice_nan")
    assert not [f for f in found if f.severity is Severity.ERROR]
    assert not [f for f in found if f.metric == "train/loss" and f.severity >= Severity.WARNING]


def test_an_eval_spike_at_the_second_evaluation_rests_on_its_two_neighbours() -> None:
    run = "lightning_bn_eval_spike"
    truth = EXPECTED[run]["pathologies"][0]
    rows = raw_column(log_of(run), "val_loss")
    (before_step, before), (peak_step, peak), (after_step, after) = rows[:3]
    assert peak_step == truth["step"] and peak == pytest.approx(truth["val_loss_peak"], rel=1e-5)
    found = [f for f in _findings(run) if f.detector == "spikes" and f.metric == "eval/loss"]
    assert len(found) == 1, found
    f = found[0]
    assert f.severity is Severity.WARNING and (f.step_start, f.step_end) == (peak_step,) * 2
    assert f"{fmt(before)} at step {before_step} and {fmt(after)} at step {after_step}" in f.message
    assert f"jumped to {fmt(peak)} at step {peak_step}" in f.message
    assert f"{fmt(peak / max(before, after))}x" in f.message
    assert f"(at least {fmt(peak / max(before, after))}x both neighbours)" in f.title
    assert "rests on 2 neighbouring evaluations" in f.message


def test_a_burst_of_raised_batches_none_an_outlier_alone_is_one_spike() -> None:
    """lightning_shard_burst: 5 mislabelled batches on a per-batch loss noisy enough that
    none of them alone reaches the single-point threshold; the run of them is the spike."""
    run = "lightning_shard_burst"
    truth = EXPECTED[run]["pathologies"][0]
    rows = dict(raw_column(log_of(run), "train_loss"))
    lo, hi = truth["step_range"]
    found = [f for f in _findings(run) if f.detector == "spikes" and f.severity >= Severity.WARNING]
    assert len(found) == 1, found
    f = found[0]
    assert f.severity is Severity.WARNING and (f.step_start, f.step_end) == (lo, hi)
    peak_step = max(range(lo, hi + 1), key=lambda s: rows[s])
    level = statistics.median(rows[s] for s in range(lo - 5, lo))
    assert f"jumped from {fmt(level)} (median of the 5 points before)" in f.message
    assert f"to a peak of {fmt(rows[peak_step])} at step {peak_step}" in f.message
    # After the shard the loss stays ~10x up for a while (the model relearns); it counts as
    # back only because this per-batch loss is that noisy (2 sigmas), and the finding says
    # where it came down to rather than "came back".
    back = int(f.evidence["recovered_at_step"])
    after = statistics.median(rows[s] for s in range(back, back + 5))
    assert f"from step {back} the median of the next 5 points is {fmt(after)}, " in f.message
    assert f"{fmt(after / level)}x the level before (within 2 noise sigmas" in f.message
    assert f.title.endswith(f"came down to {fmt(after / level)}x the level before")
    # The class: no point alone reaches the single-point threshold; the run does.
    params = SpikesParams()
    assert float(f.evidence["robust_z"]) < params.z_threshold
    assert f"No single point reaches robust z {fmt(params.z_threshold)}" in f.message
    single_only = dataclasses.replace(params, sustained_points=10**6)
    assert not DETECTOR.detect(read_log(log_of(run)), single_only)
