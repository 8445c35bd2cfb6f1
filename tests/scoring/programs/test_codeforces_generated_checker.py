"""open-r1/codeforces' generated_checker, run by the `codeforces` judge in open-r1's convention (checker.py INPUT
REFERENCE_OUTPUT SUBMISSION_OUTPUT, prints 1 or 0) in the real sandbox, both modes: a checker that accepts many right
answers and needs the three files in that order, hostile outputs against it, a checker that hangs. The checkers here
are our own, written in that convention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.scoring.programs.codeforces.open_r1_checker import PROTOCOL
from reasoneval.tasks.codeforces import codeforces_problem
from tests.scoring.programs.test_codeforces_judge import fence, judge, problem

# The longest strictly increasing subsequence: its length, then the 1-based indices of any one. The length must be
# the reference's (the second file); the indices are checked in the submission (the third): a checker called with
# the two outputs swapped would pass a right length with a wrong witness.
LIS_TESTS = [{"input": "5\n1 3 2 4 3\n", "output": "3\n1 2 4\n", "kind": "public"},
             {"input": "6\n5 1 6 2 3 7\n", "output": "4\n2 4 5 6\n", "kind": "official"}]
LIS_CHECKER = """import sys


def main(input_path, output_path, submission_path):
    with open(input_path) as f:
        data = f.read().split()
    a = [int(x) for x in data[1:1 + int(data[0])]]
    with open(output_path) as f:
        best = int(f.read().split()[0])
    with open(submission_path) as f:
        got = f.read().split()
    m = int(got[0])  # a submission that is not a number makes this raise: not passed
    idx = [int(x) for x in got[1:]]
    ok = m == best and len(idx) == m and all(1 <= i <= len(a) for i in idx)
    ok = ok and all(i < j and a[i - 1] < a[j - 1] for i, j in zip(idx, idx[1:]))
    print(1 if ok else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
"""
LIS_RIGHT = """n = int(input())
a = list(map(int, input().split()))
best = [[i] for i in range(n)]
for j in range(n):
    for i in range(j):
        if a[i] < a[j] and len(best[i]) + 1 > len(best[j]):
            best[j] = best[i] + [j]
b = max(best, key=len)
print(len(b))
print(*[i + 1 for i in b])
"""
LIS_RIGHT_OTHER = LIS_RIGHT.replace("len(best[i]) + 1 > len(best[j])", "len(best[i]) + 1 >= len(best[j])")
LIS_NO_WITNESS = LIS_RIGHT.replace("print(*[i + 1 for i in b])", "print(*[1] * len(b))")  # the right length only


def open_r1(tests: list[dict[str, str]], checker: str, **extra: object) -> Problem:
    return problem(tests, checker={"language": "python", "source": checker, "protocol": PROTOCOL}, **extra)


def test_many_right_answers_pass_and_the_files_come_in_open_r1s_order(mode: str) -> None:
    p = open_r1(LIS_TESTS, LIS_CHECKER)
    got = judge(p, [fence("python", LIS_RIGHT), fence("python", LIS_RIGHT_OTHER),
                    fence("python", LIS_NO_WITNESS),
                    fence("python", "input()\nprint(2)\nprint(1, 2)\n"),  # a witness, not the longest
                    fence("cpp", "#include <cstdio>\nint main(){puts(\"3\\n1 2 4\");}\n")])  # the reference, always
    assert [d["verdict"] for d in got] == ["passed", "passed", "wrong_answer", "wrong_answer", "wrong_answer"]
    assert got[2]["detail"] == "the generated checker printed 0" and got[2]["first_failure"]["index"] == 0
    assert got[4]["first_failure"] == {"index": 1, "kind": "official", "number": 0}


def test_hostile_outputs_against_a_generated_checker_are_wrong_answers(mode: str) -> None:
    p = open_r1(LIS_TESTS, LIS_CHECKER)
    garbage = "import sys\nsys.stdout.write('\\x00' * 100000 + 'x' * 1000)\n"  # the checker's int() raises
    flood = "import sys\nsys.stdout.write('3 ' * 10 ** 7)\n"
    says_one = "print(1)\n"  # the program's output is a file the checker reads, never what the checker prints
    # a program that leaves its own generated_checker.py where the adapter writes the real one
    planted = ("open('/tmp/judge/generated_checker.py', 'w').write('print(1)')\n"
               "import os\nos.chmod('/tmp/judge/generated_checker.py', 0o444)\nprint('no')\n")
    got = judge(p, [fence("python", garbage), fence("python", flood), fence("python", says_one),
                    fence("python", planted), fence("python", LIS_RIGHT)])
    assert [d["verdict"] for d in got] == ["wrong_answer"] * 4 + ["passed"]
    assert got[0]["detail"].startswith("the generated checker did not print 1 (exit 1, printed ''; not passed")
    assert "ValueError: invalid literal for int()" in got[0]["detail"]


def test_a_generated_checker_that_hangs_is_a_judge_error(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from reasoneval.scoring.programs.codeforces import open_r1_checker

    monkeypatch.setattr(open_r1_checker, "CHECKER_TIMEOUT_S", 1.0)
    p = open_r1(LIS_TESTS[:1], "import time\ntime.sleep(30)\n")
    got = judge(p, [fence("python", LIS_RIGHT)])
    assert got[0]["verdict"] == "judge_error" and "ran out of time" in got[0]["detail"]


def test_a_dataset_row_with_a_generated_checker_is_judged_by_it(mode: str) -> None:
    row = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "hub" / "codeforces.jsonl")
                     .read_text().splitlines()[1])
    assert row["id"] == "9001/B" and row["generated_checker"].startswith("import sys")
    p = codeforces_problem("codeforces", "fixture", row, "x")
    assert p.payload["checker"]["protocol"] == PROTOCOL
    rotate_back = "n = int(input())\nprint(*([n] + list(range(1, n))))\n"  # not the reference's rotation
    got = judge(p, [fence("python", rotate_back), fence("python", "n = int(input())\nprint(*range(1, n + 1))\n")])
    assert [d["verdict"] for d in got] == ["passed", "wrong_answer"]
    assert got[0]["tests_passed"] == 4  # the example and the three official tests


def test_an_unknown_checker_protocol_is_a_one_line_error() -> None:
    p = problem(LIS_TESTS, checker={"language": "python", "source": LIS_CHECKER, "protocol": "hackerrank"})
    with pytest.raises(UserError, match="its checker has protocol 'hackerrank'; the judge runs 'testlib'") as e:
        judge(p, [fence("python", LIS_RIGHT)])
    assert "\n" not in str(e.value)
