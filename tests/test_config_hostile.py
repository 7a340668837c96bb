"""D6 (ADVERSARIAL.md): odd or hostile YAML is the one-line `FILE:LINE: problem` error,
exit 2, never an internal error. Each case is the adversarial run's reproducer."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainspotter.cli import main

CASES = [
    (
        "detectors:\n  spikes: &b {z_threshold: 5}\n  plateau: {<<: *b}\n",
        "m.yml:3: merge keys (<<) are not supported",
    ),
    ("fail_on: !foo error\n", "t.yml:1: tag '!foo' is not allowed"),
    ("fail_on: !!python/name:os.system error\n", "t.yml:1: tag 'tag:yaml.org,2002:python/"),
    ("paths: " + "[" * 1000 + "]" * 1000 + "\n", "n.yml:1: nested more than 32 levels deep"),
    (
        "report:\n" + "\n".join(" " * (i + 1) + f"k{i}:" for i in range(3000)) + " 1\n",
        "b.yml:33: nested more than 32 levels deep",
    ),
    (
        "detectors: {spikes: {min_window: " + "9" * 400 + "}}\n",
        "i.yml:1: detectors.spikes.min_window: integer out of range",
    ),
    (
        "ignore:\n  - {detector: spikes, reason: r, steps: [1, " + "9" * 30 + "]}\n",
        "i.yml:2: ignore[0].steps: integer out of range",
    ),
    ("fail_on: error\x00\n", "z.yml: invalid YAML: character U+0000 is not allowed"),
    ('report: {artifact_name: "a\\nb"}\n', "a.yml:1: report.artifact_name: characters not"),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[1][:20] for c in CASES])
def test_hostile_yaml_is_a_one_line_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    name = expected.split(":")[0]
    Path(name).write_text(text, encoding="utf-8")
    assert main(["check-config", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trainspotter: error: {expected}"), err
    assert err.count("\n") == 1, err
