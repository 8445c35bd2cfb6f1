"""The judge's own programs (a problem's checker, its interactor) are out of the candidate programs' reach: a program
runs in the same work folder as they do, so the driver seals them (the keeper holds their bytes and writes them back
only for their own runs). A program that replaces the checker, or looks for it, gets nothing from it. Both sandbox
modes; the checkers are our own."""

from __future__ import annotations

from tests.scoring.programs.test_codeforces_judge import (
    CHECKER,
    CPP_CHECKER,
    DERANGEMENT_TESTS,
    GUESS_TESTS,
    INTERACTOR,
    fence,
    judge,
    problem,
)

# replaces the judge's checker (the Python source, or the C++ binary) with one that accepts anything, then prints
# a wrong answer: with the checker reachable, this program (and every later one of the batch) would pass
REPLACE_PY = ("import os\np = '/tmp/judge/checker.py'\ntry:\n    os.remove(p)\nexcept OSError:\n    pass\n"
              "open(p, 'w').write('import sys\\nsys.exit(0)\\n')\nprint(1, 2, 3, 4, 5)\n")
REPLACE_BIN = ("import os\np = '/tmp/judge/checker'\ntry:\n    os.remove(p)\nexcept OSError:\n    pass\n"
               "open(p, 'w').write('#!/bin/sh\\nexit 0\\n')\nos.chmod(p, 0o755)\nprint(1, 2, 3, 4, 5)\n")
LOOK = "import os, sys\nsys.exit(' '.join(sorted(os.listdir('/tmp/judge'))))\n"  # the listing in the detail
WRONG = "print(1, 2, 3, 4, 5)\n"


def test_a_program_cannot_replace_or_read_the_checker(mode: str) -> None:
    py = judge(problem(DERANGEMENT_TESTS, checker={"language": "python", "source": CHECKER}),
               [fence("python", REPLACE_PY), fence("python", WRONG), fence("python", LOOK)])
    assert [d["verdict"] for d in py] == ["wrong_answer", "wrong_answer", "runtime_error"]
    assert "checker" not in py[2]["detail"] and "main.py" in py[2]["detail"]
    cpp = judge(problem(DERANGEMENT_TESTS, checker={"language": "cpp", "source": CPP_CHECKER}),
                [fence("python", REPLACE_BIN), fence("python", WRONG), fence("python", LOOK)])
    assert [d["verdict"] for d in cpp] == ["wrong_answer", "wrong_answer", "runtime_error"]
    assert "checker" not in cpp[2]["detail"]


def test_the_interactor_is_sealed_between_its_runs(mode: str) -> None:
    # a program that fails the first game after looking: the interactor is there only while a game is played
    p = problem(GUESS_TESTS, interactor={"language": "python", "source": INTERACTOR}, time_limit_s=0.5)
    replace = ("import os\np = '/tmp/judge/interactor.py'\nif os.path.exists(p):\n    os.remove(p)\n"
               "open(p, 'w').write('import sys\\nsys.exit(0)\\n')\nprint('! 1', flush=True)\n")
    got = judge(p, [fence("python", replace), fence("python", "print('! 1', flush=True)\n")])
    assert [d["verdict"] for d in got] == ["wrong_answer", "wrong_answer"]
