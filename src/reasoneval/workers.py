"""Worker interpreters: what every helper process the harness starts (grading, IFEval checks, the local
engine's workers) needs to import this same reasoneval.

They are fresh interpreters (`python -m ...` / `python -c ...`), never multiprocessing children: nothing of
the harness (threads, locks) is inherited, and a script that calls `reasoneval.evaluate` needs no
`if __name__ == "__main__"` guard (spawn would re-run the caller's script in every child).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])


def worker_env(**overrides: str) -> dict[str, str]:
    """This process's environment with this reasoneval's folder first on PYTHONPATH (it may be running
    uninstalled, from src/), plus `overrides`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.update(overrides)
    return env
