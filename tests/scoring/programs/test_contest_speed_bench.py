"""bench/contest_speed.py's programs measure the judge, not luck: each passes every test of its own problem in our
real sandbox (so no early stop shortens a side's work) and fails another problem's tests; the test lists it times
are the problem's own, cycled."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.contest_speed import call_program, cycled, first_test_only, load_problems, response, stdin_program

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import ScoringContext
from reasoneval.scoring.programs.contest import ContestScorer


def _verdicts(pairs: list[tuple[Problem, str]]) -> list[str]:
    with ScoringContext(workers=2) as ctx:
        scorer = ContestScorer(ctx, calibrate=False)
        samples = [SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok",
                                text=text) for i, (p, text) in enumerate(pairs)]
        return [s.details["verdict"] for s in scorer.score_many([p for p, _ in pairs], samples)]


@pytest.mark.real_data("code_contests.jsonl", "livecodebench_public.jsonl")
def test_bench_programs_pass_their_own_problem_and_fail_another(real_data_dir: Path) -> None:
    stdin, call = load_problems(real_data_dir, 2, 2, 64 << 10)
    assert len(stdin) == 2 and len(call) == 2
    assert all(p.payload["mode"] == "stdin" for p in stdin) and all(p.payload["mode"] == "call" for p in call)
    s0, s1 = (cycled(p, 3) for p in stdin)
    c0, c1 = (cycled(p, 3) for p in call)
    got = _verdicts([(s0, response(stdin_program(s0, 0))), (s1, response(stdin_program(s0, 1))),
                     (c0, response(call_program(c0, 0))), (c1, response(call_program(c0, 1)))])
    assert got[0] == "passed" and got[2] == "passed"
    assert got[1] == "wrong_answer"  # problem 0's answers on problem 1's inputs
    assert got[3] in ("wrong_answer", "runtime_error")  # another method name, or answers that do not match


def test_tests_are_cycled_in_order_and_cut_to_the_first() -> None:
    tests = [{"input": str(i), "output": str(i), "kind": "test"} for i in range(3)]
    p = Problem(task="t", id="p", problem="", answer="", key="k", payload={"tests": tests, "mode": "stdin"})
    assert [t["input"] for t in cycled(p, 7).payload["tests"]] == ["0", "1", "2", "0", "1", "2", "0"]
    assert cycled(p, 2).payload["tests"] == tests  # never fewer than the problem has
    assert first_test_only(p).payload["tests"] == tests[:1]
    assert p.payload["tests"] == tests  # the problem itself is unchanged
