"""The interface every detector satisfies.

A detector is an object with a stable `name` (its id), a one-line `summary`, a parameters
dataclass `Params` whose defaults are documented in the detector's docstring, and
`detect(run, params) -> list[Finding]`. Detectors read only the `Run`: they know nothing
of files, formats or reports. Below its minimum sample size a detector abstains (returns
no finding) rather than guess.

A detector also says how analysis links its findings into incidents (`causal_rank`,
`whole_run`, `drives_same_step`), so the core never names a detector: adding one is its
module and one registry line.

A detector may also say, cheaply and before it runs, what it would examine
(`scope(run, params) -> Scope | Abstain`): the metrics it reads, or why it has nothing to
look at ("no step time or throughput metric"). Analysis records that per log
(`Analysis.checks`) so every report can say what was checked, and a log with nothing to
check never reads as healthy. A detector without `scope` is run and listed as having run
on the metrics it did not declare (`scope_of`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from trainspotter.model import Finding, Run


@dataclass(frozen=True)
class Scope:
    """What a detector examines in one run."""

    metrics: tuple[str, ...]
    """The canonical metric names it reads, sorted; empty only when it did not say."""


@dataclass(frozen=True)
class Abstain:
    """Why a detector has nothing to examine in one run; it is not run."""

    reason: str
    """What is missing, e.g. "no step time or throughput metric"."""


def scope_of(detector: object, run: Run, params: Any) -> Scope | Abstain:
    """The detector's own `scope`, or (for one that does not declare it) a Scope with no
    metric named: it runs on whatever it reads."""
    declared = getattr(detector, "scope", None)
    if declared is None:
        return Scope(metrics=())
    result: Scope | Abstain = declared(run, params)
    return result


def scope_or_abstain(metrics: Iterable[str], missing: str) -> Scope | Abstain:
    """`Scope` of the metrics found, or `Abstain(missing)` when there are none: the usual
    body of a detector's `scope`."""
    found = tuple(sorted(set(metrics)))
    return Scope(metrics=found) if found else Abstain(missing)


def fmt(x: float) -> str:
    """A number as findings' messages write it: four significant digits."""
    return f"{x:.4g}"


@dataclass(frozen=True)
class Above:
    """A lower bound a parameter's math needs beyond the config's generic range rules,
    declared on the Params field: `min_ratio: Annotated[float, Above(1, True, "...")]`.
    The config check enforces it (the error says `why`) and the JSON Schema carries it;
    every other reader of the type hints sees the plain type."""

    minimum: float
    exclusive: bool
    """Whether `minimum` itself is excluded (`> minimum` rather than `>= minimum`)."""
    why: str
    """Why the bound, said in the config error."""


class Detector(Protocol):
    """One pathology finder."""

    name: str
    """Stable id: spikes, divergence, plateau, overfitting, lr_schedule, grad_norm,
    throughput, eval_noise, loss_floor. Each module states it once, as `NAME`, and uses
    that constant in every `Finding` it makes."""
    summary: str
    """One line for `trainspotter detectors`."""
    Params: type[Any]
    """A frozen dataclass of parameters; every field has a documented default."""
    causal_rank: int
    """Order inside one incident when findings start at the same step: lower comes first
    (an LR change, then the loss, then the gradient norm)."""
    whole_run: bool
    """Its findings describe a whole-run property (a plateau, noisy evals), not an
    incident at a step: analysis never links them to other findings."""
    drives_same_step: bool
    """It causes what starts at its own step too, not only what starts later (the LR of
    step k drives step k's update)."""

    def detect(self, run: Run, params: Any) -> list[Finding]:
        """All findings for this run, one per episode, with evidence and fixes."""
        ...
