"""What every report format shares: counting, ordering, paths, fingerprints, detector docs.

Formats differ in layout and escaping only; the facts they show come from here, so the
HTML page, the Markdown summary, the annotations, SARIF, Code Quality and JUnit count the
same findings, in the same order, at the same paths. This module returns plain data and
never escapes: each format escapes for its own sink (see `escape.py`).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from trainspotter.analysis import RAN, Analysis
from trainspotter.detectors import DETECTORS
from trainspotter.model import Finding, Run, Severity
from trainspotter.names import is_loss_like
from trainspotter.paths import shown_path
from trainspotter.report import wording

SEVERITIES_WORST_FIRST: tuple[Severity, ...] = tuple(sorted(Severity, reverse=True))
"""error, warning, info: the order every report lists severities in."""


def active_findings(analysis: Analysis) -> list[Finding]:
    """Findings not suppressed by config, in report order (errors first)."""
    return [f for f in analysis.findings if f.suppressed is None]


def charted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The findings a chart marks (HTML bands, the Markdown chart's red line):
    unsuppressed warnings and errors. Info notes are listed, never drawn: a healthy
    run's chart must not look flagged."""
    return [f for f in findings if f.suppressed is None and f.severity >= Severity.WARNING]


def total_counts(analyses: Iterable[Analysis]) -> dict[Severity, int]:
    """Unsuppressed findings per severity over all logs, worst severity first."""
    totals = dict.fromkeys(SEVERITIES_WORST_FIRST, 0)
    for analysis in analyses:
        for finding in active_findings(analysis):
            totals[finding.severity] += 1
    return totals


def plural(count: int, noun: str) -> str:
    """`1 error`, `2 errors`, `0 info` (info is a mass noun): `wording.count`."""
    return wording.count(count, noun)


def counts_phrase(counts: dict[Severity, int]) -> str:
    """`2 errors, 1 warning, 0 info`."""
    return wording.counts_phrase({s.label: n for s, n in counts.items()}, keep_zeros=True)


def step_range(finding: Finding) -> str:
    """`step 1200` or `steps 1200-1450` (`wording.step_span`)."""
    return wording.step_span(finding.step_start, finding.step_end)


def steps_logged(run: Run) -> str:
    """The run's length for a report header: "1000 steps" (its last logged step)."""
    span = run.step_span()
    return f"{span[1]} steps" if span else "no steps"


def chain_findings(analysis: Analysis) -> list[list[Finding]]:
    """Each linked incident as findings in causal order, root cause first."""
    return [[analysis.by_id(i) for i in chain] for chain in analysis.chains]


def chain_path(chain: Sequence[Finding]) -> str:
    """An incident as the JSON's `chains` entry lists it, with each detector:
    `F1 lr_schedule \u2192 F2 grad_norm \u2192 F3 divergence` (plain text, not escaped)."""
    return " \u2192 ".join(f"{f.id} {f.detector}" for f in chain)


def chain_link(finding: Finding) -> str:
    """One finding of an incident, in every format's words:
    `F2 divergence, steps 304\u2013399: train/loss became +Inf` (plain text)."""
    return f"{finding.id} {finding.detector}, {step_range(finding)}: {finding.title}"


def findings_root_cause_first(analysis: Analysis) -> list[Finding]:
    """All findings, the root cause of each incident first, then the analysis order.

    A root cause may be a warning whose consequence is an error; a reader should meet the
    cause before the symptoms, so roots are lifted to the top (in chain order)."""
    roots = [chain[0] for chain in chain_findings(analysis)]
    root_ids = {f.id for f in roots}
    return roots + [f for f in analysis.findings if f.id not in root_ids]


def log_file(run: Run) -> str:
    """The file a finding should point at (annotations, SARIF, Code Quality): the path
    the user gave, joined with the file a reader picked inside it when it was a folder
    (`meta["file"]`, e.g. `checkpoint-400/trainer_state.json`)."""
    inner = run.meta.get("file")
    if isinstance(inner, str) and inner and not run.source_path.endswith(inner):
        return f"{run.source_path.rstrip('/')}/{inner}"
    return run.source_path


