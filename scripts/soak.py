#!/usr/bin/env python3
"""The long kill soak, bounded in time (CI runs it): SIGKILL `reasoneval run` at 20 seeded random moments
against the loopback test server, re-running each time until done, then check that every sample is
journaled exactly once, that no journaled sample was requested again, and that the metrics equal an
uninterrupted run's. Prints a one-line verdict; exits 1 on any violation (or when the time bound cut the
soak short of its kills).

    PYTHONPATH=src python scripts/soak.py --kills 20 --seed 0 --time-limit 240
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.reliability.soak_lib import run_soak  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=240.0, help="seconds; the soak stops killing after it")
    ap.add_argument("--problems", type=int, default=24, help="problems per task (two tasks)")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--keep", help="work in this directory and keep it (default: a temporary one)")
    a = ap.parse_args()
    tasks = {"aime24": a.problems, "math500": max(1, a.problems * 2 // 3)}
    with tempfile.TemporaryDirectory(prefix="reasoneval-soak-") as tmp:
        work = Path(a.keep) if a.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        res = run_soak(work, kills=a.kills, seed=a.seed, tasks=tasks, n=a.n, concurrency=a.concurrency,
                       time_limit_s=a.time_limit)
    if not res.violations and res.kills < a.kills:
        res.violations.append(f"only {res.kills} of {a.kills} kills fit in --time-limit {a.time_limit:g}")
    print(res.verdict())
    for v in res.violations[1:]:
        print(f"  also: {v}")
    return 1 if res.violations else 0


if __name__ == "__main__":
    sys.exit(main())
