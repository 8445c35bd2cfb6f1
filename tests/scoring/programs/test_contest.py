"""The `contest` scorer in the real sandbox (both modes): stdin/stdout scripts and LeetCode calls, each failure
class, the first failing test, lcb_runner's comparison, and hostile programs contained."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import CONTEST_RUNS_FILE
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.contest import LCB_IMPORTS, extract_last_block
from reasoneval.scoring.programs.sandbox.stdio_driver import compare_lcb, compare_tokens

SUM_TESTS = [{"input": "1 2\n", "output": "3\n", "kind": "public"},
             {"input": "10 20\n", "output": "30\n", "kind": "private"},
             {"input": "5 5\n", "output": "10\n", "kind": "private"}]
TAKE_TESTS = [{"input": "[1, 2, 3]\n2", "output": "[1, 2]", "kind": "public"},
              {"input": "[5, 6]\n0", "output": "[]", "kind": "private"}]
SUM = "a, b = map(int, input().split())\nprint(a + b)\n"


def problem(tests: list[dict[str, Any]], mode: str = "stdin", func: str | None = None, **extra: Any) -> Problem:
    return Problem(task="t", id=f"p{len(tests)}{mode}", problem="", answer="", key=f"k{len(tests)}{mode}",
                   payload={"tests": tests, "mode": mode, "func_name": func, **extra})


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\nDone."


def score(p: Problem, codes: list[str], tmp: Path | None = None, raw: bool = False, **settings: Any) -> list[Any]:
    """Score each code (put in a fenced block, unless `raw`: the response as given)."""
    settings = {"time_limit_s": 1.0, **settings}
    with ScoringContext(workers=2, cache_dir=tmp) as ctx:
        scorer = create_scorer(TaskScoring("contest", settings), ctx)
        samples = [SampleRecord(task="t", problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok",
                                text=c if raw else fenced(c)) for i, c in enumerate(codes)]
        return scorer.score_many([p] * len(codes), samples)


def verdicts(scores: list[Any]) -> list[str]:
    return [s.details["verdict"] for s in scores]


def test_extraction_is_lcb_runners_last_block() -> None:
    text = "```python\nfirst\n```\ntext\n```python\nsecond\nline\n```"
    assert extract_last_block(text) == "second\nline"
    assert extract_last_block("no code") is None
    assert extract_last_block("```python\nunclosed") is None  # fewer than two fence lines, as lcb_runner
    assert extract_last_block("<think>```python\nx\n```</think>answer") is None  # reasoning is not code


def test_comparison_is_lcb_runners() -> None:
    assert compare_lcb("3\n", "3") and compare_lcb("  3  \n\n", "3\n")
    assert compare_lcb("30.0\n", "30") and compare_lcb("1 2.50\n", "1 2.5")
    assert not compare_lcb("3\n\n4", "3\n4")  # a blank line inside counts
    assert not compare_lcb("Yes", "YES")  # case-sensitive
    assert not compare_lcb("0.3333333", "0.3333334")  # no tolerance beyond Decimal equality
    assert not compare_lcb("1 2", "1\n2")
    assert not compare_lcb("a  b", "a b")  # spaces inside a line of words count (lcb_runner's rule)
    assert compare_tokens("1 2\n3", "1\n2 3") and compare_tokens("0.3333333", "0.3333334")
    assert not compare_tokens("2 1", "1 2")  # order kept (SkyThought's unordered token sets are not applied)


@pytest.mark.usefixtures("mode")
def test_real_script_features_pass() -> None:
    p = problem(SUM_TESTS)
    codes = [SUM,
             "import sys\na, b = map(int, sys.stdin.buffer.read().split())\nprint(a + b)",
             "a, b = map(int, open(0).read().split())\nprint(a + b)",
             "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n\nif __name__ == '__main__':\n    main()",
             "total = 0\ndef add():\n    global total\n    total = sum(map(int, input().split()))\nadd()\nprint(total)",
             SUM + "exit()",
             "import sys\n" + SUM + "sys.exit(0)",
             "import threading\ndef main():\n    a, b = map(int, input().split())\n    print(a + b)\n"
             "threading.Thread(target=main).start()",
             "print(sum(map(int, input().split())), end='')",  # no final newline
             "print(sum(map(int, input().split())))\nprint()\nprint('   ')",  # trailing blank lines are stripped
             "print(float(sum(map(int, input().split()))))",  # 3.0 = 3 as Decimal
             "x = [heappush, defaultdict, List]\n" + SUM,  # lcb_runner's import header is there
             ]
    scores = score(p, codes)
    assert verdicts(scores) == ["passed"] * len(codes)
    assert all(s.correct and s.details["tests_passed"] == 3 for s in scores)


@pytest.mark.usefixtures("mode")
def test_each_failure_class_and_the_first_failing_test(tmp_path: Path) -> None:
    p = problem(SUM_TESTS)
    codes = {
        "wrong_answer": "a, b = map(int, input().split())\nprint(a + b if a < 5 else a + b + 1)",
        "time_limit": "a, b = map(int, input().split())\nwhile a < 10 ** 18:\n    a += 1",
        "memory_limit": "x = [0] * (10 ** 10)",
        "runtime_error": SUM + "raise ValueError('boom')",
        "syntax": "def f(:\n    pass",
        # legal at the top of a file, but the program follows lcb_runner's import header: a syntax error there
        "future": "from __future__ import annotations\n" + SUM,
        "sleep": "import time\ntime.sleep(60)",
    }
    scores = score(p, list(codes.values()), tmp_path)
    got = dict(zip(codes, scores))
    assert got["wrong_answer"].details["verdict"] == "wrong_answer"
    assert got["wrong_answer"].details["first_failure"] == {"index": 1, "kind": "private", "number": 0}
    assert got["wrong_answer"].details["tests_passed"] == 1 and got["wrong_answer"].details["tests_run"] == 2
    assert got["time_limit"].details["verdict"] == "time_limit" and got["time_limit"].status == "timeout"
    assert got["time_limit"].details["cpu_s"] >= got["time_limit"].details["cpu_limit_s"]
    assert got["memory_limit"].details["verdict"] == "memory_limit"
    assert got["runtime_error"].details["verdict"] == "runtime_error"
    assert "ValueError: boom" in got["runtime_error"].details["detail"]
    assert got["syntax"].details["verdict"] == "runtime_error" and "SyntaxError" in got["syntax"].details["detail"]
    # the line of the whole program (the header's lines, then the program's), as compiling it whole names it
    header_lines = LCB_IMPORTS.count("\n") + 1
    assert f"line {header_lines + 1}" in got["syntax"].details["detail"], got["syntax"].details["detail"]
    assert got["future"].details["verdict"] == "runtime_error"
    assert "from __future__ imports must occur at the beginning" in got["future"].details["detail"]
    assert got["sleep"].details["verdict"] == "time_limit"  # waiting: the wall-clock guard
    assert all(got[k].details["first_failure"]["index"] == 0 for k in codes if k != "wrong_answer")
    no_code = score(p, ["I cannot solve this."], raw=True)[0]
    assert no_code.details["verdict"] == "no_code" and no_code.status == "no_answer"
    # cached: the same programs are not run again (contest_runs.jsonl)
    lines = (tmp_path / CONTEST_RUNS_FILE).read_text().splitlines()
    assert len(lines) == len(codes)
    again = score(p, list(codes.values()), tmp_path)
    assert verdicts(again) == verdicts(scores)
    assert len((tmp_path / CONTEST_RUNS_FILE).read_text().splitlines()) == len(codes)


@pytest.mark.usefixtures("mode")
def test_all_tests_flag_runs_past_the_first_failure() -> None:
    p = problem(SUM_TESTS)
    wrong_once = "a, b = map(int, input().split())\nprint(a + b + (a == 10))"
    first = score(p, [wrong_once])[0]
    every = score(p, [wrong_once], all_tests=True)[0]
    assert first.details["tests_run"] == 2 and every.details["tests_run"] == 3
    assert every.details["tests_passed"] == 2 and every.details["first_failure"]["index"] == 1
    assert not every.correct


@pytest.mark.usefixtures("mode")
def test_call_based_solutions() -> None:
    p = problem(TAKE_TESTS, mode="call", func="takeK")
    codes = {
        "class": "class Solution:\n    def takeK(self, nums: List[int], k: int) -> List[int]:\n        return nums[:k]",
        "tuple": "class Solution:\n    def takeK(self, nums, k):\n        return tuple(nums[:k])",
        "function": "def takeK(nums, k):\n    return nums[:k]",
        "main_block": "class Solution:\n    def takeK(self, nums, k):\n        return nums[:k]\n"
                      "if __name__ == '__main__':\n    print(input())",
        "wrong": "class Solution:\n    def takeK(self, nums, k):\n        return nums[:k + 1]",
        "nested_list": "class Solution:\n    def takeK(self, nums, k):\n        return nums[:k] if k else [[]]",
        "always_equal": "class E:\n    def __eq__(self, o):\n        return True\n"
                        "class Solution:\n    def takeK(self, nums, k):\n        return E()",
        "runtime_error": "class Solution:\n    def takeK(self, nums, k):\n        return nums[10]",
        "time_limit": "class Solution:\n    def takeK(self, nums, k):\n        while True:\n            pass",
        "missing": "class Solution:\n    def other(self, nums, k):\n        return nums[:k]",
    }
    got = dict(zip(codes, score(p, list(codes.values()))))
    assert {k: s.details["verdict"] for k, s in got.items()} == {
        "class": "passed", "tuple": "passed", "function": "passed", "main_block": "passed",
        "wrong": "wrong_answer", "nested_list": "wrong_answer", "always_equal": "wrong_answer",
        "runtime_error": "runtime_error", "time_limit": "time_limit", "missing": "runtime_error"}
    assert got["nested_list"].details["first_failure"] == {"index": 1, "kind": "private", "number": 0}
    # a nested tuple is not a list (lcb_runner turns only the top-level tuple into a list)
    pairs = problem([{"input": "[1, 2]", "output": "[[1, 2]]", "kind": "public"}], mode="call", func="pair")
    nested = score(pairs, ["def pair(a):\n    return [tuple(a)]", "def pair(a):\n    return ([a[0], a[1]],)"])
    assert verdicts(nested) == ["wrong_answer", "passed"]
    assert "IndexError" in got["runtime_error"].details["detail"]


@pytest.mark.usefixtures("mode")
def test_hostile_programs_are_contained(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    os.chmod(tmp_path, 0o755)
    os.chmod(secret, 0o644)
    # 128 MiB, not the default 1 GiB: filling 1 GiB of 16 MiB blocks took over the CPU limit on a loaded CI machine
    # (the verdict was time_limit, which was then right), and 256 MiB did twice in a slow half hour of a VM whose
    # calibrated limit is under 0.5 s (every page is a fault there: ~3 us each)
    p = problem(SUM_TESTS, memory_mb=128)
    hostile = {
        "fork_bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "fill_memory": "x = []\nwhile True:\n    x.append(bytearray(1 << 24))",
        "write_host_file": f"open({str(tmp_path / 'planted')!r}, 'w').write('x')\n" + SUM,
        "read_secret": f"print(open({str(secret)!r}).read())",
        # state kept in /tmp for the next test: the keeper empties the scratch directories between tests
        "keep_state": "import os\nseen = os.listdir('/tmp')\nopen('/tmp/mark', 'w').write('1')\n"
                      "a, b = map(int, input().split())\nprint(a + b + len(seen))",
        # a child left running to disturb the next test: killed between tests
        "linger": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(30)\n    os._exit(0)\n" + SUM,
        "print_forever": "while True:\n    print('x' * 1000)",
    }
    got = dict(zip(hostile, score(p, list(hostile.values()))))
    assert got["fork_bomb"].details["verdict"] in ("time_limit", "runtime_error")
    assert got["fill_memory"].details["verdict"] == "memory_limit", got["fill_memory"].details
    assert not (tmp_path / "planted").exists() and got["write_host_file"].details["verdict"] == "runtime_error"
    assert got["read_secret"].details["verdict"] in ("runtime_error", "wrong_answer")
    assert got["keep_state"].details["verdict"] == "passed"  # every test saw an empty /tmp
    assert got["linger"].details["verdict"] == "passed"
    assert got["print_forever"].details["verdict"] in ("wrong_answer", "time_limit")
    assert not any(s.correct for k, s in got.items() if k not in ("keep_state", "linger"))


@pytest.mark.usefixtures("mode")
def test_tests_expected_outputs_are_out_of_reach() -> None:
    """The program cannot find the expected outputs: not in its process, not in the keeper's memory (which never
    holds them), not in any file it can read. A reader that greps every readable place for the second test's
    expected output, and prints it if found, fails."""
    tests = [{"input": "1\n", "output": "424242\n", "kind": "public"}]
    reader = ("import glob, os, stat\nwant = str(400000 + 24242).encode()\nfound = None\n"
              "for path in glob.glob('/proc/*/*') + glob.glob('/proc/*/fd/*') + glob.glob('/tmp/*'):\n"
              "    try:\n        if not stat.S_ISREG(os.stat(path).st_mode):\n            continue\n"
              "        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)\n        data = os.read(fd, 1 << 22)\n"
              "        os.close(fd)\n    except Exception:\n        continue\n"
              "    if want in data:\n        found = path\n        break\n"
              "print(want.decode() if found else 'none')")
    planted = "open('/tmp/planted', 'w').write(str(400000 + 24242))\n" + reader  # a control: the reader works
    s, control = score(problem(tests), [reader, planted])
    assert s.details["verdict"] == "wrong_answer"
    assert control.details["verdict"] == "passed"


@pytest.mark.usefixtures("mode")
def test_problem_limits_are_used() -> None:
    busy = "a, b = map(int, input().split())\nx = 0\nfor i in range(3 * 10 ** 6):\n    x += i\nprint(a + b)"
    slow = problem(SUM_TESTS[:1], time_limit_s=0.05)
    roomy = problem(SUM_TESTS[:1], time_limit_s=10.0)
    assert score(slow, [busy], calibrate=False)[0].details["verdict"] == "time_limit"
    assert score(roomy, [busy], calibrate=False)[0].details["verdict"] == "passed"
    tight = problem(SUM_TESTS[:1], memory_mb=64)
    assert score(tight, ["x = bytearray(200 << 20)\n" + SUM])[0].details["verdict"] == "memory_limit"
    assert score(problem(SUM_TESTS[:1], memory_mb=512), ["x = bytearray(200 << 20)\n" + SUM])[0].correct


def test_details_are_json() -> None:
    s = score(problem(SUM_TESTS), ["print(1)"])[0]
    json.dumps(s.details)
