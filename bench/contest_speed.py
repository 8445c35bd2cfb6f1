"""The contest judge's speed against lcb_runner's grader, side by side in one run, on three shapes (issue 48):
CodeContests-style stdin programs (several samples per problem), LeetCode-style `class Solution` programs, and one
sample per problem (where a sandbox's start is paid by one response: the fixed cost per response).

    python -m venv /tmp/lcbvenv && /tmp/lcbvenv/bin/pip install nvidia-livecodebench
    PYTHONPATH=src python bench/contest_speed.py --lcb-python /tmp/lcbvenv/bin/python [--workers 2]

Where lcb_runner cannot be installed, `--baseline-driver OLD.py` runs our scorer a second time in the same run
with another stdio driver text (e.g. `git show REV:src/reasoneval/scoring/programs/sandbox/stdio_driver.py`,
assembled with its prelude) as the reference instead. The programs are the correct ones of bench/contest_agreement.py
(distinct texts per sample, so neither side reuses a result), CodeContests-style ones with the imports such programs
start with (`sys`, `collections`, `heapq`, `bisect`, `math`, `itertools`). Prints tests per second of each side and
the ratio per shape, and for one sample per problem the worker-seconds per response (wall x workers / responses).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contest_agreement import PROGRAMS, problems, response, run_lcb, run_ours

IMPORTS = ("import sys\nfrom collections import defaultdict, deque, Counter\nimport heapq, bisect, math, itertools\n"
           "input = sys.stdin.readline\n")


def shapes(rng: random.Random, samples: int, tests: int) -> dict[str, tuple[list[dict[str, Any]], list[tuple[int, str]]]]:
    probs = problems(rng, tests)
    correct = {p: code for p, name, code, _ in PROGRAMS if name == "correct"}
    stdin = [n for n in correct if probs[n]["mode"] == "stdin"]
    call = [n for n in correct if probs[n]["mode"] == "call"]
    out = {}
    plist = [probs[n] for n in stdin]
    out["stdin"] = (plist, [(i, response(IMPORTS + correct[n] + f"\n# sample {j}")) for i, n in enumerate(stdin)
                            for j in range(samples)])
    plist = [probs[n] for n in call]
    out["call"] = (plist, [(i, response(correct[n] + f"\n# sample {j}")) for i, n in enumerate(call)
                           for j in range(samples)])
    # one sample per problem: as many distinct problems as the stdin shape has programs, one test each
    single = []
    singles = []
    for k in range(samples * len(stdin)):
        fresh = problems(random.Random(1000 + k), 1)
        name = stdin[k % len(stdin)]
        single.append(fresh[name])
        singles.append((k, response(IMPORTS + correct[name] + f"\n# problem {k}")))
    out["one_sample"] = (single, singles)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lcb-python", default="/tmp/lcbvenv/bin/python")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--samples", type=int, default=8, help="programs per problem (stdin and call shapes)")
    ap.add_argument("--tests", type=int, default=30, help="tests per problem (stdin and call shapes)")
    ap.add_argument("--baseline-driver", help="compare with our scorer running this stdio driver text instead")
    a = ap.parse_args()
    for shape, (plist, programs) in shapes(random.Random(1), a.samples, a.tests).items():
        n_tests = sum(len(plist[i]["tests"]) for i, _ in programs)
        if a.baseline_driver:
            from reasoneval.scoring.programs import contest
            ours_text = contest.STDIO_DRIVER_SOURCE
            contest.STDIO_DRIVER_SOURCE = Path(a.baseline_driver).read_text()  # type: ignore[misc]
            try:
                ref, ref_wall, _ = run_ours(plist, programs, a.workers)
            finally:
                contest.STDIO_DRIVER_SOURCE = ours_text  # type: ignore[misc]
            ref_ok = all(r["verdict"] == "passed" for r in ref)
            who = "previous driver"
        else:
            lcb, ref_wall = run_lcb(a.lcb_python, plist, programs, a.workers)
            ref_ok = all(bool(r) and all(x is True for x in r) for r in lcb)
            who = "lcb_runner"
        ours, our_wall, _ = run_ours(plist, programs, a.workers)
        assert ref_ok, f"{who} failed a correct program"
        assert all(o["verdict"] == "passed" for o in ours), "we failed a correct program"
        r_rate, o_rate = n_tests / ref_wall, n_tests / our_wall
        print(f"{shape}: {len(programs)} programs, {n_tests} tests, {a.workers} workers: {who} {ref_wall:.2f} s "
              f"({r_rate:.0f} tests/s), ours {our_wall:.2f} s ({o_rate:.0f} tests/s): ratio {o_rate / r_rate:.2f}")
        if shape == "one_sample":
            print(f"  worker-seconds per response: {who} {ref_wall * a.workers / len(programs):.3f}, "
                  f"ours {our_wall * a.workers / len(programs):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
