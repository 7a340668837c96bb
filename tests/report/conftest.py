"""Report-test fixtures (the builders are in report_fixtures.py)."""

from __future__ import annotations

import pytest
from report_fixtures import (
    analysis_of,
    divergent_findings,
    divergent_run,
    healthy_run,
    hostile_findings,
    hostile_run,
)

from trainspotter.analysis import Analysis


@pytest.fixture
def divergent() -> Analysis:
    """A run that diverges after an LR jump, with three findings (one chain)."""
    return analysis_of(divergent_run(), divergent_findings())


@pytest.fixture
def healthy() -> Analysis:
    """A healthy run on which two detectors ran and found nothing."""
    return analysis_of(healthy_run(), [], ran=["spikes", "divergence"])


@pytest.fixture
def hostile() -> Analysis:
    """A log whose every string tries to inject into some sink."""
    return analysis_of(hostile_run(), hostile_findings())
