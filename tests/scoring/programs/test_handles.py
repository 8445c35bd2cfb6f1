"""No shared mode (issue 40): objects of the candidate's own classes stay in its process and the tests, on the
trusted side, hold handles to them. The three MBPP tasks that ran in the candidate's interpreter (mbpp-125,
mbpp-366, mbpp_sanitized-74) run on the trusted side: their reference programs pass, and the attacks that faked a
pass in shared mode fail, in both sandbox modes. A class whose methods a test calls in sequence (a LeetCode
"design" problem's shape) works through handles, and no method of the candidate's decides a comparison."""

from __future__ import annotations

import builtins
import functools
from pathlib import Path

import pytest

from reasoneval.records import Problem
from reasoneval.scoring.programs.scorer import build_program
from reasoneval.tasks.keys import problem_key
from reasoneval.tasks.loading import load_task
from tests.scoring.programs.judging import fenced, score_counting_runs

FORMERLY_SHARED = {"mbpp": ["mbpp-125", "mbpp-366"], "mbpp_sanitized": ["mbpp_sanitized-74"]}


@functools.cache
def _formerly_shared(data_dir: Path) -> dict[str, Problem]:
    out = {}
    for task, ids in FORMERLY_SHARED.items():
        for p in load_task(task, data_dir=data_dir)[1]:
            if p.id in ids:
                out[p.id] = p
    assert sorted(out) == sorted(i for ids in FORMERLY_SHARED.values() for i in ids)
    return out


@pytest.fixture
def formerly_shared(real_data_dir: Path) -> dict[str, Problem]:
    return _formerly_shared(real_data_dir)


@pytest.mark.real_data("mbpp.jsonl", "mbpp_sanitized.jsonl")
def test_every_mbpp_task_runs_its_tests_on_the_trusted_side(real_data_dir: Path) -> None:
    """Every MBPP task's tests go to the trusted interpreter: the candidate's module is its code alone (no test,
    no set-up in it), the names the tests use of it are proxies, and mbpp-366's set-up runs with Node a proxy."""
    for task in FORMERLY_SHARED:
        for p in load_task(task, data_dir=real_data_dir)[1]:
            prog = build_program(p, fenced(str(p.payload["code"])))
            assert prog is not None
            assert not any(t in prog.code for t in prog.tests), p.id
            if p.payload.get("test_setup_code"):
                assert prog.setup == p.payload["test_setup_code"] and prog.setup not in prog.code, p.id
            if p.id in ("mbpp-125", "mbpp_sanitized-74"):
                assert prog.proxies == ("sum",) and "sum" in dir(builtins)
            if p.id == "mbpp-366":
                assert set(prog.proxies) == {"Node", "is_tree_balanced"} and "Node(1)" in prog.setup


BALANCED_WRONG = ("class Node:\n    def __init__(self, data):\n        self.data = data\n        self.left = None\n"
                  "        self.right = None\n")


def _attacks(p: Problem) -> dict[str, str]:
    """The shared mode's attacks, aimed at these tasks: each faked a pass when the tests ran in the candidate's
    interpreter."""
    sum_task = p.id != "mbpp-366"
    name = "sum" if sum_task else "is_tree_balanced"
    args = "a, b" if sum_task else "root"
    head = "" if sum_task else BALANCED_WRONG
    return {
        "always_equal": fenced(head + "class AE:\n    def __eq__(self, other):\n        return True\n"
                               "    __ne__ = lambda self, other: False\n    __bool__ = lambda self: True\n"
                               "    __hash__ = lambda self: 0\n"
                               f"def {name}({args}):\n    return AE()\n"),
        "builtins_patched": fenced(head + "import builtins\n"
                                   "builtins.AssertionError = type('Never', (BaseException,), {})\n"
                                   "builtins.sum = lambda *a, **k: 6\nbuiltins.exec = lambda *a, **k: None\n"
                                   f"def {name}({args}):\n    return None\n"),
        # the shared mode's report, written at import to every descriptor, then the end of the process
        "forged_reports": fenced(head + "import os, json, struct\n"
                                 "for frame in [{'loaded': True}] + [{'test': True}] * 3 + [{'value': True}] * 9:\n"
                                 "    data = json.dumps(frame).encode()\n"
                                 "    for fd in range(3, 64):\n"
                                 "        try:\n            os.write(fd, struct.pack('>I', len(data)) + data)\n"
                                 "        except OSError:\n            pass\n"
                                 "os._exit(0)\n"
                                 f"def {name}({args}):\n    return None\n"),
        "stop_iteration": fenced(head + f"def {name}({args}):\n    raise StopIteration\n"),
        "exit_in_the_call": fenced(head + f"def {name}({args}):\n    import sys\n    sys.exit(0)\n"),
        # the tests and their expected values are nowhere in the candidate's process to be read
        "reads_its_memory": fenced(head + "import gc\n"
                                   f"def {name}({args}):\n"
                                   "    texts = [o for o in gc.get_objects() if isinstance(o, str) and 'assert' in o]\n"
                                   "    return texts[0] if texts else None\n"),
        "its_own_object_returned": fenced(head + "class T:\n    pass\n" + f"def {name}({args}):\n    return T()\n"),
    }


