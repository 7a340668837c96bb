"""Ordering (errors first, chronological within a level) and incident linking."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from synth import make_run

from trainspotter import analysis
from trainspotter.analysis import AnalysisSettings, analyze
from trainspotter.detectors import DETECTORS
from trainspotter.detectors.base import Detector
from trainspotter.model import Finding, Run, Severity


@dataclass(frozen=True)
class _NoParams:
    pass


class _Planted(Detector, name="planted", params=_NoParams, causal_rank=0, summary="test"):
    """A stand-in detector that returns fixed findings, to test analysis alone. It takes
    the name of a registered detector and links like it (its causal rank and role)."""

    def __init__(self, name: str, findings: list[Finding]) -> None:
        self.name = name
        self._findings = findings
        real = DETECTORS[name]
        self.causal_rank = real.causal_rank
        self.whole_run = real.whole_run
        self.drives_same_step = real.drives_same_step

    def detect(self, run: Run, params: Any) -> list[Finding]:
        return list(self._findings)


def _finding(detector: str, severity: Severity, start: int, end: int) -> Finding:
    return Finding(detector, f"{detector} title", severity, "train/loss", start, end, "msg")


@pytest.fixture
def run() -> Run:
    steps = np.arange(0, 1000)
    return make_run({"train/loss": (steps, np.linspace(2, 1, steps.size))})


def _install(monkeypatch: pytest.MonkeyPatch, *detectors: _Planted) -> None:
    monkeypatch.setattr(analysis, "DETECTORS", {d.name: d for d in detectors})


def test_errors_first_then_chronological(monkeypatch: pytest.MonkeyPatch, run: Run) -> None:
    _install(
        monkeypatch,
        _Planted("plateau", [_finding("plateau", Severity.INFO, 10, 20)]),
        _Planted("spikes", [_finding("spikes", Severity.WARNING, 500, 505)]),
        _Planted("throughput", [_finding("throughput", Severity.WARNING, 100, 900)]),
        _Planted("divergence", [_finding("divergence", Severity.ERROR, 800, 999)]),
    )
    result = analyze(run)
    assert [f.detector for f in result.findings] == [
        "divergence",
        "throughput",
        "spikes",
        "plateau",
    ]
    assert [f.id for f in result.findings] == ["F1", "F2", "F3", "F4"]
    assert result.worst is Severity.ERROR
    assert result.counts() == {"error": 1, "warning": 2, "info": 1}


def test_causal_chain_root_cause_first(monkeypatch: pytest.MonkeyPatch, run: Run) -> None:
    _install(
        monkeypatch,
        _Planted("lr_schedule", [_finding("lr_schedule", Severity.WARNING, 250, 250)]),
        _Planted("spikes", [_finding("spikes", Severity.WARNING, 251, 255)]),
        _Planted("divergence", [_finding("divergence", Severity.ERROR, 260, 999)]),
        _Planted("plateau", [_finding("plateau", Severity.WARNING, 600, 900)]),
    )
    result = analyze(run)
    assert len(result.chains) == 1
    chain = [result.by_id(i).detector for i in result.chains[0]]
    assert chain == ["lr_schedule", "spikes", "divergence"]
    divergence = next(f for f in result.findings if f.detector == "divergence")
    spikes = next(f for f in result.findings if f.detector == "spikes")
    lr = next(f for f in result.findings if f.detector == "lr_schedule")
    assert divergence.cause == spikes.id and spikes.cause == lr.id and lr.cause is None
    assert set(divergence.related) == {spikes.id, lr.id}
    plateau = next(f for f in result.findings if f.detector == "plateau")
    assert plateau.cause is None and plateau.related == ()


def test_distant_findings_are_not_linked(monkeypatch: pytest.MonkeyPatch, run: Run) -> None:
    _install(
        monkeypatch,
        _Planted("spikes", [_finding("spikes", Severity.WARNING, 100, 101)]),
        _Planted("divergence", [_finding("divergence", Severity.ERROR, 700, 999)]),
    )
    assert analyze(run).chains == []


def test_settings_disable_and_override_severity(monkeypatch: pytest.MonkeyPatch, run: Run) -> None:
    _install(
        monkeypatch,
        _Planted("spikes", [_finding("spikes", Severity.WARNING, 100, 101)]),
        _Planted("plateau", [_finding("plateau", Severity.WARNING, 300, 400)]),
    )
    settings = AnalysisSettings(enabled=frozenset({"spikes"}), severity={"spikes": Severity.ERROR})
    result = analyze(run, settings)
    assert result.detectors_run == ["spikes"]
    assert [(f.detector, f.severity) for f in result.findings] == [("spikes", Severity.ERROR)]


def test_same_step_findings_co_occur_and_the_loss_is_the_headline(
    monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    # One bad batch at step 400 spikes the loss and the gradient norm at the same step:
    # neither caused the other.
    _install(
        monkeypatch,
        _Planted("grad_norm", [_finding("grad_norm", Severity.WARNING, 400, 400)]),
        _Planted("spikes", [_finding("spikes", Severity.WARNING, 400, 401)]),
    )
    result = analyze(run)
    (chain,) = result.chains
    assert [result.by_id(i).detector for i in chain] == ["spikes", "grad_norm"]
    assert all(f.cause is None for f in result.findings)


def test_an_earlier_gradient_explosion_still_leads(
    monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    _install(
        monkeypatch,
        _Planted("grad_norm", [_finding("grad_norm", Severity.ERROR, 300, 340)]),
        _Planted("divergence", [_finding("divergence", Severity.ERROR, 310, 999)]),
    )
    result = analyze(run)
    grad = next(f for f in result.findings if f.detector == "grad_norm")
    divergence = next(f for f in result.findings if f.detector == "divergence")
    assert result.chains == [[grad.id, divergence.id]] and divergence.cause == grad.id


def test_a_chain_reads_in_increasing_ids_from_its_root(
    monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """Issue 10 class 8: the root cause (a warning) is F1 even though an error follows it."""
    _install(
        monkeypatch,
        _Planted("lr_schedule", [_finding("lr_schedule", Severity.WARNING, 250, 250)]),
        _Planted("divergence", [_finding("divergence", Severity.ERROR, 260, 999)]),
        _Planted("plateau", [_finding("plateau", Severity.WARNING, 100, 200)]),
    )
    result = analyze(run)
    assert [f.detector for f in result.findings] == ["lr_schedule", "divergence", "plateau"]
    assert result.chains == [["F1", "F2"]]


def test_a_spike_that_recovered_is_not_the_cause_of_a_later_blow_up(
    monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """Issue 10 class 8: a recovered spike reaches only to its recovery."""
    spike = _finding("spikes", Severity.WARNING, 500, 501)
    spike = Finding(**{**spike.__dict__, "evidence": {"recovered_at_step": 505}})
    _install(
        monkeypatch,
        _Planted("spikes", [spike]),
        _Planted("divergence", [_finding("divergence", Severity.ERROR, 510, 999)]),
    )
    result = analyze(run)
    assert result.chains == []
    assert all(f.cause is None for f in result.findings)
