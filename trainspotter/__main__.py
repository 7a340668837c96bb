"""`python -m trainspotter` is the `trainspotter` command."""

import sys

from trainspotter.cli import main

# Guarded: Dask's worker processes are spawned, and a spawned child imports the parent's
# main module again (`python -m trainspotter gate --engine dask`).
if __name__ == "__main__":
    sys.exit(main())