@pytest.mark.real_data("mbpp.jsonl", "mbpp_sanitized.jsonl")
@pytest.mark.parametrize("pid", ["mbpp-125", "mbpp-366", "mbpp_sanitized-74"])
def test_the_formerly_shared_tasks_pass_their_reference_and_fail_the_attacks(mode: str, pid: str,
                                                                             formerly_shared: dict[str, Problem]) -> None:
    p = formerly_shared[pid]
    attacks = _attacks(p)
    names = list(attacks)
    texts = [attacks[n] for n in names] + [fenced(str(p.payload["code"]))]
    scores, runs = score_counting_runs([p] * len(texts), texts)
    got = {n: s.details["result"] for n, s in zip(names, scores)}
    assert [n for n, s in zip(names, scores) if s.correct] == [], got
    assert [n for n, r in got.items() if r.startswith("harness_error") or r == "sandbox_error"] == [], got
    assert scores[-1].correct, scores[-1].details  # the reference program passes
    assert runs == len(texts)


def _design_problem() -> Problem:
    """An MBPP-shaped problem whose tests drive an object of the candidate's class (a LeetCode design problem's
    shape): methods in sequence, attributes read and set, the same object twice, len, iteration, indexing, str."""
    reference = ("class Bag:\n    def __init__(self):\n        self.items = []\n        self.last = None\n"
                 "    def add(self, x):\n        self.items.append(x)\n        self.last = self\n        return len(self.items)\n"
                 "    def __len__(self):\n        return len(self.items)\n    def __iter__(self):\n        return iter(self.items)\n"
                 "    def __getitem__(self, i):\n        return self.items[i]\n    def __str__(self):\n"
                 "        return 'Bag(%d)' % len(self.items)\n")
    tests = ["b = Bag()\nassert b.add(3) == 1 and b.add(5) == 2\nassert b.items == [3, 5]",
             "b = Bag()\nb.add(1)\nassert b.last is b and len(b) == 1 and list(b) == [1] and b[0] == 1",
             "b = Bag()\nb.tag = 'x'\nassert b.tag == 'x' and str(b) == 'Bag(0)' and b != Bag()"]
    text = "\n".join(tests)
    return Problem(task="mbpp", id="issue40-design", problem=text, answer="", key=problem_key(text, reference),
                   payload={"code": reference, "test_list": tests, "test_setup_code": ""})


def test_a_class_driven_by_the_tests_works_through_handles(mode: str) -> None:
    p = _design_problem()
    right = fenced(str(p.payload["code"]))
    always_equal = fenced("class Bag:\n    def __init__(self):\n        self.items = []\n"
                          "    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return False\n"
                          "    def add(self, x):\n        return self\n")
    wrong = fenced(str(p.payload["code"]).replace("return len(self.items)\n    def __len__", "return 0\n    def __len__"))
    scores, runs = score_counting_runs([p] * 3, [right, always_equal, wrong])
    results = [(s.details["result"], s.details["tests_passed"]) for s in scores]
    assert results == [("passed", 3), ("failed", 0), ("failed", 2)], [s.details for s in scores]
    assert runs == 3
