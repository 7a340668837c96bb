"""The practitioner's audit of ../shared/wild (AUDIT.md) turned into expectations, per class.

AUDIT.md judged every warning and error trainspotter gave on the 52 published logs at commit
490040f: 11 RIGHT, 4 DEBATABLE, 5 WRONG, and 7 misses. Here each verdict is an expectation:
the WRONG findings are gone, the RIGHT ones stay (same detector, same metric, overlapping
steps), the misses that AUDIT §4 calls clear are found, and the message defects it lists do
not come back. The expectations name a class of mistake (issue 10), not a tuned number: a
case fails when the class returns, whatever threshold moved.

A case still open in the detector work is marked `xfail(strict=True)`: it must fail today, and
the change that fixes its class removes the mark (strict, so a fixed case cannot hide).

Skipped when ../shared/wild is absent (it is not part of the project).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from trainspotter.analysis import Analysis, analyze
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log

WILD = Path(__file__).resolve().parents[1].parent / "shared" / "wild"

if not WILD.is_dir():
    pytest.skip("../shared/wild is not present", allow_module_level=True)


def wild(short_id: str) -> Path:
    """`hf/007` -> the wild file with that folder and number."""
    folder, number = short_id.split("/")
    (found,) = (WILD / folder).glob(f"{number}__*")
    return found


@cache
def analysis_of(short_id: str) -> Analysis:
    return analyze(read_log(wild(short_id)))


def alarms(short_id: str) -> list[Finding]:
    """The warnings and errors a user would be shown for one wild log."""
    return [f for f in analysis_of(short_id).findings if f.severity >= Severity.WARNING]


@dataclass(frozen=True)
class Expect:
    """One audited finding or miss. `metric` is a regex over the finding's metric name."""

    audit: str  # AUDIT.md's reference: "#5", "miss keras/002"
    log: str
    detector: str | tuple[str, ...]
    metric: str
    steps: tuple[int, int] | None = None  # the audited range; a kept finding must overlap it
    open_in: str | None = None  # why it still fails today (strict xfail), or None

    def matches(self, finding: Finding) -> bool:
        detectors = (self.detector,) if isinstance(self.detector, str) else self.detector
        if finding.detector not in detectors or not re.fullmatch(self.metric, finding.metric):
            return False
        if self.steps is None:
            return True
        lo, hi = self.steps
        return finding.step_start <= hi and finding.step_end >= lo

    def param(self) -> object:
        marks = [pytest.mark.xfail(strict=True, reason=self.open_in)] if self.open_in else []
        return pytest.param(self, id=f"{self.audit} {self.log}", marks=marks)


RIGHT = [
    Expect("#1", "csv/004", "plateau", r"train/loss", (12, 30)),
    Expect("#2", "hf/002", "divergence", r"train/loss", (425, 1100)),
    Expect("#3", "hf/005", "overfitting", r"eval/loss", (1000, 5000)),
    Expect("#6", "hf/014", "lr_schedule", r"lr", (10, 420)),
    Expect("#8", "hf/023", "overfitting", r"eval/loss", (3105, 10350)),
    Expect("#10", "jsonl/001", "overfitting", r"eval/loss", (300, 1200)),
    Expect("#12", "lightning/001", "plateau", r"train/loss", (0, 24)),
    Expect("#13", "lightning/005", "plateau", r"train/loss", (49, 1399)),
    Expect("#14", "lightning/006", "divergence", r"train_gen_loss", (0, 319)),
    Expect("#15", "lightning/007", "divergence", r"initial_omega_loss(_step|_epoch)?", (99, 6299)),
    Expect("#20", "lightning/010", "eval_noise", r"val_f1_score(_epoch)?", (155, 299)),
]

WRONG = [
    Expect("#5", "hf/006", "grad_norm", r"grad_norm"),
    Expect("#7", "hf/018", "eval_noise", r"eval/loss"),
    Expect("#17", "lightning/009", "plateau", r"mse_loss"),
    Expect("#18", "lightning/010", "eval_noise", r"val_f1_score_step"),
    Expect("#19", "lightning/010", "eval_noise", r"val_loss_step"),
]

