"""`python -m reasoneval` is the `reasoneval` command (guarded: spawned worker processes import this module)."""

import sys

from reasoneval.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
