"""Near-limit programs keep their verdicts when the machine is loaded: the contest scorer's limits are CPU time,
and CPU time does not grow while a process waits for a core. Two processes burning both cores run beside the
second scoring."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer

LIMIT_S = 1.0


def _iterations_per_cpu_second() -> int:
    """How many iterations of the programs' loop one CPU second holds here (measured in CPU time)."""
    n, start = 0, time.process_time()
    x = 0
    while time.process_time() - start < 0.3:
        for i in range(10000):
            x += i
        n += 10000
    return int(n / (time.process_time() - start))


def _program(iterations: int) -> str:
    return (f"n = int(input())\nx = 0\nfor i in range({iterations}):\n    x += i\nprint(n + 1)\n")


def _score(codes: list[str]) -> list[str]:
    p = Problem(task="t", id="p", problem="", answer="", key="k",
                payload={"tests": [{"input": "1\n", "output": "2\n", "kind": "public"},
                                   {"input": "5\n", "output": "6\n", "kind": "private"}], "mode": "stdin"})
    with ScoringContext(workers=2) as ctx:
        scorer = create_scorer(TaskScoring("contest", {"time_limit_s": LIMIT_S, "calibrate": False}), ctx)
        samples = [SampleRecord(task="t", problem_key="k", problem_id="p", index=i, seed=0, status="ok",
                                text=f"```python\n{c}\n```") for i, c in enumerate(codes)]
        return [s.details["verdict"] for s in scorer.score_many([p] * len(codes), samples)]


@pytest.mark.usefixtures("mode")
def test_near_limit_verdicts_do_not_change_under_load() -> None:
    rate = _iterations_per_cpu_second()
    # CPU time: 0.45 and 0.6 of the limit (pass), 1.6 and 2.2 times it (time limit)
    fractions = (0.45, 0.6, 1.6, 2.2)
    codes = [_program(int(rate * LIMIT_S * f)) + f"# {f} {i}" for i, f in enumerate(fractions)]
    alone = _score(codes)
    assert alone == ["passed", "passed", "time_limit", "time_limit"]
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        time.sleep(0.5)
        loaded = _score([c + " loaded" for c in codes])  # new texts: nothing comes from a cache
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert loaded == alone
