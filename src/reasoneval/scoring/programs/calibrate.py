"""The machine's speed for contest time limits: a fixed reference workload, timed on the interpreter that runs the
programs, once per machine and interpreter.

Contest limits are CPU time, not wall time, so a loaded machine does not turn correct programs into timeouts (a
process's CPU time does not grow while it waits for a core). A slower or faster CPU, or a slower or faster Python,
still changes CPU time: the limit is multiplied by `factor` = the workload's CPU time here / its CPU time on the
reference machine (REFERENCE_CPU_S). The workload is pure Python (loops, integer arithmetic, a dict, a list sort:
what contest programs spend their time on), run by the sandbox's interpreter with the sandbox's flags (`python -I`,
its environment), and timed inside that process as a test's process is (its own CPU clock, the interpreter's start
not counted). It runs REPEATS times in fresh processes, SPACING_S apart; the least CPU time counts (load only ever
adds to it).

The factor is kept per machine and interpreter (the CPU's model, the architecture, the interpreter's path, size and
time of change, the workload) in a cache file, as the local engine keeps its kernel choice
(engines/local/kernels.py): `$REASONEVAL_CALIBRATION_CACHE`, else `$XDG_CACHE_HOME/reasoneval/calibration.json`,
else `~/.cache/reasoneval/calibration.json`. Every later run on the machine uses the same factor, whatever the load
when it starts; deleting the entry measures again. A run keeps the factor it used in its run directory
(`calibration.json`, which a re-scoring reads) and in config.json's `calibration`, with its `source` (measured now,
or the cache file it came from) (docs/contests.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from reasoneval.atomic import atomic_open, atomic_write_text
from reasoneval.errors import UserError
from reasoneval.machine import cpu_model, user_cache_file
from reasoneval.run_files import CALIBRATION_FILE
from reasoneval.scoring.base import ScoringContext
from reasoneval.serial import JsonRecord

CACHE_ENV = "REASONEVAL_CALIBRATION_CACHE"
# The workload's CPU time on the reference machine (the machine the default limits were chosen on: this project's CI
# machine, CPython 3.11). Measured there as the whole interpreter's CPU time (0.27 s, start included); the workload
# alone is timed now, which on this project's machines is 0.93 of that (bench/calibration_spread.py prints both).
REFERENCE_CPU_S = 0.251
FACTOR_RANGE = (0.25, 10.0)
REPEATS = 5
SPACING_S = 0.2
FLAGS = ("-I",)  # the sandbox's: Sandbox.command runs `python -I`
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
WORKLOAD = """
d = {}
s = 0
for i in range(1200000):
    s = (s * 31 + i) % 1000003
    d[i % 5003] = s
xs = sorted(d.values())
t = 0
for x in xs * 60:
    t ^= x
