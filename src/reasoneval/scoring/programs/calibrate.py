"""The machine's speed for contest time limits: a fixed reference workload, measured once per run.

Contest limits are CPU time, not wall time, so a loaded machine does not turn correct programs into timeouts (a
process's CPU time does not grow while it waits for a core). A slower or faster CPU still changes CPU time: the
limit is multiplied by `factor` = the workload's CPU time here / its CPU time on the reference machine
(REFERENCE_CPU_S). The workload is pure Python (loops, integer arithmetic, a dict, a list sort: what contest
programs spend their time on), run in a fresh interpreter three times; the least CPU time counts. The result is
kept in the run directory (`calibration.json`) so that a re-scoring uses the factor the run was scored with, and
copied into config.json's scoring record (docs/contests.md).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from reasoneval.atomic import atomic_open
from reasoneval.run_files import CALIBRATION_FILE
from reasoneval.serial import JsonRecord

# the workload's CPU time on the reference machine (the machine the default limits were chosen on: this
# project's CI machine, CPython 3.11)
REFERENCE_CPU_S = 0.27
FACTOR_RANGE = (0.25, 10.0)
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


@dataclass(frozen=True)
class Calibration(JsonRecord):
    factor: float
    cpu_s: float
    reference_cpu_s: float
    python: str
    machine: str
    measured_at: str


def measure_workload(runs: int = 3) -> float:
    """The least CPU time (user + system) of the workload over `runs` fresh interpreters."""
    best = float("inf")
    for _ in range(runs):
        proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", WORKLOAD], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        best = min(best, usage.ru_utime + usage.ru_stime)
    return best


def calibrate() -> Calibration:
    cpu = measure_workload()
    lo, hi = FACTOR_RANGE
    factor = round(min(hi, max(lo, cpu / REFERENCE_CPU_S)), 3)
    return Calibration(factor=factor, cpu_s=round(cpu, 4), reference_cpu_s=REFERENCE_CPU_S,
                       python=platform.python_version(), machine=platform.machine(),
                       measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def machine_calibration(run_dir: Path | None) -> Calibration:
    """The run's calibration: read from the run directory when it was measured before, else measured now (and
    written there)."""
    path = run_dir / CALIBRATION_FILE if run_dir is not None else None
    if path is not None and path.is_file():
        try:
            return Calibration.from_json_dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            pass
    cal = calibrate()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path) as f:
            f.write(json.dumps(cal.to_json_dict()) + "\n")
    return cal