MISSES = [
    Expect(
        "miss keras/002 (frozen loss)",
        "keras/002",
        "plateau",
        r"train/loss|eval/loss",
    ),
    Expect(
        "miss keras/008 (3-eval overfitting)",
        "keras/008",
        "overfitting",
        r"eval/loss",
    ),
    Expect(
        "miss hf/002 (eval loss doubled)",
        "hf/002",
        ("overfitting", "divergence"),
        r"eval/loss",
    ),
    Expect(
        "miss csv/004 (constant val_acc)",
        "csv/004",
        "plateau",
        r"val_acc|eval/acc(uracy)?",
    ),
]


@pytest.mark.parametrize("expect", [e.param() for e in RIGHT])
def test_right_findings_stay(expect: Expect) -> None:
    found = [f for f in alarms(expect.log) if expect.matches(f)]
    assert found, f"{expect.audit}: the RIGHT {expect.detector} finding on {expect.log} is gone"


@pytest.mark.parametrize("expect", [e.param() for e in WRONG])
def test_wrong_findings_are_gone(expect: Expect) -> None:
    found = [f"{f.detector} {f.metric} {f.title}" for f in alarms(expect.log) if expect.matches(f)]
    assert not found, f"{expect.audit}: the WRONG finding on {expect.log} is back: {found}"


@pytest.mark.parametrize("expect", [e.param() for e in MISSES])
def test_misses_are_found(expect: Expect) -> None:
    found = [f for f in alarms(expect.log) if expect.matches(f)]
    assert found, f"{expect.audit}: still missed"


def test_not_learning_needs_the_absence_of_a_falling_trend() -> None:
    """#4 (DEBATABLE): hf/006 falls 3.26 -> ~3.0 with Kendall tau -0.71; not 'not learning'."""
    said = [f.title for f in alarms("hf/006") if "not learning" in f.title]
    assert not said


def test_one_finding_per_quantity() -> None:
    """#16: initial_omega_loss and its `_epoch` twin are one quantity: one finding."""
    twins = [f.metric for f in alarms("lightning/007") if f.metric.startswith("initial_omega_loss")]
    assert len(twins) == 1, twins


def all_messages(short_id: str) -> list[str]:
    return [text for f in analysis_of(short_id).findings for text in (f.title, f.message, *f.fixes)]


@pytest.mark.parametrize(
    ("log", "pattern", "why"),
    [
        pytest.param(
            "lightning/005",
            r"-\d[\d.]*% lower",
            "a rise called a negative 'lower' (#13)",
            id="sign-and-word",
        ),
        pytest.param(
            "lightning/006",
            r"before step 0",
            "no checkpoint exists before step 0 (#14)",
            id="before-step-0",
        ),
    ],
)
def test_message_defects_do_not_return(log: str, pattern: str, why: str) -> None:
    bad = [text for text in all_messages(log) if re.search(pattern, text)]
    assert not bad, f"{why}: {bad}"


@pytest.mark.parametrize("log", ["hf/002", "jsonl/001"])
def test_info_never_says_nothing_is_wrong_beside_a_warning(log: str) -> None:
    """AUDIT §3: 'Nothing is wrong' info notes in runs the same report warns about."""
    assert alarms(log)
    soothing = [
        text
        for f in analysis_of(log).findings
        if f.severity == Severity.INFO
        for text in (f.title, f.message, *f.fixes)
        if re.search(r"nothing is wrong", text, re.I)
    ]
    assert not soothing


def test_could_have_stopped_names_the_best_evaluation() -> None:
    """jsonl/001: eval loss was best at iter 300 (AUDIT §3), so 'stopped near' says 300."""
    texts = [t for t in all_messages("jsonl/001") if "could have stopped" in t]
    assert texts and all(re.search(r"stopped near step 300\b", t) for t in texts), texts


def test_recovery_claim_says_what_the_eval_loss_did() -> None:
    """#2: hf/002's train loss came back, but eval/loss stayed ~2x its best (0.22 -> 0.44)."""
    for f in alarms("hf/002"):
        text = f"{f.title} {f.message}"
        if f.detector == "divergence" and "recovered" in text:
            assert "eval/loss" in text, text
