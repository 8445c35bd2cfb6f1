"""`python -m reasoneval` is the `reasoneval` command."""

import sys

from .cli import main

sys.exit(main())
