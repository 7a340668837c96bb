"""Fixes speak the framework of the log (issue 13 point 5), judged from real example logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainspotter.analysis import analyze
from trainspotter.detectors import idioms
from trainspotter.monitor import Monitor, replay
from trainspotter.readers import read_log

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ("divergence/trainer_state.json", "transformers"),
        ("lightning_input_spike/lightning_logs/version_0/metrics.csv", "lightning"),
        ("keras_frozen/training.log", "keras"),
        ("torch_box_head_overfit/results.csv", None),  # YOLO's layout: `epoch`, `train/...`
        ("divergence/metrics.csv", "lightning"),  # written in CSVLogger's layout
        ("divergence/tensorboard", None),  # tensorboardX leaves no mark of the loop
    ],
)
def test_framework_of_each_real_log(log: str, expected: str | None) -> None:
    assert idioms.framework(read_log(EXAMPLES / log)) == expected


def clipping_fixes(log: str) -> list[str]:
    analysis = analyze(read_log(EXAMPLES / log))
    return [fix for f in analysis.findings for fix in f.fixes if "clipping" in fix]


def test_lightning_spike_fix_names_the_trainer_argument() -> None:
    fixes = clipping_fixes("lightning_input_spike/lightning_logs/version_0/metrics.csv")
    assert fixes and all("gradient_clip_val" in fix for fix in fixes)


def test_transformers_log_is_not_told_to_enable_clipping_it_has_by_default() -> None:
    fixes = clipping_fixes("divergence/trainer_state.json")
    assert fixes and all("max_grad_norm" in fix and "Enable" not in fix for fix in fixes)


def test_a_log_that_names_no_framework_gets_both_the_pytorch_and_the_keras_knob() -> None:
    """An event file (or CSV, JSONL, printed log) is written alike by PyTorch and TensorFlow
    loops: a fix that named one would be wrong for the other's users."""
    fixes = clipping_fixes("divergence/tensorboard")
    assert fixes and all("clip_grad_norm_" in fix and "clipnorm" in fix for fix in fixes)


def test_a_declared_framework_wins_over_the_format() -> None:
    run = read_log(EXAMPLES / "divergence/tensorboard")
    run.meta["framework"] = "keras"
    assert idioms.framework(run) == "keras"
    run.meta["framework"] = "not-a-framework"  # anything else is ignored, not trusted
    assert idioms.framework(run) is None


def test_a_live_monitor_told_keras_gives_the_keras_fix() -> None:
    reference = read_log(EXAMPLES / "divergence/tensorboard")
    monitor = Monitor(framework="keras")
    for _ in replay(reference, monitor):
        pass
    fixes = [fix for f in monitor.finish().findings for fix in f.fixes if "clipping" in fix]
    assert fixes and all("clipnorm" in fix for fix in fixes)


def test_a_monitor_refuses_an_unknown_framework() -> None:
    with pytest.raises(ValueError, match="framework must be one of"):
        Monitor(framework="tensorflow")  # type: ignore[arg-type]
