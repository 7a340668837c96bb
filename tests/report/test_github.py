"""GitHub annotations: one escaped command per line, at most 10 per kind, a summary notice."""

from __future__ import annotations

import re

from report_fixtures import analysis_of, divergent_run

from trainspotter.analysis import Analysis
from trainspotter.model import Finding, Severity
from trainspotter.report import REPORTS, RenderOptions
from trainspotter.report.github import render_annotations

COMMAND = re.compile(r"^::(error|warning|notice) file=[^,:]*,title=[^,:]*::[^\r\n]*$")


def test_one_command_per_finding(divergent: Analysis) -> None:
    text = REPORTS["github"].render([divergent], RenderOptions(fail_on=Severity.INFO))
    lines = text.splitlines()
    assert len(lines) == 3 and text.endswith("\n")
    assert all(COMMAND.match(line) for line in lines)
    error = next(line for line in lines if line.startswith("::error"))
    assert error.startswith(
        "::error file=runs/divergent/trainer_state.json,"
        "title=trainspotter divergence%3A train/loss diverged to NaN::"
    )
    assert "%0AFix: Lower the learning rate." in error
    assert any(line.startswith("::notice ") for line in lines)  # info -> notice


def test_hostile_text_cannot_start_a_command(hostile: Analysis) -> None:
    text = render_annotations([hostile], Severity.INFO)
    for line in text.splitlines():
        assert COMMAND.match(line), line
    assert "\x1b" not in text and "\r" not in text
    # the injected newline is encoded, so `::error::pwned` stays inside the message
    assert "a%0A::error::pwned" not in text  # titles are one line: terminal_text drops LF
    assert "::add-mask::" not in "".join(line.split("::", 2)[1] for line in text.splitlines())
    # suppressed findings are not annotated
    assert len(text.splitlines()) == len([f for f in hostile.findings if f.suppressed is None])


def test_at_most_ten_per_kind_then_one_notice() -> None:
    run = divergent_run()
    findings = [
        Finding(
            detector="spikes",
            title=f"spike {i}",
            severity=sev,
            metric="train/loss",
            step_start=i * 10,
            step_end=i * 10,
            message="m",
        )
        for sev, count in ((Severity.ERROR, 25), (Severity.WARNING, 3), (Severity.INFO, 12))
        for i in range(count)
    ]
    text = render_annotations([analysis_of(run, findings)], Severity.INFO)
    lines = text.splitlines()
    kinds = [line.split(" ", 1)[0] for line in lines]
    assert kinds.count("::error") == 10
    assert kinds.count("::warning") == 3
    assert kinds.count("::notice") == 10  # 9 info findings + the summary
    assert lines[-1].startswith(
        "::notice title=trainspotter%3A more findings::15 errors, 3 info more"
    )


def test_empty_when_healthy(healthy: Analysis) -> None:
    assert render_annotations([healthy]) == ""


def test_info_is_annotated_only_when_the_gate_fails_on_info() -> None:
    run = divergent_run()
    note = Finding("plateau", "train/loss converged", Severity.INFO, "train/loss", 5, 9, "m")
    analysis = analysis_of(run, [note])
    assert render_annotations([analysis]) == ""
    assert render_annotations([analysis], Severity.ERROR) == ""
    assert render_annotations([analysis], Severity.INFO).startswith("::notice ")
