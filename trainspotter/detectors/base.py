"""The base every detector subclasses, and the small types its declaration uses.

A detector is a class with a stable `name` (its id), a one-line `summary`, a parameters
dataclass `Params` whose defaults are documented in the detector's docstring, and
`detect(run, params) -> list[Finding]`. Detectors read only the `Run`: they know nothing
of files, formats or reports. Below its minimum sample size a detector abstains (returns
no finding) rather than guess.

A detector also says how analysis links its findings into incidents (`causal_rank`,
`whole_run`, `drives_same_step`), so the core never names a detector: adding one is its
module and one registry line. All of that is declared once, as keywords on the class
statement (`class SpikesDetector(Detector, name=NAME, params=SpikesParams, causal_rank=3,
reads=..., summary=...)`), where mypy checks each against `Detector.__init_subclass__`;
what a detector does not say takes the usual default.

A detector also says, cheaply and before it runs, what it would examine
(`scope(run, params) -> Scope | Abstain`): the metrics it reads, or why it has nothing to
look at ("no step time or throughput metric"). Analysis records that per log
(`Analysis.checks`) so every report can say what was checked, and a log with nothing to
check never reads as healthy. Where that is a filter on metric names, `reads=Reads(...)`
says it; a detector whose scope needs more overrides `scope`. One that says neither is run
and listed as having run on the metrics it did not declare.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class Reads:
    """The metrics a detector reads, as a filter on the run's canonical metric names, and
    what it says when a run has none of them."""

    metric: Callable[[str], bool]
    """True for a metric name the detector reads (e.g. `names.is_loss_like`)."""
    missing: str
    """Why the detector abstains on a run with no such metric ("no loss metric")."""

    def scope(self, run: Run) -> Scope | Abstain:
        """The matching metrics of `run`, or `Abstain(missing)` when there are none."""
        return scope_or_abstain(filter(self.metric, run.metrics), self.missing)


class Detector(ABC):
    """One pathology finder. A subclass declares its facts as class keywords (`name`,
    `params`, `causal_rank`, `summary`; `whole_run`, `drives_same_step`, `needs_baseline`
    and `reads` when they apply) and implements `detect`."""

    name: str
    """Stable id: spikes, divergence, plateau, overfitting, lr_schedule, grad_norm,
    throughput, eval_noise, loss_floor, regression. Each module states it once, as `NAME`,
    and uses that constant in every `Finding` it makes."""
    summary: str
    """One line for `trainspotter detectors`."""
    Params: type[Any]
    """A frozen dataclass of parameters; every field has a documented default (the
    `params` keyword)."""
    causal_rank: int
    """Order inside one incident when findings start at the same step: lower comes first
    (an LR change, then the loss, then the gradient norm)."""
    whole_run: bool
    """Its findings describe a whole-run property (a plateau, noisy evals), not an
    incident at a step: analysis never links them to other findings. Default False."""
    drives_same_step: bool
    """It causes what starts at its own step too, not only what starts later (the LR of
    step k drives step k's update). Default False."""
    needs_baseline: bool
    """It compares two runs: analysis does not run it on one, `trainspotter.compare` does.
    Default False."""
    reads: Reads | None
    """The metric-name filter `scope` applies; None where `scope` is overridden or the
    detector does not say."""

    def __init_subclass__(
        cls,
        *,
        name: str,
        params: type[Any],
        causal_rank: int,
        summary: str,
        whole_run: bool = False,
        drives_same_step: bool = False,
        needs_baseline: bool = False,
        reads: Reads | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = name
        cls.Params = params
        cls.causal_rank = causal_rank
        cls.summary = summary
        cls.whole_run = whole_run
        cls.drives_same_step = drives_same_step
        cls.needs_baseline = needs_baseline
        cls.reads = reads

    def scope(self, run: Run, params: Any) -> Scope | Abstain:
        """The metrics `detect` reads, or why there are none (cheap: names only). Without
        `reads`, a Scope that names no metric: it runs on whatever it reads."""
        return Scope(metrics=()) if self.reads is None else self.reads.scope(run)

    @abstractmethod
    def detect(self, run: Run, params: Any) -> list[Finding]:
        """All findings for this run, one per episode, with evidence and fixes."""
