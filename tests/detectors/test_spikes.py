"""spikes: planted jumps are found at their step, clean curves stay silent."""

from __future__ import annotations

import numpy as np
import pytest
import synth
from synth import decaying_loss, every, healthy_noisy_run, make_run, warmup_cosine

from trainspotter.detectors.spikes import DETECTOR, SpikesParams, startup_points
from trainspotter.model import Finding, Run, Series, Severity

PARAMS = SpikesParams()


def _detect(run: Run) -> list[Finding]:
    return DETECTOR.detect(run, PARAMS)


def _loss_run(steps: np.ndarray, values: np.ndarray, name: str = "train/loss") -> Run:
    return make_run({name: (steps, values), "lr": (steps, warmup_cosine(steps))})


@pytest.mark.parametrize(("interval", "seed"), [(1, 0), (1, 3), (10, 1), (50, 2), (200, 4)])
def test_planted_spike_is_found_at_its_step_and_recovers(interval: int, seed: int) -> None:
    steps = every(60_000 if interval == 200 else 5000, interval)
    loss = decaying_loss(steps, seed=seed)
    k = steps.size * 3 // 5
    loss[k : k + 3] *= 4.0
    found = _detect(_loss_run(steps, loss))
    assert len(found) == 1, found
    f = found[0]
    # Tolerance: exactly the planted logged steps.
    assert (f.step_start, f.step_end) == (int(steps[k]), int(steps[k + 2]))
    assert f.severity is Severity.WARNING
    assert f.evidence["recovered"] == "yes"
    # Against a trailing median that lags a decaying curve: a little under the planted 4x.
    assert 2.5 <= float(f.evidence["ratio_to_baseline"]) <= 4.5
    assert "4" in f.message and f.fixes


@pytest.mark.parametrize(("interval", "seed"), [(1, 0), (10, 1), (50, 2)])
def test_one_point_back_at_the_next_is_one_hard_batch(interval: int, seed: int) -> None:
    """A single logged point, back to its level at the next: reported, as info."""
    steps = every(5000, interval)
    loss = decaying_loss(steps, seed=seed)
    k = steps.size * 3 // 5
    loss[k] *= 4.0
    (f,) = _detect(_loss_run(steps, loss))
    assert f.step_start == f.step_end == int(steps[k])
    assert f.severity is Severity.INFO
    assert "one hard batch" in f.message


def test_a_jump_that_stays_up_is_an_error() -> None:
    steps = every(3000, 1)
    loss = decaying_loss(steps, seed=5)
    loss[2000:] *= 3.0
    found = _detect(_loss_run(steps, loss))
    assert [f.severity for f in found] == [Severity.ERROR]
    assert found[0].step_start == 2000
    assert found[0].evidence["recovered"] == "no"


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_scale_does_not_matter(scale: float) -> None:
    steps = every(2000, 1)
    loss = decaying_loss(steps, seed=7) * scale
    loss[1500] *= 3.0
    found = _detect(_loss_run(steps, loss))
    assert [f.step_start for f in found] == [1500]


def test_curves_with_negative_values_use_a_linear_scale() -> None:
    steps = every(2000, 1)
    loss = decaying_loss(steps, seed=8) - 1.0  # crosses zero: an ELBO-like loss
    loss[1200] += 5.0
    found = _detect(_loss_run(steps, loss))
    assert [f.step_start for f in found] == [1200]


def test_sparse_eval_loss_spike_is_found() -> None:
    steps = every(2000, 100)  # 20 evaluations
    loss = decaying_loss(steps, seed=9, noise=0.01)
    loss[14] *= 2.5
    found = _detect(make_run({"eval/loss": (steps, loss)}))
    assert [(f.metric, f.step_start) for f in found] == [("eval/loss", int(steps[14]))]
    assert "eval" in found[0].fixes[0].lower()


def test_small_wiggle_on_a_very_smooth_curve_is_not_a_spike() -> None:
    steps = every(1000, 1)
    loss = decaying_loss(steps, noise=0.0)
    loss[600] *= 1.2  # huge z (no noise at all), but only 20%: below min_ratio
    assert _detect(_loss_run(steps, loss)) == []


def test_values_rounded_to_the_logging_resolution_are_not_spikes() -> None:
    # Old transformers round the logged loss to 4 decimals: 0.0003 -> 0.0008 is rounding.
    steps = every(4000, 25)
    rng = np.random.default_rng(0)
    loss = np.round(np.full(steps.size, 0.0003) + rng.choice([0, 0, 0, 1e-4], steps.size), 4)
    loss[100] = 0.0008
    assert _detect(_loss_run(steps, loss)) == []


