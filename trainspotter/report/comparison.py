"""How a comparison reads in each report: one table model, written per sink.

`comparison_rows` is the table every text format shows (metric, what was compared, the
candidate's and the baseline's values, how much worse, the tolerance, the verdict);
`terminal_lines`, `markdown_block` and `comparison_dict` (JSON) write it; the HTML page's
section, with both curves overlaid, is `comparison_html.py`. Each takes the sink's escaping
function, so log-derived names (metrics, paths) are escaped exactly as the rest of that
report. The report modules call these with one line each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainspotter.compare.model import ComparedValue, Comparison, RuleResult
from trainspotter.paths import shown_path
from trainspotter.report.escape import format_number

Escape = Callable[[str], str]

HEADER = ("metric", "compared", "candidate", "baseline", "worse by", "tolerance", "verdict")


def _at(value: float, step: int | None) -> str:
    return format_number(value) + (f" (step {step:,})" if step is not None else "")


def _amount(value: ComparedValue, amount: float) -> str:
    if value.quantity in ("median", "curve"):
        return f"{amount:+.0%}"
    return format_number(amount)


def value_row(value: ComparedValue) -> tuple[str, ...]:
    """One compared value as table cells (plain text, numbers formatted)."""
    return (
        value.metric,
        value.quantity,
        _at(value.candidate, value.candidate_step),
        _at(value.baseline, value.baseline_step),
        _amount(value, value.worse_by),
        _amount(value, value.tolerance),
        "REGRESSED" if value.regressed else "ok",
    )


def rule_row(rule: RuleResult) -> tuple[str, ...]:
    """One rule as table cells, in the same columns."""
    return (
        rule.metric,
        f"rule {rule.bound} {format_number(rule.limit)}",
        "not logged" if rule.value is None else _at(rule.value, rule.step),
        "",
        "",
        "",
        "ok" if rule.passed else "FAILED",
    )


def comparison_rows(comparison: Comparison) -> list[tuple[str, ...]]:
    """Every compared value, then every rule."""
    return [value_row(v) for v in comparison.values] + [rule_row(r) for r in comparison.rules]


def heading(comparison: Comparison) -> str:
    """One line: against which baseline, aligned how, and the findings only this run has."""
    if comparison.baseline is None:
        return "Checked against the configuration's rules (no baseline)."
    path = shown_path(comparison.baseline.source_path)
    new = ", ".join(comparison.new_detectors) or "none"
    had = ", ".join(comparison.baseline_detectors) or "none"
    return (
        f"Compared with baseline {path} (aligned by {comparison.axis}); findings the "
        f"baseline has: {had}; new in this run: {new}."
    )


def terminal_lines(comparison: Comparison, escape: Escape) -> list[str]:
    """The comparison as aligned text columns."""
    rows = [HEADER, *(tuple(escape(c) for c in row) for row in comparison_rows(comparison))]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [escape(heading(comparison))]
    lines += [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines += [f"  note: {escape(n)}" for n in comparison.notes]
    return lines


def markdown_block(comparison: Comparison, escape: Escape) -> str:
    """A Markdown heading line and table (cells escaped by `escape`)."""
    out = [f"\n**Comparison.** {escape(heading(comparison))}\n"]
    rows = comparison_rows(comparison)
    if rows:
        out.append("| " + " | ".join(HEADER) + " |")
        out.append("|" + "---|" * len(HEADER))
        out += ["| " + " | ".join(escape(c) or " " for c in row) + " |" for row in rows]
    out += [f"\n- {escape(n)}" for n in comparison.notes]
    return "\n".join(out) + "\n"


def comparison_dict(comparison: Comparison, number: Callable[[Any], Any]) -> dict[str, Any]:
    """The JSON report's `comparison` object (`number` makes a value JSON-safe)."""
    baseline = comparison.baseline
    return {
        "baseline": None
        if baseline is None
        else {"source_format": baseline.source_format, "source_path": baseline.source_path},
        "axis": comparison.axis,
        "values": [
            {
                "metric": v.metric,
                "quantity": v.quantity,
                "candidate": number(v.candidate),
                "baseline": number(v.baseline),
                "candidate_step": v.candidate_step,
                "baseline_step": v.baseline_step,
                "worse_by": number(v.worse_by),
                "tolerance": number(v.tolerance),
                "tolerance_basis": v.tolerance_basis,
                "regressed": v.regressed,
            }
            for v in comparison.values
        ],
        "rules": [
            {
                "metric": r.metric,
                "bound": r.bound,
                "limit": number(r.limit),
                "value": None if r.value is None else number(r.value),
                "step": r.step,
                "passed": r.passed,
            }
            for r in comparison.rules
        ],
        "baseline_detectors": list(comparison.baseline_detectors),
        "new_detectors": list(comparison.new_detectors),
        "notes": list(comparison.notes),
    }
