"""The interface every detector satisfies.

A detector is an object with a stable `name` (its id), a one-line `summary`, a parameters
dataclass `Params` whose defaults are documented in the detector's docstring, and
`detect(run, params) -> list[Finding]`. Detectors read only the `Run`: they know nothing
of files, formats or reports. Below its minimum sample size a detector abstains (returns
no finding) rather than guess.
"""

from __future__ import annotations

from typing import Any, Protocol

from trainspotter.model import Finding, Run


class Detector(Protocol):
    """One pathology finder."""

    name: str
    """Stable id: spikes, divergence, plateau, overfitting, lr_schedule, grad_norm,
    throughput, eval_noise, loss_floor."""
    summary: str
    """One line for `trainspotter detectors`."""
    Params: type[Any]
    """A frozen dataclass of parameters; every field has a documented default."""

    def detect(self, run: Run, params: Any) -> list[Finding]:
        """All findings for this run, one per episode, with evidence and fixes."""
        ...
