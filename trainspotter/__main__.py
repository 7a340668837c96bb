"""`python -m trainspotter` is the `trainspotter` command."""

import sys

from trainspotter.cli import main

sys.exit(main())
