"""The `codeforces` scorer in the real sandbox, both modes: C++ and Python programs, compile errors, a checker
accepting many answers (and a hostile output against it), an interactive problem (right, wrong, deadlocked), slow
and hostile programs. Checkers and interactors here are our own, written without testlib."""

from __future__ import annotations

from typing import Any

import pytest

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.codeforces import judge as judge_module
from reasoneval.scoring.programs.codeforces.judge import extract_program
from reasoneval.scoring.programs.scorer import sandbox_pool
from tests.scoring.programs.test_sandbox import _sandboxed_processes

SUM = [{"input": "2 3\n", "output": "5\n", "kind": "public"}, {"input": "-4 10\n", "output": "6\n", "kind": "official"},
       {"input": "1500000000 1500000000\n", "output": "3000000000\n", "kind": "official"}]
CPP_SUM = "#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n"
CPP_INT_OVERFLOW = "#include <cstdio>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a+b);}\n"

# any permutation of 1..n without a fixed point; the checker (testlib's protocol: input output answer; exit 0 OK,
# 1 wrong answer, 2 presentation error) reads the program's output as untrusted text
DERANGEMENT_TESTS = [{"input": "3\n", "output": "2 3 1\n", "kind": "official"},
                     {"input": "4\n", "output": "2 3 4 1\n", "kind": "official"}]
CHECKER = """import sys
n = int(open(sys.argv[1]).read())
try:
    got = [int(t) for t in open(sys.argv[2]).read().split()]
except ValueError:
    sys.exit(2)
ok = sorted(got) == list(range(1, n + 1)) and all(p != i + 1 for i, p in enumerate(got))
sys.exit(0 if ok else 1)
"""
# guess x in 1..100: "? y" is answered "<" (x < y), ">" or "="; "! y" ends it; at most 7 questions
GUESS_TESTS = [{"input": "37\n", "output": "", "kind": "official"}, {"input": "100\n", "output": "", "kind": "official"}]
INTERACTOR = """import sys
x = int(open(sys.argv[1]).read())
for q in range(8):
    line = sys.stdin.readline().split()
    if not line:
        sys.exit(1)
    y = int(line[1])
    if line[0] == "!":
        sys.exit(0 if y == x else 1)
    if q == 7:
        sys.exit(1)
    print("<" if x < y else ">" if x > y else "=", flush=True)
sys.exit(1)
"""
GUESS_RIGHT = """lo, hi = 1, 100
while True:
    mid = (lo + hi) // 2
    print("?", mid, flush=True)
    a = input().strip()
    if a == "=":
        print("!", mid, flush=True)
        break
    if a == "<":
        hi = mid - 1
    else:
        lo = mid + 1
"""


def problem(tests: list[dict[str, Any]], **extra: Any) -> Problem:
    return Problem(task="codeforces", id="p", problem="", answer="", key="k",
                   payload={"tests": tests, "mode": "stdin", "time_limit_s": 1.0, "memory_mb": 256, **extra})


RUNS = [0]  # sandbox runs of the last judge() call


def judge(p: Problem, texts: list[str], **settings: Any) -> list[dict[str, Any]]:
    with ScoringContext(workers=2) as ctx:
        scorer = create_scorer(TaskScoring("codeforces", {"calibrate": False, "wall_factor": 4.0, **settings}), ctx)
        pool = sandbox_pool(ctx)
        real = pool.run_many
        RUNS[0] = 0

        def counting(sources: Any, limits: Any = None, stdins: Any = None) -> Any:
            RUNS[0] += len(sources)
            return real(sources, limits, stdins)

        pool.run_many = counting  # type: ignore[method-assign]
        scores = scorer.score_many([p] * len(texts), [
            SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok", text=t)
            for i, t in enumerate(texts)])
    assert _sandboxed_processes() == [], "a process of a program outlived the judge"
    for s in scores:
        assert s.correct == (s.details["verdict"] == "passed")
    return [dict(s.details) for s in scores]


def fence(lang: str, code: str) -> str:
    return f"<think>plan</think>\n```{lang}\n{code}```\n"


def test_language_comes_from_the_fence() -> None:
    assert extract_program(fence("cpp", "int main(){}\n")) == ("cpp", "int main(){}")
    assert extract_program(fence("c++", "x\n"))[0] == "cpp"  # type: ignore[index]
    assert extract_program(fence("python", "print(1)\n")) == ("python", "print(1)")
    assert extract_program("```\nprint(1)\n```", "python") == ("python", "print(1)")
    assert extract_program("```\nint main(){}\n```", "cpp") == ("cpp", "int main(){}")
    # a block in another language is not a program: the last runnable one is taken
    assert extract_program("```cpp\nint main(){}\n```\n```text\noutput\n```") == ("cpp", "int main(){}")
    assert extract_program("```java\nclass A {}\n```") is None
    assert extract_program("<think>```python\nprint(1)\n```</think>no code") is None


