"""D4 (ADVERSARIAL.md): a lone surrogate spelled in a JSON key (`"\\ud800"`) reaches no
output as an unencodable character: every report format is written, exit 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainspotter.cli import main

LOGS = {
    "a.jsonl": '{"step": 1, "\\ud800": 1.0, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n',
    "trainer_state.json": '{"log_history": [{"step": 1, "\\udfff_x": 1.0, "loss": 2}],'
    ' "global_step": 1}',
}


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize(
    "output", ["terminal", "json", "html", "markdown", "github", "sarif", "codequality", "junit"]
)
def test_lone_surrogate_key_in_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, output: str
) -> None:
    log = tmp_path / name
    log.write_text(LOGS[name], encoding="utf-8")
    out = tmp_path / f"report.{output}"
    assert main(["analyze", str(log), "--verbose", "--output", output, "--out", str(out)]) == 0
    assert "internal error" not in capsys.readouterr().err
    out.read_bytes().decode("utf-8")  # strict UTF-8
