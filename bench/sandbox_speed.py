"""Sandbox throughput: HumanEval's 164 canonical programs (with their tests) through the sandbox pool as the
`code` scorer runs them (the trusted driver: tests and candidate in two processes, calls through pipes),
against the same code and tests run as one bare subprocess each (`python -I -`, candidate and tests in one
interpreter, no isolation, no limits) at the same concurrency (see docs/benchmarks.md, "Sandbox").

    PYTHONPATH=src python bench/sandbox_speed.py --workers 2 --repeat 2

Prints programs/s for each mode and the ratio of the sandbox's time to the bare subprocess's (the cost of
isolation per program), and, per sandbox mode, the ratio of the driver (tests and candidate apart) to the same
code and tests as one program in the same sandbox (the design before issue 20), measured in the same run.
The bare reference runs in this same process and run, interleaved by repeat. With `--baseline-driver FILE` (an
earlier driver.py, e.g. `git show d2d4a3d:src/reasoneval/scoring/programs/sandbox/driver.py > /tmp/old.py`), that
driver runs too, in each mode, interleaved, and the time ratio of this driver to it is printed (its verdicts must
be the same: all pass).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from reasoneval.scoring.programs.sandbox import DRIVER_SOURCE, Limits, Sandbox, SandboxPool
from reasoneval.scoring.programs.sandbox.texts import with_prelude
from reasoneval.scoring.programs.scorer import STARTED, build_program, judge, started
from reasoneval.tasks.loading import load_task


def _bare(python: str, source: str, timeout_s: float) -> int:
    with tempfile.TemporaryFile() as f:
        f.write(source.encode())
        f.seek(0)
        return subprocess.run([python, "-I", "-"], stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout_s, check=False).returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--baseline-driver", help="an earlier driver.py to time beside this one, in the same run")
    args = ap.parse_args()
    # (an earlier driver.py with a prelude block gets this tree's prelude.py: sandbox/texts.py)
    baseline = with_prelude(open(args.baseline_driver, encoding="utf-8").read()) if args.baseline_driver else None

    problems = load_task("humaneval")[1]
    programs = [build_program(p, p.payload["canonical_solution"]) for p in problems]
    progs = [prog for prog in programs if prog is not None]
    stdins = [prog.stdin() for prog in progs]
    sources = [prog.code + "\n" + "\n".join(prog.tests) for prog in progs]  # the bare reference: one interpreter
    limits = Limits(timeout_s=20.0)
    names: tuple[str, ...] = ("bare", "rlimits one interpreter", "rlimits", "bwrap one interpreter", "bwrap")
    if baseline is not None:
        names += ("rlimits baseline driver", "bwrap baseline driver")
    times: dict[str, list[float]] = {m: [] for m in names}
    python = Sandbox("bwrap").python  # the same interpreter in every mode
    for _ in range(args.repeat):
        for mode in ("bwrap", "rlimits"):
            pool = SandboxPool(workers=args.workers, mode=mode)
            # the design before the split (candidate and tests in one sandboxed interpreter), then the driver
            t = time.perf_counter()
            single = pool.run_many(sources, limits)
            times[f"{mode} one interpreter"].append(time.perf_counter() - t)
            assert all(r.status == "ok" for r in single), f"{mode}: a canonical program failed in one interpreter"
            drivers = [(mode, DRIVER_SOURCE)] + ([(f"{mode} baseline driver", baseline)] if baseline else [])
            for name, source in drivers:
                t = time.perf_counter()
                results = pool.run_many([source] * len(stdins), limits, stdins=stdins)
                times[name].append(time.perf_counter() - t)
                if name != mode and not any(started(r) for r in results):
                    # a driver from before issue 40 writes no `started` line: its verdict line alone
                    results = [dataclasses.replace(r, channel=STARTED + (r.channel or "")) for r in results]
                bad = [(i, r.status, r.returncode, r.channel, r.stderr[-300:]) for i, r in enumerate(results)
                       if judge(r, 1).result != "passed"]
                assert not bad, f"{name}: canonical programs that did not pass: {bad}"
            pool.close()
        with ThreadPoolExecutor(args.workers) as ex:
            t = time.perf_counter()
            rcs = list(ex.map(lambda s: _bare(python, s, 20.0), sources))
            times["bare"].append(time.perf_counter() - t)
        assert all(rc == 0 for rc in rcs)
    n = len(sources)
    best = {m: min(ts) for m, ts in times.items()}
    print(f"{n} HumanEval canonical programs, {args.workers} workers, best of {args.repeat}; interpreter {python}")
    for m in names:
        print(f"  {m:24s} {n / best[m]:6.1f} programs/s  ({1000 * best[m] * args.workers / n:.0f} ms per program "
              f"per worker)   time ratio vs bare subprocess: {best[m] / best['bare']:.2f}x")
    for mode in ("rlimits", "bwrap"):
        print(f"  {mode}: tests and candidate apart / one interpreter: "
              f"{best[mode] / best[f'{mode} one interpreter']:.2f}x the time per program")
        if baseline is not None:
            print(f"  {mode}: this driver / the baseline driver: {best[mode] / best[f'{mode} baseline driver']:.2f}x "
                  "the time per program")

if __name__ == "__main__":
    main()