def test_cpp_and_python_plain_problem(mode: str) -> None:
    got = judge(problem(SUM), [fence("cpp", CPP_SUM), fence("cpp", CPP_INT_OVERFLOW), fence("cpp", "int main( {\n"),
                               fence("python", "a, b = map(int, input().split())\nprint(a + b)\n"),
                               fence("python", "print(5)\n")])
    assert [d["verdict"] for d in got] == ["passed", "wrong_answer", "compile_error", "passed", "wrong_answer"]
    assert [d["language"] for d in got] == ["cpp", "cpp", "cpp", "python", "python"]
    assert got[1]["first_failure"] == {"index": 2, "kind": "official", "number": 1}  # int overflow on the third
    assert "error" in got[2]["detail"] and got[2]["tests_run"] == 0
    assert got[4]["first_failure"] == {"index": 1, "kind": "official", "number": 0}


def test_slow_crashing_and_memory_hungry_programs(mode: str) -> None:
    got = judge(problem(SUM[:1], time_limit_s=0.5), [
        fence("python", "while True:\n    pass\n"),
        fence("python", "import sys\nsys.stdin.read()\nraise SystemExit(3)\n"),
        fence("python", "x = bytearray(1 << 30)\n"),
        fence("python", "import time\ntime.sleep(60)\n"),
    ])
    assert [d["verdict"] for d in got] == ["time_limit", "runtime_error", "memory_limit", "time_limit"]
    assert "exit status 3" in got[1]["detail"] and "wall clock" in got[3]["detail"]


def test_checker_accepts_any_right_answer_and_contains_hostile_output(mode: str) -> None:
    p = problem(DERANGEMENT_TESTS, checker={"language": "python", "source": CHECKER})
    right_other = "n = int(input())\nprint(*([n] + list(range(1, n))))\n"  # 3 1 2: not the reference, still right
    fixed_point = "n = int(input())\nprint(*range(1, n + 1))\n"
    garbage = "import sys\nsys.stdout.write('\\x00' * 100000 + '\\n9' * 50000)\n"
    flood = "import sys\nsys.stdout.write('1 ' * 10 ** 7)\n"
    got = judge(p, [fence("python", right_other), fence("python", fixed_point), fence("python", garbage),
                    fence("python", flood)])
    assert [d["verdict"] for d in got] == ["passed", "wrong_answer", "wrong_answer", "wrong_answer"]
    assert got[2]["detail"].startswith("presentation error")
    assert RUNS[0] == 1  # the four samples of the problem in one sandbox, its checker built once


def test_broken_checker_is_a_judge_error_not_a_wrong_answer(mode: str) -> None:
    p = problem(DERANGEMENT_TESTS, checker={"language": "python", "source": "import sys\nsys.exit(3)\n"})
    got = judge(p, [fence("python", "print(2, 3, 1)\n")])
    assert got[0]["verdict"] == "judge_error" and "checker failed" in got[0]["detail"]


def test_interactive_problem(mode: str) -> None:
    p = problem(GUESS_TESTS, interactor={"language": "python", "source": INTERACTOR}, time_limit_s=0.5)
    wrong = "print('! 50', flush=True)\n"
    deadlock = "input()\n"  # waits for the interactor, which waits for a question: neither moves
    got = judge(p, [fence("python", GUESS_RIGHT), fence("python", wrong), fence("python", deadlock)])
    assert [d["verdict"] for d in got] == ["passed", "wrong_answer", "idleness_limit"]
    assert got[0]["tests_passed"] == 2 and "no progress" in got[2]["detail"]


def test_a_program_cannot_reach_its_judge(mode: str) -> None:
    hostile = ("import os, signal\nfor pid in range(1, 200):\n    try:\n        if pid != os.getpid():\n"
               "            os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\nos.killpg(0, 0)\nprint(5)\n")
    got = judge(problem(SUM), [fence("python", hostile)])
    # it killed what it could see (its own namespace's processes), never the judge: the verdict still comes
    assert got[0]["verdict"] == "wrong_answer" and got[0]["tests_passed"] == 1


CPP_CHECKER = r"""#include <cstdio>
#include <vector>
int main(int argc, char** argv) {
    if (argc < 4) return 3;
    FILE* in = fopen(argv[1], "r"); FILE* out = fopen(argv[2], "r");
    int n; if (fscanf(in, "%d", &n) != 1) return 3;
    std::vector<int> seen(n + 1, 0);
    for (int i = 1; i <= n; i++) {
        int p; if (fscanf(out, "%d", &p) != 1) return 2;
        if (p < 1 || p > n || seen[p] || p == i) return 1;
        seen[p] = 1;
    }
    int extra; return fscanf(out, "%d", &extra) == 1 ? 1 : 0;
}
"""


def test_a_cpp_checker_is_compiled_and_decides(mode: str) -> None:
    p = problem(DERANGEMENT_TESTS, checker={"language": "cpp", "source": CPP_CHECKER})
    got = judge(p, [fence("python", "n = int(input())\nprint(*([n] + list(range(1, n))))\n"),
                    fence("python", "n = int(input())\nprint(*range(1, n + 1))\n")])
    assert [d["verdict"] for d in got] == ["passed", "wrong_answer"]


def test_a_missing_compiler_is_a_setup_error_not_compile_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "GXX", "/nonexistent/g++")
    with pytest.raises(UserError, match="install g\\+\\+"):
        judge(problem(SUM), [fence("cpp", CPP_SUM)])
