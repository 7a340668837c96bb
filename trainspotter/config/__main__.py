"""`python -m trainspotter.config --write` regenerates the shipped JSON Schema and the
`.trainspotter.yml` reference in docs/configuration.md; without `--write` it prints the
schema."""

from __future__ import annotations

import sys
from pathlib import Path

from trainspotter.config.reference import (
    REFERENCE_FILE,
    reference_markdown,
    replace_readme_reference,
)
from trainspotter.config.schema import SCHEMA_PATH, schema_text


def write_generated(repo: Path) -> None:
    """Regenerate the shipped schema and docs/configuration.md of the checkout `repo`."""
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    readme = repo / REFERENCE_FILE
    text = readme.read_text(encoding="utf-8")
    readme.write_text(replace_readme_reference(text, reference_markdown()), encoding="utf-8")


if sys.argv[1:] == ["--write"]:
    write_generated(Path(__file__).resolve().parents[2])
else:
    sys.stdout.write(schema_text())
