"""Our `contest` verdicts against lcb_runner's own grader (the PyPI package `nvidia-livecodebench`, in an
environment of its own), on the same responses, and the grading speed of both in the same run.

    python -m venv /tmp/lcbvenv && /tmp/lcbvenv/bin/pip install nvidia-livecodebench
    PYTHONPATH=src python bench/contest_agreement.py --lcb-python /tmp/lcbvenv/bin/python [--workers 2] [--samples 16]

Agreement: reference-style correct programs written here for small stdin and LeetCode-style problems (tests
generated here), and mutations of them (off by one, wrong case, trailing spaces, a blank line, float formats,
`class Solution`, `if __name__ == "__main__"`, `exit()`, `sys.stdin.buffer`, `open(0)`, timeouts, runtime errors,
syntax errors, ...), each graded by both; every disagreement is printed with its quirk class, and agreement is
reported outside the documented quirk classes (docs/contests.md: programs lcb_runner's in-process harness gets
wrong, which we run as real scripts). Speed: `--samples` correct programs per problem (distinct texts, so neither
side can reuse a result), graded by both with `--workers` processes; tests per second and the ratio, and the cost
of a LiveCodeBench-sized run (1,055 problems x 16 samples) extrapolated from each.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer

HERE = Path(__file__).resolve().parent


def _tests(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"input": i, "output": o, "kind": "private"} for i, o in pairs]


def problems(rng: random.Random, n_tests: int) -> dict[str, dict[str, Any]]:
    """name -> {"tests", "mode", "func_name"}: small problems whose tests are computed here."""
    out: dict[str, dict[str, Any]] = {}
    pairs = [(rng.randint(-10**9, 10**9), rng.randint(-10**9, 10**9)) for _ in range(n_tests)]
    out["sum"] = {"mode": "stdin", "tests": _tests([(f"{a} {b}\n", f"{a + b}\n") for a, b in pairs])}
    multi = []
    for _ in range(n_tests):
        rows = [(rng.randint(1, 1000), rng.randint(1, 1000)) for _ in range(rng.randint(1, 5))]
        multi.append((f"{len(rows)}\n" + "".join(f"{a} {b}\n" for a, b in rows), "".join(f"{a * b}\n" for a, b in rows)))
    out["products"] = {"mode": "stdin", "tests": _tests(multi)}
    avg = []
    for _ in range(n_tests):
        xs = [rng.randint(0, 9) for _ in range(rng.choice([2, 4]))]
        avg.append((f"{len(xs)}\n{' '.join(map(str, xs))}\n", f"{sum(xs) / len(xs)}\n"))
    out["average"] = {"mode": "stdin", "tests": _tests(avg)}
    out["parity"] = {"mode": "stdin", "tests": _tests([(f"{n}\n", "YES\n" if n % 2 == 0 else "NO\n")
                                                     for n in (rng.randint(0, 10**6) for _ in range(n_tests))])}
    words = []
    for _ in range(n_tests):
        ws = ["".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 6))]
        words.append((" ".join(ws) + "\n", " ".join(reversed(ws)) + "\n"))
    out["reverse"] = {"mode": "stdin", "tests": _tests(words)}
    adds = []
    for _ in range(n_tests):
        nums, k = [rng.randint(-50, 50) for _ in range(rng.randint(0, 6))], rng.randint(-5, 5)
        adds.append((f"{json.dumps(nums)}\n{k}", json.dumps([x + k for x in nums])))
    out["addAll"] = {"mode": "call", "func_name": "addAll", "tests": _tests(adds)}
    out["isEven"] = {"mode": "call", "func_name": "isEven", "tests": _tests(
        [(str(n), "true" if n % 2 == 0 else "false") for n in (rng.randint(0, 1000) for _ in range(n_tests))])}
    return out


SUM = "a, b = map(int, input().split())\nprint(a + b)"
# (problem, name, code, quirk): quirk names the documented class where lcb_runner's harness and a real script differ
PROGRAMS: list[tuple[str, str, str, str | None]] = [
    ("sum", "correct", SUM, None),
    ("sum", "off_by_one", "a, b = map(int, input().split())\nprint(a + b + 1)", None),
    ("sum", "trailing_spaces", "a, b = map(int, input().split())\nprint(a + b, '  ')", None),
    ("sum", "leading_blank_line", "a, b = map(int, input().split())\nprint()\nprint(a + b)", None),
    ("sum", "trailing_blank_lines", SUM + "\nprint()\nprint()", None),
    ("sum", "as_float", "a, b = map(int, input().split())\nprint(float(a + b))", None),
    ("sum", "no_newline", "a, b = map(int, input().split())\nprint(a + b, end='')", None),
    ("sum", "stdout_write", "import sys\na, b = map(int, input().split())\nsys.stdout.write(str(a + b) + '\\n')", None),
    ("sum", "readline", "import sys\na, b = map(int, sys.stdin.readline().split())\nprint(a + b)", None),
    ("sum", "input_is_readline", "import sys\ninput = sys.stdin.readline\na, b = map(int, input().split())\nprint(a + b)",
     None),
    ("sum", "for_line_in_stdin", "import sys\nfor line in sys.stdin:\n    a, b = map(int, line.split())\n    print(a + b)",
     None),
    ("sum", "open0", "a, b = map(int, open(0).read().split())\nprint(a + b)", "open0"),
    ("sum", "stdin_buffer", "import sys\na, b = map(int, sys.stdin.buffer.read().split())\nprint(a + b)",
     "stdin_buffer"),
    ("sum", "main_block", "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n\n"
                          "if __name__ == '__main__':\n    main()", None),
    ("sum", "class_solution", "class Solution:\n    def solve(self):\n        a, b = map(int, input().split())\n"
                              "        print(a + b)\n\nSolution().solve()", "class_solution_stdin"),
    ("sum", "exit_after", SUM + "\nexit()", None),
    ("sum", "sys_exit_0", "import sys\n" + SUM + "\nsys.exit(0)", None),
    ("sum", "exit_before", "exit()\n" + SUM, None),
    ("sum", "quit_after", SUM + "\nquit()", None),  # lcb_runner's guard sets quit to None: a runtime error, as ours
    ("sum", "global", "s = 0\ndef read():\n    global s\n    s = sum(map(int, input().split()))\nread()\nprint(s)",
     "global"),
    ("sum", "os_write", "import os\na, b = map(int, input().split())\nos.write(1, (str(a + b) + '\\n').encode())",
     "fd_write"),
    ("sum", "runtime_error", SUM + "\nraise RuntimeError('after the answer')", None),
    ("sum", "zero_division", "a, b = map(int, input().split())\nprint((a + b) // 0)", None),
    ("sum", "syntax_error", "a, b = map(int, input().split()\nprint(a + b)", None),
    ("sum", "timeout", "a, b = map(int, input().split())\nwhile True:\n    a += 1", None),
    ("sum", "sleep_timeout", "import time\na, b = map(int, input().split())\ntime.sleep(8)\nprint(a + b)", "waits"),
    ("sum", "imports_from_header", "x = [heappush, defaultdict, gcd, accumulate, List]\n" + SUM, None),
    ("products", "correct", "t = int(input())\nfor _ in range(t):\n    a, b = map(int, input().split())\n    print(a * b)",
     None),
    ("products", "blank_line_between", "t = int(input())\nfor i in range(t):\n    a, b = map(int, input().split())\n"
                                       "    if i:\n        print()\n    print(a * b)", None),
    ("products", "one_line", "t = int(input())\nr = []\nfor _ in range(t):\n    a, b = map(int, input().split())\n"
                             "    r.append(a * b)\nprint(*r)", None),
    ("products", "off_by_one_loop", "t = int(input())\nfor _ in range(t - 1):\n    a, b = map(int, input().split())\n"
                                    "    print(a * b)", None),
    ("average", "correct", "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs) / n)", None),
    ("average", "two_decimals", "n = int(input())\nxs = list(map(int, input().split()))\nprint('%.2f' % (sum(xs) / n))",
     None),
    ("average", "one_decimal", "n = int(input())\nxs = list(map(int, input().split()))\nprint('%.1f' % (sum(xs) / n))",
     None),
    ("average", "integer_division", "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs) // n)", None),
    ("average", "scientific", "n = int(input())\nxs = list(map(int, input().split()))\nprint('%e' % (sum(xs) / n))",
     None),
    ("parity", "correct", "n = int(input())\nprint('YES' if n % 2 == 0 else 'NO')", None),
    ("parity", "wrong_case", "n = int(input())\nprint('yes' if n % 2 == 0 else 'no')", None),
    ("parity", "title_case", "n = int(input())\nprint('Yes' if n % 2 == 0 else 'No')", None),
    ("reverse", "correct", "print(' '.join(reversed(input().split())))", None),
    ("reverse", "double_space", "print('  '.join(reversed(input().split())))", None),
    ("reverse", "not_reversed", "print(' '.join(input().split()))", None),
    ("addAll", "correct", "class Solution:\n    def addAll(self, nums: List[int], k: int) -> List[int]:\n"
                          "        return [x + k for x in nums]", None),
    ("addAll", "tuple", "class Solution:\n    def addAll(self, nums, k):\n        return tuple(x + k for x in nums)", None),
    ("addAll", "function_only", "def addAll(nums, k):\n    return [x + k for x in nums]", None),
    ("addAll", "main_block", "class Solution:\n    def addAll(self, nums, k):\n        return [x + k for x in nums]\n"
                             "if __name__ == '__main__':\n    print(Solution().addAll([1], 1))", None),
    ("addAll", "off_by_one", "class Solution:\n    def addAll(self, nums, k):\n        return [x + k + 1 for x in nums]",
     None),
    ("addAll", "generator", "class Solution:\n    def addAll(self, nums, k):\n        return (x + k for x in nums)", None),
    ("addAll", "runtime_error", "class Solution:\n    def addAll(self, nums, k):\n        return [x + k for x in nums][99]",
     None),
    ("addAll", "timeout", "class Solution:\n    def addAll(self, nums, k):\n        while True:\n            pass", None),
    ("addAll", "syntax_error", "class Solution:\n    def addAll(self, nums, k)\n        return nums", None),
    ("addAll", "prints", "class Solution:\n    def addAll(self, nums, k):\n        print('debug', nums)\n"
                         "        return [x + k for x in nums]", None),
    ("isEven", "correct", "class Solution:\n    def isEven(self, n: int) -> bool:\n        return n % 2 == 0", None),
    ("isEven", "as_int", "class Solution:\n    def isEven(self, n):\n        return int(n % 2 == 0)", None),
    ("isEven", "as_string", "class Solution:\n    def isEven(self, n):\n        return 'true' if n % 2 == 0 else 'false'",
     None),
    ("isEven", "sys_exit_class", "import sys\nclass Solution:\n    def isEven(self, n):\n        if n % 2:\n"
                                 "            sys.exit(0)\n        return True", None),  # fails in both (docs/contests.md)
    ("isEven", "inverted", "class Solution:\n    def isEven(self, n):\n        return n % 2 == 1", None),
]


def response(code: str) -> str:
    return f"Here is the program.\n```python\n{code}\n```\n"


def input_output(p: dict[str, Any]) -> str:
    io: dict[str, Any] = {"inputs": [t["input"] for t in p["tests"]], "outputs": [t["output"] for t in p["tests"]]}
    if p["mode"] == "call":
        io["fn_name"] = p["func_name"]
    return json.dumps(io)


def run_lcb(lcb_python: str, probs: list[dict[str, Any]], programs: list[tuple[int, str]], workers: int
            ) -> tuple[list[list[Any]], float]:
    with tempfile.TemporaryDirectory() as d:
        inp, out = Path(d) / "in.json", Path(d) / "out.json"
        inp.write_text(json.dumps({"problems": [{"input_output": input_output(p)} for p in probs],
                                   "programs": programs}))
        subprocess.run([lcb_python, str(HERE / "lcb_grade.py"), str(inp), str(out), "--workers", str(workers)],
                       check=True, cwd=d)
        res = json.loads(out.read_text())
    return res["results"], float(res["wall_s"])


def run_ours(probs: list[dict[str, Any]], programs: list[tuple[int, str]], workers: int
             ) -> tuple[list[dict[str, Any]], float, float]:
    problems_ = [Problem(task="bench", id=f"p{i}", problem="", answer="", key=f"k{i}", payload=p)
                 for i, p in enumerate(probs)]
    with ScoringContext(workers=workers) as ctx:
        scorer = create_scorer(TaskScoring("contest"), ctx)
        t0 = time.perf_counter()
        factor = scorer.factor()  # type: ignore[attr-defined]
        cal = time.perf_counter() - t0
        samples = [SampleRecord(task="bench", problem_key=f"k{i}", problem_id=f"p{i}", index=j, seed=0, status="ok",
                                text=text) for j, (i, text) in enumerate(programs)]
        t0 = time.perf_counter()
        scores = scorer.score_many([problems_[i] for i, _ in programs], samples)
        wall = time.perf_counter() - t0
    print(f"(ours: calibration factor {factor}, measured in {cal:.2f} s, once per run)", file=sys.stderr)
    return [dict(s.details) for s in scores], wall, factor


def lcb_passed(res: list[Any]) -> bool:
    return bool(res) and all(x is True for x in res)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lcb-python", default="/tmp/lcbvenv/bin/python")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tests", type=int, default=10, help="tests per problem in the agreement set")
    ap.add_argument("--samples", type=int, default=16, help="correct programs per problem in the speed set")
    ap.add_argument("--speed-tests", type=int, default=30, help="tests per problem in the speed set")
    ap.add_argument("--skip-agreement", action="store_true")
    a = ap.parse_args()

    if not a.skip_agreement:
        probs = problems(random.Random(0), a.tests)
        names = list(probs)
        plist = [probs[n] for n in names]
        programs = [(names.index(p), response(code)) for p, _, code, _ in PROGRAMS]
        lcb, lcb_wall = run_lcb(a.lcb_python, plist, programs, a.workers)
        ours, our_wall, _ = run_ours(plist, programs, a.workers)
        agree = quirky = 0
        outside: list[str] = []
        for (prob, name, _, quirk), l_res, o in zip(PROGRAMS, lcb, ours):
            same = lcb_passed(l_res) == (o["verdict"] == "passed")
            if same:
                agree += 1
                continue
            line = (f"  {prob}/{name}: lcb_runner {'passed' if lcb_passed(l_res) else l_res[-1:]}, "
                    f"ours {o['verdict']} ({o.get('detail', '')[:60]})")
            if quirk:
                quirky += 1
                print(line + f"  [quirk: {quirk}]")
            else:
                outside.append(line)
        total = len(PROGRAMS)
        expected_quirks = sum(1 for p in PROGRAMS if p[3])
        print(f"agreement: {agree}/{total} programs; {quirky} of {expected_quirks} programs in documented quirk "
              f"classes differ; outside them {total - expected_quirks - len(outside)}/{total - expected_quirks} agree")
        for line in outside:
            print(line + "  [NOT a documented quirk]")

    rng = random.Random(1)
    probs = problems(rng, a.speed_tests)
    correct = {p: code for p, name, code, _ in PROGRAMS if name == "correct"}
    names = list(correct)
    plist = [probs[n] for n in names]
    programs = [(i, response(correct[n] + f"\n# sample {j}")) for i, n in enumerate(names) for j in range(a.samples)]
    n_tests = sum(len(plist[i]["tests"]) for i, _ in programs)
    lcb, lcb_wall = run_lcb(a.lcb_python, plist, programs, a.workers)
    ours, our_wall, _ = run_ours(plist, programs, a.workers)
    assert all(lcb_passed(r) for r in lcb), "lcb_runner failed a correct program"
    assert all(o["verdict"] == "passed" for o in ours), "we failed a correct program"
    l_rate, o_rate = n_tests / lcb_wall, n_tests / our_wall
    print(f"speed: {len(programs)} programs, {n_tests} tests, {a.workers} workers: lcb_runner {lcb_wall:.2f} s "
          f"({l_rate:.0f} tests/s), ours {our_wall:.2f} s ({o_rate:.0f} tests/s): ratio {o_rate / l_rate:.2f}")
    # a LiveCodeBench-sized run: 1,055 problems x 16 samples; tests per problem as here, every sample correct
    # (the slowest case: no early stop)
    per_program = {"lcb_runner": lcb_wall / len(programs), "ours": our_wall / len(programs)}
    for who, s in per_program.items():
        print(f"  {who}: 1,055 x 16 programs of {a.speed_tests} tests each, {a.workers} workers: "
              f"{1055 * 16 * s / 3600:.2f} h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