"""
# the workload timed inside its process (module level, as a stdin program runs), on the process's CPU clock
TIMED = ("import sys, time\nc0 = time.process_time()\n" + WORKLOAD +
         "\nprint(repr(time.process_time() - c0), sys.version.split()[0])\n")


@dataclass(frozen=True)
class Calibration(JsonRecord):
    factor: float
    cpu_s: float
    reference_cpu_s: float
    python: str  # the interpreter's version
    machine: str
    measured_at: str
    interpreter: str = ""  # the interpreter timed (the sandbox's), as run: path and flags
    source: str = ""  # "measured" (now), or "cache FILE" (measured before on this machine and interpreter)
    repeats: int = 0


def programs_python() -> str:
    """The interpreter that runs the contest programs: the sandbox's ($REASONEVAL_SANDBOX's mode, as the scorer's
    pool picks it)."""
    from reasoneval.scoring.programs.sandbox.run import get_sandbox

    return get_sandbox(os.environ.get("REASONEVAL_SANDBOX", "auto").strip() or "auto").python


def cache_path() -> Path:
    return user_cache_file(CACHE_ENV, CALIBRATION_FILE)


def _cpu_model() -> str:
    return cpu_model() or platform.processor() or "unknown CPU"


def machine_key(python: str) -> str:
    """What the factor depends on: the CPU, the architecture, the interpreter (its file: a rebuilt or upgraded one
    is another key), its flags, the workload and the reference."""
    real = os.path.realpath(python)
    try:
        st = os.stat(real)
        ident = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        ident = real
    parts = [platform.machine(), _cpu_model(), str(os.cpu_count()), ident, " ".join(FLAGS), WORKLOAD,
             str(REFERENCE_CPU_S)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def time_workload(python: str) -> tuple[float, str]:
    """The workload's CPU time in one fresh process of `python` (with the sandbox's flags), and its version."""
    try:
        proc = subprocess.run([python, *FLAGS, "-c", TIMED], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, env=ENV, timeout=120, check=False)
        cpu, version = proc.stdout.split()
        return float(cpu), version
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        raise UserError(f"calibration: could not run the reference workload with {python} ({e}); "
                        "set the contest scorer's calibrate=false to use unscaled limits") from None


def measure_workload(python: str, repeats: int | None = None, spacing_s: float | None = None) -> tuple[float, str]:
    """The least CPU time of the workload over `repeats` fresh processes `spacing_s` apart (a burst of load on the
    machine passes between them; default REPEATS and SPACING_S), and the interpreter's version."""
    repeats = REPEATS if repeats is None else repeats
    spacing_s = SPACING_S if spacing_s is None else spacing_s
    best, version = float("inf"), ""
    for i in range(repeats):
        if i:
            time.sleep(spacing_s)
        cpu, version = time_workload(python)
        best = min(best, cpu)
    return best, version


def calibrate(python: str, repeats: int | None = None) -> Calibration:
    repeats = REPEATS if repeats is None else repeats
    cpu, version = measure_workload(python, repeats)
    lo, hi = FACTOR_RANGE
    factor = round(min(hi, max(lo, cpu / REFERENCE_CPU_S)), 3)
    return Calibration(factor=factor, cpu_s=round(cpu, 4), reference_cpu_s=REFERENCE_CPU_S, python=version,
                       machine=platform.machine(), measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       interpreter=" ".join([os.path.realpath(python), *FLAGS]), source="measured", repeats=repeats)


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_calibration(python: str, path: Path | None = None) -> Calibration | None:
    """This machine's and interpreter's cached calibration, or None."""
    path = path or cache_path()
    entry = _read_json(path).get(machine_key(python))
    if not isinstance(entry, dict):
        return None
    try:
        cal = Calibration.from_json_dict(entry)
    except (ValueError, TypeError, UserError):
        return None
    return Calibration(**{**cal.to_json_dict(), "source": f"cache {path}"})


def remember(cal: Calibration, python: str, path: Path | None = None) -> None:
    """Keep `cal` for this machine and interpreter (best effort: an unwritable cache only means measuring again)."""
    path = path or cache_path()
    entries = _read_json(path)
    entries[machine_key(python)] = cal.to_json_dict()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(entries, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass


def machine_calibration(run_dir: Path | None, python: str | None = None) -> Calibration:
    """The run's calibration: the one in the run directory when the run has one (a re-scoring uses the factor the
    run was scored with), else this machine's and interpreter's cached one, else measured now and cached; written
    to the run directory. `python`: the programs' interpreter (default: the sandbox's)."""
    path = run_dir / CALIBRATION_FILE if run_dir is not None else None
    if path is not None and path.is_file():
        try:
            return Calibration.from_json_dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError, UserError):
            pass
    python = python or programs_python()
    cal = cached_calibration(python)
    if cal is None:
        cal = calibrate(python)
        remember(cal, python)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path) as f:
            f.write(json.dumps(cal.to_json_dict()) + "\n")
    return cal


def time_limit_factor(context: ScoringContext, calibrate: bool) -> float:
    """What a scorer multiplies a problem's time limit by: the run's calibration factor (machine_calibration, read or
    measured once per scoring context), or 1.0 when the scorer is not calibrated."""
    if not calibrate:
        return 1.0
    cal = context.resource("machine_calibration", lambda: machine_calibration(context.cache_dir))
    return float(cal.factor)
