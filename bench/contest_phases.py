"""Where our contest judge's fixed cost per response and its cost per test go (a companion of
bench/contest_speed.py): each phase timed on its own, wall and CPU time (this process and all its descendants).

    PYTHONPATH=src python bench/contest_phases.py [--repeats 10] [--tests 40]

Phases: the calibration (once per run); a sandbox that runs `pass` (bwrap or the fallback, and the interpreter's
start); the same importing the keeper's preload list; the header's `from X import *` lines executed once with the
modules loaded (what every stdin test pays again); a fork + exit + wait of an interpreter that imported the preload
list (the per-test process); the keeper's per-test step with and without the header (in a fresh fork the header
costs far more than warm: its refcount writes copy pages); the whole judge on one response with 1 test and with
`--tests` tests (its fixed cost and its slope per test) for a stdin script and a `class Solution`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import ScoringContext
from reasoneval.scoring.programs.calibrate import measure_workload
from reasoneval.scoring.programs.contest import LCB_IMPORTS, PRELOAD, ContestScorer
from reasoneval.scoring.programs.sandbox.run import Limits, Sandbox

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contest_speed import cpu_meter, cpu_now  # this folder is no package


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Median wall and median CPU (this process and all its descendants: contest_speed.py's cgroup meter) of
    `repeats` calls, in seconds."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = cpu_now(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_now() - c0)
    return statistics.median(walls), statistics.median(cpus)


def fork_wait() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


class Judge:
    """One scoring context for every call (its sandbox pool's start and probe are once per run, not per response);
    each call's text differs by a comment, so that no result comes from the context's cache."""

    def __init__(self) -> None:
        self.ctx = ScoringContext(workers=1)
        self.scorer = ContestScorer(self.ctx, calibrate=False)
        self.calls = 0

    def __call__(self, problem: Problem, text: str) -> None:
        self.calls += 1
        text = text.replace("```python\n", f"```python\n# call {self.calls}\n", 1)
        s = SampleRecord(task="bench", problem_key=problem.key, problem_id=problem.id, index=0, seed=0, status="ok",
                         text=text)
        d = self.scorer.score_many([problem], [s])[0].details
        assert d["verdict"] == "passed", d


def keeper_per_test(n: int) -> None:
    """The stdin keeper's per-test step (stdio_driver.Keeper.script: fork, run, watch, reap) outside any sandbox,
    in this process with the preload modules imported, for programs with and without the header: what a test
    costs apart from the sandbox's frames and compare."""
    try:
        from reasoneval.scoring.programs.sandbox import stdio_driver
        from reasoneval.scoring.programs.sandbox.prelude import _ignore_signals, _restore_signals
    except ImportError as e:
        print(f"  keeper per test: n/a here ({e})")
        return
    make = getattr(stdio_driver, "Keeper", None)
    if make is None:
        print("  keeper per test: n/a here (this driver has no stdio_driver.Keeper)")
        return
    saved = _ignore_signals()
    cmd_r, res_w = os.pipe()
    try:
        keeper = make({"codes": [], "mode": "stdin"}, saved, cmd_r, res_w)
        lim = {"cpu_s": 5.0, "wall_s": 50.0, "memory_mb": 1024}
        for label, code in (("keeper per test: `pass`", "pass"),
                            ("keeper per test: the header, then `pass`", LCB_IMPORTS + "\npass")):
            keeper.compiled = compile(code, "<solution>", "exec")
            w, c = timed(lambda: [keeper.script(b"1 2\n", lim) for _ in range(n)], 1)
            print(f"  {label:<58} {1000 * w / n:8.2f} {1000 * c / n:8.2f}", flush=True)
    finally:
        _restore_signals(saved)
        os.close(cmd_r)
        os.close(res_w)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--tests", type=int, default=40)
    a = ap.parse_args()
    sandbox = Sandbox(os.environ.get("REASONEVAL_SANDBOX", "auto"))
    print(f"sandbox mode {sandbox.mode}; load average {os.getloadavg()[0]:.1f}; medians of {a.repeats} runs; "
          "wall ms / CPU ms", flush=True)
    rows: list[tuple[str, tuple[float, float]]] = []

    def row(name: str, fn: Callable[[], Any], repeats: int = a.repeats) -> tuple[float, float]:
        r = timed(fn, repeats)
        rows.append((name, r))
        print(f"  {name:<58} {1000 * r[0]:8.1f} {1000 * r[1]:8.1f}", flush=True)
        return r

    def calibration() -> None:
        try:
            measure_workload()
        except TypeError:  # a calibration that times the programs' interpreter (issue 48) is told which
            measure_workload(sandbox.python)  # type: ignore[call-arg]

    row("calibration (3 runs of the workload, once per run)", calibration, 1)
    lim = Limits(timeout_s=30)
    row("sandbox running `pass` (start, interpreter, exit)", lambda: sandbox.run("pass", lim))
    row("sandbox importing the preload list", lambda: sandbox.run("import " + ", ".join(PRELOAD), lim))
    for name in PRELOAD:
        __import__(name)
    header = compile(LCB_IMPORTS, "<header>", "exec")
    n = 200
    w, c = timed(lambda: [exec(header, {"__builtins__": __builtins__}) for _ in range(n)], 3)
    print(f"  {'header lines executed, modules loaded (per test, stdin)':<58} {1000 * w / n:8.2f} {1000 * c / n:8.2f}")
    w, c = timed(lambda: [fork_wait() for _ in range(n)], 3)
    print(f"  {'fork + exit + wait, preload imported (per test)':<58} {1000 * w / n:8.2f} {1000 * c / n:8.2f}")

    keeper_per_test(a.repeats * 30)

    def problem(mode: str, tests: int) -> Problem:
        t = [{"input": f"{i} {i}\n", "output": f"{2 * i}\n", "kind": "test"} for i in range(tests)]
        if mode == "call":
            t = [{"input": f"{i}\n{i}", "output": f"{2 * i}", "kind": "test"} for i in range(tests)]
        return Problem(task="bench", id=f"{mode}{tests}", problem="", answer="", key=f"{mode}{tests}",
                       payload={"tests": t, "mode": mode, "func_name": "add"})

    judge = Judge()
    judge(problem("stdin", 1), "```python\nprint(0)\n```")  # the pool's start
    stdin_text = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    call_text = "```python\nclass Solution:\n    def add(self, a, b):\n        return a + b\n```"
    for mode, text in (("stdin", stdin_text), ("call", call_text)):
        p1, pn = problem(mode, 1), problem(mode, a.tests)
        one = row(f"judge, one {mode} response, 1 test", lambda: judge(p1, text))  # noqa: B023 (called at once)
        many = row(f"judge, one {mode} response, {a.tests} tests", lambda: judge(pn, text))  # noqa: B023
        slope = [(m - o) / (a.tests - 1) for m, o in zip(many, one)]
        print(f"  {'  -> per test':<58} {1000 * slope[0]:8.2f} {1000 * slope[1]:8.2f}")
        print(f"  {'  -> fixed per response':<58} {1000 * (one[0] - slope[0]):8.1f} {1000 * (one[1] - slope[1]):8.1f}")
    judge.ctx.close()
    print(f"load average {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)
    cpu_meter().close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
