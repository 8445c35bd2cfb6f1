"""bench/contest_speed.py's programs measure the judge, not luck: each passes every test of its own problem in our
real sandbox (so no early stop shortens a side's work) and fails another problem's tests; the test lists it times
are the problem's own, cycled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench.contest_speed import (
    call_program,
    cycled,
    first_test_only,
    header_names_used,
    load_problems,
    response,
    stdin_program,
)

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import ScoringContext
from reasoneval.scoring.programs.contest import ContestScorer

BENCH = Path(__file__).resolve().parents[3] / "bench"


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


def test_the_fork_floor_runs_every_test_in_a_fresh_process_of_its_own(tmp_path: Path) -> None:
    """bench/fork_floor.py, the floor the speed bench prints beside both judges, runs each test (its input on stdin)
    in a process of its own, forked from a process that holds the header's names the program uses (as the bench's
    scan of the program gives them, as our lean keeper does): the programs' pids, one a test, are all different."""
    log = tmp_path / "pids"
    program = f"import os\nline = input()\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}} {{line}} {{pi > 3}}\\n')\n"
    io = json.dumps({"inputs": ["a\n", "b\n", "c\n"], "outputs": ["", "", ""]})
    texts = [[0, response(program)], [0, response(program)]]
    names = header_names_used([(0, t) for _, t in texts])
    assert names[0] == [["input", "builtins", "input"], ["open", "builtins", "open"], ["pi", "math", "pi"]]
    spec = {"problems": [{"input_output": io}], "programs": texts, "preload": ["math"], "names": names}
    (tmp_path / "in.json").write_text(json.dumps(spec))
    subprocess.run([sys.executable, "-I", str(BENCH / "fork_floor.py"), str(tmp_path / "in.json"),
                    str(tmp_path / "out.json")], check=True)
    rows = [line.split() for line in log.read_text().splitlines()]
    assert [r[1:] for r in rows] == [["a", "True"], ["b", "True"], ["c", "True"]] * 2  # `pi`: the header's
    assert len({r[0] for r in rows}) == 6 and json.loads((tmp_path / "out.json").read_text())["tests"] == 6


def test_the_sample_keeper_loop_bench_measures_the_forker() -> None:
    """bench/sample_keeper_loop.py runs the keeper's own text on the programs' interpreter, one sample, each test's
    program right (the loop stops otherwise): with the forker the sample keeper forks nothing and takes no page fault a
    test, the forker takes a few dozen; without it the sample keeper takes them, ~180 a test."""
    from bench.sample_keeper_loop import PROGRAM, run

    from reasoneval.scoring.programs.contest import BASE_PRELOAD, LCB_IMPORTS, PRELOAD
    from reasoneval.scoring.programs.sandbox.interpreter import default_python

    rows = {}
    for forker in (True, False):
        rows[forker] = run(default_python(True), {
            "forker": forker, "cold_capset": False, "lean": True, "header": LCB_IMPORTS, "preload": list(PRELOAD),
            "base": list(BASE_PRELOAD), "program": PROGRAM, "input": "1 2 3\n", "tests": 200})
    assert rows[True]["keeper_faults"] < 5 and 10 < rows[True]["forker_faults"] < 100
    assert rows[False]["keeper_faults"] > 50 and rows[False]["forker_faults"] == 0
    assert all(r["test_faults"] > 50 and r["machine_us"] > 0 for r in rows.values())
