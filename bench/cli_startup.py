#!/usr/bin/env python3
"""How long the `reasoneval` command takes to start: `--version`, `tasks`, `--help`, `report --help` and
`run --help`, each against `python -c pass` (the interpreter alone) measured in the same run.

Each command runs `--runs` times in a fresh interpreter (`python -m reasoneval ...`, the installed script's
path), in turn with the reference so that load on the machine hits both alike; printed per command: the median
wall time, the median minus the interpreter's, and the ratio of the medians. Bytecode is cached as an installed
package has it (PYTHONDONTWRITEBYTECODE is dropped; each command runs once first, to write its .pyc files):
otherwise every run would compile reasoneval's sources again, a cost no user pays.

    PYTHONPATH=src python bench/cli_startup.py            # 15 runs of each
    PYTHONPATH=src python bench/cli_startup.py --runs 5   # quick
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _common import ROOT

COMMANDS = {
    "--version": ["--version"],
    "tasks": ["tasks"],
    "--help": ["--help"],
    "report --help": ["report", "--help"],
    "run --help": ["run", "--help"],
}


def wall_s(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as data_dir:  # empty: `tasks` lists the catalog without reading data
        env["REASONEVAL_DATA_DIR"] = data_dir
        base, times = measure(args.runs, env)
    ref = statistics.median(base)
    print(f"python -c pass: median {ref:.3f} s over {args.runs} runs")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"reasoneval {name:<14} median {med:.3f} s (max {max(ts):.3f}), {med - ref:+.3f} s over the "
              f"interpreter, {med / ref:.1f}x python -c pass")


def measure(runs: int, env: dict[str, str]) -> tuple[list[float], dict[str, list[float]]]:
    reference = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    base: list[float] = []
    for argv in COMMANDS.values():  # warm the page cache and write the .pyc files
        wall_s([sys.executable, "-m", "reasoneval", *argv], env)
    for _ in range(runs):
        base.append(wall_s(reference, env))
        for name, argv in COMMANDS.items():
            times[name].append(wall_s([sys.executable, "-m", "reasoneval", *argv], env))
    return base, times


if __name__ == "__main__":
    main()
