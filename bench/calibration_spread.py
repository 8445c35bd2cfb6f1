"""The contest limits' calibration factor (scoring/programs/calibrate.py) measured quiet and with a busy loop on every
core, in one run: how far load moves it (docs/benchmarks.md, "Calibration").

    PYTHONPATH=src python bench/calibration_spread.py --rounds 3

Each round measures the factor as a first run on a machine does (calibrate.calibrate: REPEATS fresh processes of the
programs' interpreter, SPACING_S apart, the least CPU time), once with nothing of this script's running beside it
and once beside one `while True: pass` process per core, the two interleaved. It prints every factor, the spread
(the largest factor over the smallest, minus one; at most 10% passes), and the factor that a run would use from the
machine's cache, which no load moves. The whole interpreter's CPU time (start included: the measure before
issue 48) is printed beside it too, for the reference's conversion (calibrate.REFERENCE_CPU_S).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from reasoneval.scoring.programs import calibrate


def _whole_process_cpu(python: str) -> float:
    """The workload's CPU time with the interpreter's start (the earlier measure: `python -I -S`, wait4's rusage)."""
    proc = subprocess.Popen([python, "-I", "-S", "-c", calibrate.WORKLOAD], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="quiet/busy pairs, interleaved (default 3)")
    ap.add_argument("--python", default=None, help="the interpreter to time (default: the sandbox's)")
    args = ap.parse_args()
    python = args.python or calibrate.programs_python()
    cores = os.cpu_count() or 2
    print(f"interpreter: {os.path.realpath(python)} {' '.join(calibrate.FLAGS)}; {cores} cores; "
          f"{calibrate.REPEATS} repeats {calibrate.SPACING_S} s apart; load average {os.getloadavg()[0]:.1f}")
    quiet: list[float] = []
    busy: list[float] = []
    for r in range(args.rounds):
        quiet.append(calibrate.calibrate(python).factor)
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
        try:
            time.sleep(0.5)
            busy.append(calibrate.calibrate(python).factor)
        finally:
            for b in burners:
                b.kill()
                b.wait()
        print(f"round {r + 1}: quiet {quiet[-1]:.3f}  busy ({cores} busy loops) {busy[-1]:.3f}")
    every = quiet + busy
    spread = max(every) / min(every) - 1
    print(f"quiet {min(quiet):.3f}-{max(quiet):.3f}, busy {min(busy):.3f}-{max(busy):.3f}: "
          f"spread {100 * spread:.1f}% ({'within' if spread <= 0.10 else 'OVER'} 10%)")
    whole = min(_whole_process_cpu(python) for _ in range(calibrate.REPEATS))
    alone, _ = calibrate.measure_workload(python)
    print(f"workload alone {alone:.4f} s, whole interpreter {whole:.4f} s: ratio {alone / whole:.3f}")
    cached = calibrate.cached_calibration(python)
    print("cached factor for this machine and interpreter: " +
          (f"{cached.factor:.3f} ({cached.source}; every run uses it, whatever the load)" if cached else
           "none yet (the first contest run measures and caches it)"))
    return 0 if spread <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
