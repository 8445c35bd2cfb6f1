"""The real benchmark files, for the tests that need them: `$REASONEVAL_DATA_DIR` as the session started with it.

The README's test command passes with or without the data folder: a test that reads real benchmark data is
marked `@pytest.mark.real_data("mbpp.jsonl", ...)` (the files it reads) and gets the folder from the
`real_data_dir` fixture. Without the variable, or without one of the named files, tests/conftest.py skips the test
at collection with the reason. Every other test runs with REASONEVAL_DATA_DIR removed from its environment (so a
test that needs the data but is not marked fails with the data folder as it would without it: CI, which has the
folder, catches it), and the fixture refuses a test that is not marked. tests/test_real_data.py checks that no
test reads the variable or a datasets path any other way.
"""

from __future__ import annotations

import os
from pathlib import Path

MARKER = "real_data"
ENV = "REASONEVAL_DATA_DIR"

# Read once, at import (before any test's fixtures remove the variable).
_env = os.environ.get(ENV, "").strip()
DATA_DIR: Path | None = Path(_env).resolve() if _env else None


def missing(files: tuple[str, ...]) -> str | None:
    """Why a test that reads `files` cannot run here, or None when it can."""
    if DATA_DIR is None:
        names = f" ({', '.join(files)})" if files else ""
        return f"needs real benchmark data{names}: set {ENV} to a folder of <task>.jsonl files"
    absent = [f for f in files if not (DATA_DIR / f).is_file()]
    if absent:
        return f"{ENV}={DATA_DIR} has no {', '.join(absent)}"
    return None
