"""The exit rule every front end uses (`analyze`, `gate`, `watch`, the container's Action).

2 when a log could not be checked (unreadable, a pattern that found nothing, a watched log
that never became readable): the tool could not do all it was asked, and that wins over a
failed gate, like a compiler that reports every file before failing. Else 1 when an
unsuppressed finding is at or above `fail_on` (from `--fail-on`, else the config's
`fail_on`, else error). Else 0.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainspotter.analysis import Analysis
from trainspotter.errors import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK
from trainspotter.model import Severity


def worst_of(analyses: Iterable[Analysis]) -> Severity | None:
    """The highest unsuppressed severity over the analyses; None when nothing was found."""
    worst = [a.worst for a in analyses if a.worst is not None]
    return max(worst) if worst else None


def exit_code(analyses: Iterable[Analysis], fail_on: Severity, *, unchecked: int = 0) -> int:
    """2 when `unchecked` logs could not be checked, else 1 when an unsuppressed finding
    is at or above `fail_on`, else 0 (see the module docstring)."""
    if unchecked:
        return EXIT_BAD_INPUT
    worst = worst_of(analyses)
    return EXIT_GATE_FAILED if worst is not None and worst >= fail_on else EXIT_OK


__all__ = ["exit_code", "worst_of"]
