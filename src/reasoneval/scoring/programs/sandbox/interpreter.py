"""Which interpreter runs the sandbox's programs, and the installation it needs bound into the sandbox."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from reasoneval.errors import UserError


def _world_traversable(path: str) -> bool:
    """Every directory from / down to `path` is searchable by others (the sandbox user can reach it)."""
    p = Path(path).resolve()
    for d in [p, *p.parents]:
        try:
            if not os.stat(d).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def default_python(as_root: bool) -> str:
    # The harness's own interpreter when the sandbox user can reach it; as root with the interpreter under
    # a private home (/root/.pyenv...), the system's python3. The programs need the standard library only.
    own = os.path.realpath(sys.executable)
    if not as_root or _world_traversable(sys.base_prefix):
        return own
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK) and _world_traversable(os.path.dirname(cand)):
            return os.path.realpath(cand)
    raise UserError("running as root, the sandbox needs a python3 that user nobody can run (e.g. /usr/bin/python3); "
                    "install Debian's python3 or run as a normal user")


def prefix_of(python: str) -> str:
    # .../bin/python3.11 -> ... (the installation's prefix, bound read-only in the sandbox)
    return str(Path(python).resolve().parent.parent)
