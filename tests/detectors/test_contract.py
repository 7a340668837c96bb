"""The contract every registered detector keeps, checked once for all of them.

Whatever a reader hands over (steps in any order, duplicates, negative steps, NaN/Inf,
huge or tiny values, empty or one-point metrics, wall times or not), `detect` returns
findings and never raises, and every finding is well formed. A detector registered
later is covered without a line here.
"""

from __future__ import annotations

import numpy as np
import pytest
import synth
from hypothesis import given, settings
from hypothesis import strategies as st

from trainspotter import names
from trainspotter.detectors import DETECTORS
from trainspotter.model import Run, Series, Severity

METRICS = (*names.CANONICAL, "eval/accuracy", "train/aux_loss", "encoder/grad_norm")
"""Every canonical metric, plus the kinds detectors find by pattern: an eval quality
metric, a component loss and a per-module gradient norm."""

# A metric as a reader could hand it over: wild (steps and values anywhere, in any order)
# or logged at every step with values a real curve could take, so detectors do not
# simply abstain on every draw.
WILD = st.lists(synth.LOGGED_POINTS, max_size=60).map(synth.columns)
PER_STEP = st.lists(
    st.one_of(synth.FINITE_OR_NOT, st.floats(min_value=-1e6, max_value=1e6)), max_size=80
).map(lambda values: (np.arange(len(values)), np.array(values, dtype=np.float64)))
WALL_TIMES = st.lists(synth.FINITE_OR_NOT, max_size=80)


@st.composite
def runs(draw: st.DrawFn) -> Run:
    """Any subset of METRICS, each wild or per-step; `train/loss` sometimes with wall
    times (throughput derives step times from them)."""
    metrics: dict[str, Series] = {}
    for name in draw(st.lists(st.sampled_from(METRICS), unique=True, max_size=len(METRICS))):
        steps, values = draw(st.one_of(WILD, PER_STEP))
        wall = None
        if name == names.TRAIN_LOSS and draw(st.booleans()):
            drawn = draw(WALL_TIMES)
            wall = np.resize(np.array(drawn or [np.nan], dtype=np.float64), len(steps))
        metrics[name], _ = Series.build(steps, values, wall)
    return Run(metrics=metrics, source_format="synthetic", source_path="<synthetic>")


@pytest.mark.parametrize("name", list(DETECTORS))
@settings(max_examples=60, deadline=None)
@given(run=runs())
def test_every_detector_is_total_and_its_findings_well_formed(name: str, run: Run) -> None:
    detector = DETECTORS[name]
    found = detector.detect(run, detector.Params())
    assert isinstance(found, list)
    for f in found:
        assert f.detector == name
        assert isinstance(f.severity, Severity)
        assert f.step_start <= f.step_end
        assert f.title and f.message
        assert all(isinstance(v, int | float | str) for v in f.evidence.values()), f.evidence


@pytest.mark.parametrize("name", list(DETECTORS))
def test_every_detector_declares_its_linking_role(name: str) -> None:
    detector = DETECTORS[name]
    assert detector.name == name
    assert isinstance(detector.causal_rank, int)
    assert isinstance(detector.whole_run, bool)
    assert isinstance(detector.drives_same_step, bool)
    assert detector.summary