def test_a_climbing_curve_is_not_a_series_of_spikes() -> None:
    steps = every(400, 1)
    loss = np.concatenate([np.full(100, 0.12), np.linspace(0.12, 0.32, 200), np.full(100, 0.31)])
    loss = loss * np.exp(np.random.default_rng(1).normal(0, 0.01, loss.size))
    assert _detect(_loss_run(steps, loss)) == []


def test_spike_in_the_last_point_is_a_warning_with_unknown_recovery() -> None:
    steps = every(1000, 1)
    loss = decaying_loss(steps, seed=11)
    loss[-1] *= 5.0
    (f,) = _detect(_loss_run(steps, loss))
    assert f.severity is Severity.WARNING and f.evidence["recovered"] == "unknown"


def test_a_spike_followed_by_nan_did_not_recover() -> None:
    steps = every(1000, 1)
    loss = decaying_loss(steps, seed=12)
    loss[-3] *= 50.0
    loss[-2:] = np.nan
    (f,) = _detect(_loss_run(steps, loss))
    assert f.severity is Severity.ERROR


def test_nan_gaps_and_duplicate_steps_are_tolerated() -> None:
    steps = every(3000, 1)
    loss = decaying_loss(steps, seed=13)
    loss[::97] = np.nan
    loss[2000] *= 4.0
    dup_steps = np.concatenate([steps, steps[1000:1100]])  # a resumed run re-logs 100 steps
    dup_values = np.concatenate([loss, loss[1000:1100]])
    series, dropped = Series.build(dup_steps, dup_values)
    assert dropped == 100
    run = Run(metrics={"train/loss": series}, source_format="t", source_path="t")
    assert [f.step_start for f in _detect(run)] == [2000]


def test_many_spikes_report_the_first_and_the_largest() -> None:
    steps = every(10_000, 1)
    loss = decaying_loss(steps, seed=14)
    planted = list(range(500, 9500, 900))  # 10 spikes
    for i, k in enumerate(planted):
        loss[k] *= 3.0 + i
    found = _detect(_loss_run(steps, loss))
    assert len(found) == PARAMS.max_findings_per_metric
    starts = [f.step_start for f in found]
    assert starts[0] == planted[0] and planted[-1] in starts
    assert all(f.evidence["spike_episodes_in_metric"] == len(planted) for f in found)


def test_short_runs_abstain() -> None:
    steps = every(10, 1)
    loss = decaying_loss(steps)
    loss[8] *= 10
    assert _detect(_loss_run(steps, loss)) == []


def test_false_alarm_rate_on_healthy_noisy_runs() -> None:
    # Measured: 0 of 200 seeds warn (200/200 = 100% silent).
    loud = sum(
        any(f.severity >= Severity.WARNING for f in _detect(healthy_noisy_run(seed)))
        for seed in range(200)
    )
    assert (200 - loud) / 200 >= 0.99, loud


def test_titles_share_one_pattern_and_name_the_peak() -> None:
    steps = every(3000, 1)
    recovered = decaying_loss(steps, seed=15)
    recovered[1500] *= 4.0
    (f,) = _detect(_loss_run(steps, recovered))
    assert f.title == "train/loss spiked at step 1500 and recovered"
    stays_up = decaying_loss(steps, seed=16)
    stays_up[2000:] *= 3.0
    (f,) = _detect(_loss_run(steps, stays_up))
    assert f.title.startswith("train/loss spiked at step") and f.title.endswith(
        f"step {f.evidence['peak_step']}) and did not recover"
    )
    last = decaying_loss(steps, seed=11)
    last[-1] *= 5.0
    (f,) = _detect(_loss_run(steps, last))
    assert f.title.startswith("train/loss spiked at step 2999 ")


def test_a_spike_over_several_points_names_its_peak() -> None:
    steps = every(3000, 1)
    loss = decaying_loss(steps, seed=17)
    loss[1500:1503] *= [3.0, 8.0, 4.0]
    (f,) = _detect(_loss_run(steps, loss))
    assert (f.step_start, f.evidence["peak_step"]) == (1500, 1501)
    assert "(peak at step 1501)" in f.title and "a peak of" in f.message
    assert "at step 1501" in f.message


def test_further_jumps_are_counted_without_plural_placeholders() -> None:
    steps = every(3000, 1)
    loss = decaying_loss(steps, seed=18)
    loss[2000:] *= 3.0
    loss[2300:] *= 3.0  # a second jump before it ever came back
    (f,) = _detect(_loss_run(steps, loss))
    assert f.evidence["further_jumps"] == 1
    assert "once more" in f.message and "(s)" not in f.message


def test_a_jump_near_zero_loss_is_not_an_incident() -> None:
    """Issue 10 class 4: at a memorised loss (~1e-4 after 2.3) a one-log jump to 1e-3 that
    comes back is the loss's heavy tail, whatever its ratio; the same jump when the loss
    sits high (no progress to speak of) is still a spike."""
    steps = synth.every(3000, 1, start=1)
    loss = synth.decaying_loss(steps, start=2.3, floor=1e-4, noise=0.05, seed=3)
    loss[2000] = 1e-3
    assert DETECTOR.detect(synth.make_run({"train/loss": (steps, loss)}), PARAMS) == []