def path_uri(path: str) -> str:
    """A URI reference for a log path (SARIF `artifactLocation.uri`): relative paths
    percent-encoded with `/` kept, absolute ones as `file://` URIs."""
    shown = shown_path(path)
    if PurePosixPath(shown).is_absolute() or Path(shown).is_absolute():
        return Path(shown).resolve().as_uri()
    return quote(shown, safe="/")


def finding_fingerprint(finding: Finding, path: str) -> str:
    """A stable id for one finding across runs of the tool: the SHA-256 of detector,
    metric, log path and start step. It ignores wording, severity and the end step, so
    a reworded message or a longer episode is the same issue to CI dashboards."""
    key = "\0".join((finding.detector, finding.metric, shown_path(path), str(finding.step_start)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class DetectorDoc:
    """A detector's documentation, for SARIF rules and JUnit test cases."""

    id: str
    summary: str
    """One line (the detector's `summary`)."""
    description: str
    """The docstring's first paragraph, joined into one line."""
    full: str
    """The whole docstring."""


def log_label(run: Run) -> str:
    """How a report names one log: its display path, plus `(run NAME)` when the file holds
    several runs (a multi-run W&B export), so each run's section says which it is."""
    path = shown_path(run.source_path)
    run_name = run.meta.get("run_name")
    if run.meta.get("other_runs") and isinstance(run_name, str) and run_name:
        return f"{path} (run {run_name})"
    return path


def detector_doc(detector_id: str) -> DetectorDoc:
    """The documentation of a registered detector; an unregistered id (a finding made by
    a plug-in or a test) gets a placeholder naming it."""
    detector = DETECTORS.get(detector_id)
    if detector is None:
        text = f"Findings of the {detector_id} detector."
        return DetectorDoc(detector_id, text, text, text)
    module = sys.modules.get(type(detector).__module__)
    doc = inspect.getdoc(type(detector)) or (inspect.getdoc(module) if module else None) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split()) if doc else detector.summary
    return DetectorDoc(detector_id, detector.summary, first, doc or detector.summary)


def detector_ids(analyses: Sequence[Analysis]) -> list[str]:
    """Every registered detector id, then any other id that ran or found something."""
    ids = list(DETECTORS)
    for analysis in analyses:
        for name in [*analysis.detectors_run, *(f.detector for f in analysis.findings)]:
            if name not in ids:
                ids.append(name)
    return ids


CHECK_METRICS_SHOWN = 4
"""Metrics named per detector in a text report's checks line; the JSON has them all."""


def metric_list(metrics: Sequence[str], limit: int = CHECK_METRICS_SHOWN) -> str:
    """`a, b, c` or `a, b, c, d and 3 more`."""
    shown = ", ".join(metrics[:limit])
    return shown + (f" and {len(metrics) - limit} more" if len(metrics) > limit else "")


def checks_ran(analysis: Analysis) -> list[str]:
    """`spikes (train/loss, eval/loss)` per detector that ran (plain text, not escaped)."""
    return [
        f"{c.detector} ({metric_list(c.metrics)})" if c.metrics else c.detector
        for c in analysis.checks
        if c.status == RAN
    ]


def checks_not_run(analysis: Analysis) -> list[str]:
    """`throughput: no step time or throughput metric` per detector that abstained or
    was disabled (plain text, not escaped)."""
    return [f"{c.detector}: {c.reason}" for c in analysis.checks if c.status != RAN]


def not_a_health_verdict(analysis: Analysis) -> str | None:
    """Why a log without warnings must not be called healthy (every detector abstained,
    or none examined a loss), or None. A detector that did not declare its metrics
    counts as having examined a loss: it cannot be told apart."""
    if not analysis.checks:
        return None if analysis.detectors_run else "no detector ran"
    ran = [c for c in analysis.checks if c.status == RAN]
    if not ran:
        return "no detector had a metric to examine"
    if all(c.metrics for c in ran) and not any(is_loss_like(m) for c in ran for m in c.metrics):
        return "no loss metric was examined"
    return None


def not_checked_reason(analysis: Analysis) -> str | None:
    """Why a log is "not checked" rather than "passed" in the HTML and Markdown reports:
    it has no finding and `not_a_health_verdict` says why it cannot be called healthy.
    None for a log with a finding, or one that was checked."""
    return not_a_health_verdict(analysis) if analysis.worst is None else None
