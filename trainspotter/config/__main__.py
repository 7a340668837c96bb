"""`python -m trainspotter.config --write` regenerates the shipped JSON Schema and the
`.trainspotter.yml` reference in docs/configuration.md; without `--write` it prints the
schema."""

from __future__ import annotations

import sys
from pathlib import Path

from trainspotter.config.generated import schema_text, write_generated

if sys.argv[1:] == ["--write"]:
    write_generated(Path(__file__).resolve().parents[2])
else:
    sys.stdout.write(schema_text())