def test_terms_of_a_total_loss_are_one_finding_led_by_the_total() -> None:
    """Issue 10: PINN terms beside mean_loss; a term spiking alone (traded off) is silent;
    an incident of the total names the terms that spiked with it."""
    steps = synth.every(1000, 1, start=1)
    a = synth.decaying_loss(steps, start=1.0, floor=0.05, noise=0.05, seed=4)
    b = synth.decaying_loss(steps, start=1.0, floor=0.05, noise=0.05, seed=5)
    a[300] *= 20  # term a alone: the total barely moves
    a[700] *= 50
    b[700] *= 50  # both terms and the total: one incident
    total = (a + b) / 2
    total[300] = (total[299] + total[301]) / 2
    run = synth.make_run({"mean_loss": (steps, total), "a_loss": (steps, a), "b_loss": (steps, b)})
    found = DETECTOR.detect(run, PARAMS)
    assert [(f.metric, f.step_start) for f in found] == [("mean_loss", int(steps[700]))]
    assert found[0].evidence["terms_that_spiked"] == "a_loss, b_loss"


def test_a_burst_after_a_start_up_blow_up_is_found_whole() -> None:
    """A short log whose first 5 points sit 6-8 decades above everything after them (a bad
    initial scale, gone after one tenfold-or-more fall) and then a burst of 6 consecutive
    logs 4-5 decades above its working level: measured against the start-up, the burst
    was under a tenth of the "progress" and the working level looked memorised; measured
    after it, it is a spike. The episode is the whole burst: its peak is the highest
    point, and the curve comes back at the first point after it (wild3 lightning/012's
    shape)."""
    rng = np.random.default_rng(0)
    start = [8.2e7, 1.1e8, 2.8e7, 2.6e5, 4.3e6]
    working = list(np.exp(rng.normal(2.0, 0.6, 20)))
    burst = [6.9e5, 5.4e5, 8.0e4, 1.8e6, 2.3e6, 7.9e5]
    after = list(np.exp(rng.normal(2.0, 0.6, 14)))
    loss = np.array(start + working + burst + after)
    steps = np.arange(loss.size)
    (f,) = [f for f in _detect(make_run({"train/loss": (steps, loss)})) if f.step_start > 5]
    assert (f.step_start, f.step_end) == (25, 30)
    assert int(f.evidence["peak_step"]) == 29 and f.evidence["recovered_at_step"] == 31
    assert f.severity is Severity.WARNING and "at step 29" in f.message


def test_startup_transient_is_a_tenfold_fall_in_one_log_or_a_steep_stretch() -> None:
    assert startup_points(np.array([8e7, 1e8, 3e7, 3e5, 4e6, 1.0, 3.4, 17.0, 36.0]), 10) == 5
    # A steep descent of 2-5x per log, to a working level the rest of the log holds: its
    # leading points ten times above the log's median (the first 8) are the transient.
    rng = np.random.default_rng(0)
    steep = np.array([2.9e5, 1.1e5, 6.1e4, 1.3e4, 1.0e4, 2.4e3, 2.3e3, 4.6e2, 85, 42, 25])
    steep = np.concatenate((steep, 25 * np.exp(rng.normal(0, 0.3, 40))))
    assert startup_points(steep, 10) == 8
    # A memorising run falls a few percent per log: no transient, however far it falls.
    assert startup_points(2.3 * np.exp(-np.arange(200) / 10.0), 10) == 0
    memorising = np.maximum(2.3 * np.exp(-np.arange(2000) / 60.0), 1e-4)
    assert startup_points(memorising * np.exp(rng.normal(0, 0.2, 2000)), 10) == 0
    # A steady 1.5x per log all through the log is a descent, not a start-up.
    assert startup_points(np.geomspace(1e5, 1.0, 30), 10) == 0


def test_a_memorised_runs_jumps_stay_out_with_the_start_up_rule() -> None:
    """A loss that memorises gradually keeps its whole descent as the progress a jump must
    undo: a burst of three logs 1e-4 -> 1e-2 near 0 is not reported."""
    steps = np.arange(2000)
    loss = np.maximum(2.3 * np.exp(-steps / 60.0), 1e-4)
    loss = loss * np.exp(np.random.default_rng(1).normal(0, 0.2, steps.size))
    loss[1500:1503] = [0.05, 0.02, 0.03]
    loud = [f for f in _detect(make_run({"train/loss": (steps, loss)})) if f.step_start > 1000]
    assert not [f for f in loud if f.severity >= Severity.WARNING]
