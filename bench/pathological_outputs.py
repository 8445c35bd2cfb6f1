"""Every parser of model output that runs in the harness process, on adversarial responses of 1 MB.

Degenerate outputs are common in reasoning-model runs (a model looping on blank lines, fences or
`\\boxed{` until max_tokens). A parser that is quadratic on one of them stalls the whole harness, with no
time limit, so each must stay linear. Per (input, parser): the time at 1 MB, the time at 100 KB, their
ratio (about 10 when linear, about 100 when quadratic), and the ratio against a plain `str.split()` pass
over the same 1 MB text (the reference, measured in the same run). Exits 1 when one takes over 1 s.

    PYTHONPATH=src python bench/pathological_outputs.py              # 1 MB and 100 KB inputs
    PYTHONPATH=src python bench/pathological_outputs.py --size 200000

The program of an unfenced HumanEval answer is found with at most three parses in a worker killed past its
budget (scoring/programs/unfenced.py): "code: unfenced answer" times that call as the code scorer makes it, the
transfer, the parses and a worker killed at the budget included (an answer past it raises ParseBudgetExceeded:
that sample's harness_error); "stop boundaries, none parses" and "f-string fields" are the inputs built for the
prefix loop it replaces (up to 320 parses: 70 s for 127 KiB) and for CPython's quadratic f-string parser.

The math grader's equivalence check (normalisation, LaTeX parsing) runs in worker processes under a
per-item timeout (scoring/maths/pool.py): bounded in time, so it is not listed here; the math grader's harness-side
steps are (extraction, `answer_key` for maj@k, `cheap_compare`).

IFEval's checkers (if-verifiable's port of Google's, strict and loose, with linear versions of the three
quadratic ones: scoring/ifeval/worker.py) run in worker interpreters under a timeout, a slow response timed out alone
(scoring/ifeval/scorer.py). `--ifeval` times every instruction's checker on every input (in this process, at `--size`;
NLTK's tokenizer takes seconds at 1 MB):

    PYTHONPATH=src python bench/pathological_outputs.py --ifeval --size 100000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT / "src"), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from reasoneval.scoring import ScoringContext  # noqa: E402
from reasoneval.scoring.lmeval import ExactMatchScorer, FlexibleExtractScorer, StrictMatchScorer, gsm8k_normalize  # noqa: E402
from reasoneval.scoring.lmeval_minerva import normalize_final_answer  # noqa: E402
from reasoneval.scoring.maths.extract import extract_answer, last_boxed  # noqa: E402
from reasoneval.scoring.maths.pool import GradingPool  # noqa: E402
from reasoneval.scoring.programs.scorer import extract_code, strip_reasoning  # noqa: E402
from reasoneval.scoring.programs.unfenced import PARSE_BUDGET_S, ParseBudgetExceeded, UnfencedParser  # noqa: E402

LIMIT_S = 1.0


def _repeat(unit: str, head: str = "", tail: str = "") -> Callable[[int], str]:
    """size -> head + unit repeated + tail, about `size` characters."""
    return lambda size: head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


# name -> size -> text
INPUTS: dict[str, Callable[[int], str]] = {
    "blank lines": _repeat("\n"),
    "blank lines in a fence": _repeat("\n", "```python\n", "\n```"),
    "blank lines in an unclosed fence": _repeat("\n", "```python\ndef f(x):\n"),
    "indented blank lines in a fence": _repeat("    \n", "```python\n"),
    "``` on one line": _repeat("```"),
    "``` lines": _repeat("```\n"),
    "```python fences": _repeat("```python\ndef f():\n```\n"),
    "def without (": _repeat("def f\n", "```python\n"),
    "def then spaces": _repeat(" ", "```python\ndef "),
    "\\boxed{ repeated": _repeat("\\boxed{"),
    "\\boxed{ nested, closed": lambda n: "\\boxed{" * (n // 16) + "}" * (n // 16),
    "\\boxed{} repeated": _repeat("\\boxed{1} "),
    "deep braces": lambda n: "\\boxed{" + "{" * (n // 2) + "}" * (n // 2) + "}",
    "unclosed braces": _repeat("{", "\\boxed{"),
    "long digit run": _repeat("1"),
    "digits and commas": _repeat("1,"),
    "digits and dots": _repeat("1."),
    "#### run": _repeat("#### 1"),
    "many </think>": _repeat("</think>"),
    "many <think>": _repeat("<think>"),
    "<answer> unclosed": _repeat("<answer>"),
    "$ signs": _repeat("$"),
    "$ then text": _repeat("a", "$"),
    "\\( unclosed": _repeat("\\("),
    "\\[ unclosed": _repeat("\\["),
    "** bold": _repeat("**"),
    "answer is repeated": _repeat("The answer is "),
    "answer option option": _repeat("option ", "The answer is "),
    "answer then blanks": _repeat(" ", "The answer is", "x"),
    "Final Answer repeated": _repeat("Final Answer: The final answer is ", tail="\nx"),
    "\\text{ unclosed": _repeat("\\text{", "$"),
    "frac repeated": _repeat("\\frac{1}{2}"),
    "spaces": _repeat(" "),
    "words": _repeat("the sum is "),
    "[BEGIN] and [DONE]": _repeat("[BEGIN]\n[DONE]"),
    "stop boundaries, none parses": _repeat("\n#\ndef f(:\n", "    return (\n"),
    "f-string fields": _repeat("{x}", "    return f'", "'\n"),
    "code lines": _repeat("    x = x + 1\n", "    x = 0\n", "    return x\n"),
}

_POOL = GradingPool(workers=1)
_STRICT = StrictMatchScorer(ScoringContext())
_FLEX = FlexibleExtractScorer(ScoringContext())
_MINERVA = ExactMatchScorer(ScoringContext())


_UNFENCED = UnfencedParser()
_PROMPT = 'def f(x):\n    """A HumanEval-like prompt."""\n'


def _unfenced(text: str) -> object:
    try:
        return _UNFENCED.code(_PROMPT, text, "f")
    except ParseBudgetExceeded:
        return None  # (the code scorer's harness_error for that sample)


def _exact_match(text: str) -> object:
    a = _MINERVA.extract(text)
    return normalize_final_answer(a) if a is not None else None


def _strict(text: str) -> object:
    a = _STRICT.extract(text)
    return gsm8k_normalize(a) if a is not None else None


def _flexible(text: str) -> object:
    a = _FLEX.extract(text)
    return gsm8k_normalize(a) if a is not None else None


# Parsers run under a time budget rather than in linear time (CPython's own parser is quadratic on some inputs,
# e.g. many f-string fields): name -> the budget in seconds. Past it the answer is that sample's harness_error.
BOUNDED: dict[str, float] = {"code: unfenced answer (worker, 0.5 s)": PARSE_BUDGET_S}

# name -> parser (each as the scorers call it, on the whole response)
PARSERS: dict[str, Callable[[str], object]] = {
    "code: extract_code": lambda t: extract_code(t),
    "code: extract_code(entry)": lambda t: extract_code(t, "f"),
    "code: strip_reasoning": strip_reasoning,
    "code: unfenced answer (worker, 0.5 s)": _unfenced,
    "math: extract_answer": lambda t: extract_answer(t, "math"),
    "math: extract_answer(truncated)": lambda t: extract_answer(t, "math", truncated=True),
    "choice: extract_answer": lambda t: extract_answer(t, "choice"),
    "math: last_boxed": last_boxed,
    # the grading pool's harness-side steps on an extracted answer (a whole response here): maj@k's answer
    # keys and the cheap comparisons before a worker is asked (an over-long answer never reaches a worker)
    "math: maj@k keys (cluster_many)": lambda t: _POOL.cluster_many([([t, "12", t], "math")]),
    "math: equivalent_many": lambda t: _POOL.equivalent_many([(t, "12", "math", None)]),
    "lm-eval: strict_match": _strict,
    "lm-eval: flexible_extract": _flexible,
    "lm-eval: exact_match (minerva)": _exact_match,
    "lm-eval: gsm8k_normalize": gsm8k_normalize,
    "lm-eval: normalize_final_answer": normalize_final_answer,
}


def best_time(f: Callable[[str], object], text: str, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(text)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1_000_000, help="characters per input (default 1 MB)")
    ap.add_argument("--ifeval", action="store_true", help="time IFEval's checkers instead (needs the ifeval extra "
                    "and $REASONEVAL_DATA_DIR/ifeval.jsonl for each instruction's arguments)")
    a = ap.parse_args()
    if a.ifeval:
        return ifeval_main(a.size)
    worst = 0.0
    slowest: dict[str, tuple[float, float, float, str]] = {}  # parser -> (1x s, 0.1x s, vs split, input)
    print(f"{'input':34} {'parser':34} {'1x s':>8} {'0.1x s':>8} {'growth':>7} {'vs split':>9}")
    for in_name, make in INPUTS.items():
        big, small = make(a.size), make(a.size // 10)
        ref = best_time(str.split, big, 3)
        for p_name, parse in PARSERS.items():
            t_small = best_time(parse, small, 2)
            t_big = best_time(parse, big, 1)
            worst = max(worst, t_big)
            if t_big > slowest.get(p_name, (-1.0,))[0]:
                slowest[p_name] = (t_big, t_small, t_big / max(ref, 1e-6), in_name)
            flag = "  OVER 1 s" if t_big > LIMIT_S else ""
            print(f"{in_name:34} {p_name:34} {t_big:8.4f} {t_small:8.4f} {t_big / max(t_small, 1e-6):7.1f} "
                  f"{t_big / max(ref, 1e-6):9.1f}{flag}", flush=True)
    print(f"\n{'parser':38} {'slowest input':34} {'1x s':>8} {'0.1x s':>8} {'vs split':>9}")
    for p_name, (t_big, t_small, vs, in_name) in slowest.items():
        print(f"{p_name:38} {in_name:34} {t_big:8.3f} {t_small:8.4f} {vs:9.0f}")
    print(f"\nslowest: {worst:.3f} s at {a.size} characters (limit {LIMIT_S} s)")
    return 0 if worst <= LIMIT_S else 1


def ifeval_main(size: int) -> int:
    """Per input the slowest IFEval instruction's check (strict and loose, as a worker does), the time of
    `str.split` on the same text as the reference; exits 1 when one takes over 1 s."""
    import json
    import os

    from reasoneval.scoring.ifeval.worker import check_items, init_checkers

    init_checkers()
    # each instruction with the arguments of its first use in the data set
    examples: dict[str, tuple[str, dict[str, object]]] = {}
    with open(Path(os.environ.get("REASONEVAL_DATA_DIR", ".")) / "ifeval.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            for i, iid in enumerate(row["instruction_id_list"]):
                examples.setdefault(iid, (row["prompt"], row["kwargs"][i]))
    worst = 0.0
    print(f"{'input':34} {'slowest instruction':45} {'s':>8} {'vs split':>9} {'over 1 s':>8}")
    for in_name, make in INPUTS.items():
        text = make(size)
        ref = best_time(str.split, text, 3)
        times = []
        for iid, (prompt, kw) in examples.items():
            t0 = time.perf_counter()
            check_items([(prompt, [iid], [kw], text)])
            times.append((time.perf_counter() - t0, iid))
        times.sort(reverse=True)
        over = sum(t > LIMIT_S for t, _ in times)
        worst = max(worst, times[0][0])
        print(f"{in_name:34} {times[0][1]:45} {times[0][0]:8.3f} {times[0][0] / max(ref, 1e-6):9.0f} {over:8d}",
              flush=True)
    print(f"\nslowest: {worst:.3f} s at {size} characters over {len(examples)} instructions (limit {LIMIT_S} s)")
    return 0 if worst <= LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())
