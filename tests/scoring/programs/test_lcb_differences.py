"""Response classes where lcb_runner's grader and ours could part (docs/contests.md, "Differences from lcb_runner"):
`quit()` (we agree: a runtime error), code only inside `<think>` (no code here), `sys.exit` inside a `class
Solution` (both fail it; here a runtime error at the test whose call exited)."""

from __future__ import annotations

from typing import Any

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer

SUM_TESTS = [{"input": "1 2\n", "output": "3\n", "kind": "public"},
             {"input": "10 20\n", "output": "30\n", "kind": "private"}]
SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
HALF_TESTS = [{"input": "4", "output": "2", "kind": "public"}, {"input": "7", "output": "3", "kind": "private"}]


def _score(p: Problem, texts: list[str]) -> list[Any]:
    with ScoringContext(workers=1) as ctx:
        scorer = create_scorer(TaskScoring("contest", {"time_limit_s": 1.0, "calibrate": False}), ctx)
        samples = [SampleRecord(task="t", problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok", text=t)
                   for i, t in enumerate(texts)]
        return [s.details for s in scorer.score_many([p] * len(texts), samples)]


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.usefixtures("mode")
def test_stdin_quit_and_code_only_in_reasoning() -> None:
    p = Problem(task="t", id="sum", problem="", answer="", key="sum", payload={"tests": SUM_TESTS, "mode": "stdin"})
    got = _score(p, [
        _fenced(SUM + "quit()"),  # lcb_runner: quit is None (its reliability guard): TypeError, a runtime error
        _fenced(SUM + "exit()"),  # exit() stays: SystemExit, the output is judged (as there)
        _fenced(SUM + "import sys\nsys.exit(0)"),
        "<think>\n" + _fenced(SUM) + "\n</think>\nThe answer is above.",  # lcb_runner grades the reasoning's block
        "<think>\n" + _fenced("print(0)") + "\n</think>\n" + _fenced(SUM),  # the answer's block, in both
    ])
    assert [d["verdict"] for d in got] == ["runtime_error", "passed", "passed", "no_code", "passed"]
    assert "NoneType" in got[0]["detail"]


@pytest.mark.usefixtures("mode")
def test_call_quit_and_sys_exit_inside_class_solution() -> None:
    p = Problem(task="t", id="half", problem="", answer="", key="half",
                payload={"tests": HALF_TESTS, "mode": "call", "func_name": "half"})
    got = _score(p, [
        _fenced("class Solution:\n    def half(self, n):\n        quit()"),
        # exits on the second test only: lcb_runner's SystemExit escapes its `except Exception` and ends its grading
        # process, so it records -1 on every test; here a runtime error at that test, the first one passed
        _fenced("import sys\nclass Solution:\n    def half(self, n):\n        if n % 2:\n            sys.exit(0)\n"
                "        return n // 2"),
        _fenced("class Solution:\n    def half(self, n):\n        return n // 2"),
    ])
    assert [d["verdict"] for d in got] == ["runtime_error", "runtime_error", "passed"]
    assert got[1]["first_failure"] == {"index": 1, "kind": "private", "number": 0} and got[1]["tests_passed"] == 1
    assert "SystemExit" in got[1]["detail"]
