"""Run one untrusted program (model-generated code) in a fresh, isolated, bounded process.

`run_program(source, limits)` runs `source` with a Python interpreter inside bubblewrap (`bwrap`): every
namespace unshared (no network, own PID space, no view of the host's files beyond read-only system
directories), a size-capped private tmpfs as the only writable place, rlimits on CPU, address space,
file size, processes and open files, a wall-clock timeout that kills the whole sandbox. Where bwrap
is missing or cannot start, it falls back to rlimits and an unshared network namespace, with a
warning. What each mode isolates: docs/sandbox.md.
"""

from __future__ import annotations

from reasoneval.scoring.programs.sandbox.run import SANDBOX_VERSION, Limits, ProgramResult, Sandbox, SandboxPool, get_sandbox, run_program

# The trusted test driver's text (driver.py with the shared prelude), run inside the sandbox with `python -I -c`.
from reasoneval.scoring.programs.sandbox.texts import DRIVER_SOURCE

__all__ = ["DRIVER_SOURCE", "SANDBOX_VERSION", "Limits", "ProgramResult", "Sandbox", "SandboxPool", "get_sandbox", "run_program"]
