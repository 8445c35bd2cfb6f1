"""Writes lm-eval's own per-response verdicts for MATH (verdicts.json) with lm-evaluation-harness's code, not a copy.

Run in a venv with lm-eval 0.4.13 and its `math` extra (antlr4-python3-runtime 4.11), offline:
    /tmp/lmeval-venv/bin/python tests/scoring/lmeval_expected/make_expected.py

For each made-up (response, solution) pair below, and for fuzz pairs drawn from LaTeX-ish tokens (seed 0):
- `hendrycks_math`: lm_eval/tasks/hendrycks_math/utils.py process_results(doc, [response])["exact_match"];
- `minerva_math`: lm_eval/tasks/minerva_math/utils.py process_results on the processed doc (process_docs):
  `exact_match` and `math_verify`, and `exact_match` again with sympy's parse_latex made to fail
  (`exact_match_strings`: lm-eval's is_equiv without its sympy step, what reasoneval reported before).
tests/scoring/test_lmeval_math.py scores the same pairs with reasoneval's scorers and compares.
"""

# own-environment: lm_eval (a venv of its own, as the docstring says; not a reasoneval dependency)
from __future__ import annotations

import json
import random
from pathlib import Path

import datasets
import sympy
from lm_eval.tasks.hendrycks_math import utils as hendrycks
from lm_eval.tasks.minerva_math import utils as minerva

HERE = Path(__file__).resolve().parent
FINAL = "Final Answer: The final answer is ${}$. I hope it is correct."

# (response, reference answer as the solution boxes it) for hendrycks_math's "Problem: ...\nAnswer:" format.
HENDRYCKS = [
    (" 4", "4"), (" $4$", "4"), (" $4$.\n\nProblem: What is $2+2$?", "4"), (" The answer is $\\frac12$.", "\\frac{1}{2}"),
    (" $x = 4$", "4"), (" \\dfrac{1}{2}", "\\frac{1}{2}"), (" 0.5", "\\frac{1}{2}"), (" 1/2", "\\frac{1}{2}"),
    (" \\boxed{4}", "4"), (" $$", "4"), (" $3$ and $4$", "4"), (" $5\\text{ cm}$", "5"), (" 50\\%", "50"),
    (" $\\left( 3, \\frac{\\pi}{2} \\right)$", "\\left( 3, \\frac{\\pi}{2} \\right)"), (" .5", "0.5"),
    (" $\\sqrt2$", "\\sqrt{2}"), (" $\\sqrt$", "\\sqrt{2}"), (" $a/b$", "\\frac{a}{b}"), (" 10^\\circ", "10"),
    (" $1,000$", "1000"), (" $\\$18$", "18"), (" 18 dollars", "18"), ("", "4"), (" \\frac", "\\frac{1}{2}"),
    (" $\\text{ a}\\text{ b}$", "a"), (" $k = 7$", "7"), (" $abc = 7$", "7"), (" $\\tfrac34$", "\\frac{3}{4}"),
    (" $3.0$", "3"), (" 3/4/5", "3/4/5"), (" $\\frac{\\sqrt{3}}{2}$", "\\frac{\\sqrt{3}}{2}"),
]
# (response, solution) for minerva_math's "Final Answer: ..." format; several differ only by the sympy step.
MINERVA = [
    (FINAL.format("0.5"), "So it is $\\boxed{\\frac{1}{2}}$."),
    (FINAL.format("x^2+2x"), "Expanding, $\\boxed{2x+x^2}$."),
    (FINAL.format("\\dfrac{5}{6}"), "It is $\\boxed{\\frac{5}{6}}$."),
    (FINAL.format("2\\sqrt{2}"), "It is $\\boxed{\\sqrt{8}}$."),
    (FINAL.format("(1,2)"), "The point is $\\boxed{(1,2)}$."),
    (FINAL.format("[2,5)"), "The domain is $\\boxed{[2,5)}$."),
    (FINAL.format("10\\%"), "It is $\\boxed{10}$ percent."),
    (FINAL.format("1,000"), "It is $\\boxed{1000}$."),
    (FINAL.format("\\pi/2"), "It is $\\boxed{\\frac{\\pi}{2}}$."),
    (FINAL.format("x=3"), "So $\\boxed{3}$."),
    (FINAL.format("3.0"), "So $\\boxed{3}$."),
    (FINAL.format("\\infty"), "So $\\boxed{\\infty}$."),
    (FINAL.format(""), "So $\\boxed{3}$."),
    ("The answer is $\\boxed{3}$.", "So $\\boxed{3}$."),
    (FINAL.format("\\sin^2 x + \\cos^2 x"), "So $\\boxed{1}$."),
    (FINAL.format("\\sqrt{3}/2"), "So $\\boxed{\\frac{\\sqrt{3}}{2}}$."),
    (FINAL.format("0.333"), "So $\\boxed{\\frac{1}{3}}$."),
    (FINAL.format("\\frac{-2}{3}"), "So $\\boxed{-\\frac{2}{3}}$."),
    (FINAL.format("4.000"), "So $\\boxed{4}$."),
    (FINAL.format("2+2"), "So $\\boxed{4}$."),
    (FINAL.format("5"), "So $\\boxed{4}$."),
    (FINAL.format("\\frac{10}{4}"), "So $\\boxed{\\frac{5}{2}}$."),
    (FINAL.format("2.5"), "So $\\boxed{\\frac{5}{2}}$."),
    (FINAL.format("x+1"), "So $\\boxed{1+x}$."),
    (FINAL.format("(x+1)^2"), "So $\\boxed{x^2+2x+1}$."),
    (FINAL.format("e^{i\\pi}"), "So $\\boxed{-1}$."),
    (FINAL.format("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"), "So $\\boxed{\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}}$."),
    (FINAL.format("\\text{(A)}"), "So $\\boxed{\\text{(A)}}$."),
    (FINAL.format("3\\sqrt{2}"), "So $\\boxed{\\sqrt{18}}$."),
    (FINAL.format("1/3"), "So $\\boxed{\\frac13}$."),
    (FINAL.format("12"), "It is $\\boxed{12\\text{ inches}}$."),
    ("Final Answer: The final answer is $2$", "So $\\boxed{2}$."),
    ("Final Answer: The final answer is $2$. ", "So $\\boxed{2}$."),
    (FINAL.format("a^2-b^2") + "\nFinal Answer: The final answer is $3$. I hope it is correct.", "So $\\boxed{(a-b)(a+b)}$."),
]
TOKENS = ["$", "\\frac", "{", "}", "1", "2", "3", "x", "\\sqrt", " ", ".", "/", "=", "\\text{ ", "\\left(", "\\right)",
          "\\dfrac", "^\\circ", "\\%", "0.5", "\\!", "\\\\", "\n", ",", "\\boxed{", "-"]


def fuzz(rng: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        resp = "".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 14)))
        ref = "".join(rng.choice(TOKENS[1:]) for _ in range(rng.randint(1, 6)))
        out.append((resp, ref))
    return out


def minerva_doc(solution: str) -> dict:
    return minerva.process_docs(datasets.Dataset.from_list([{"problem": "p", "solution": solution}]))[0]


def main() -> None:
    rng = random.Random(0)
    hendrycks_cases = [*HENDRYCKS, *fuzz(rng, 400)]
    rows: dict[str, list[dict]] = {"hendrycks_math": [], "minerva_math": []}
    for resp, ref in hendrycks_cases:
        solution = f"So the answer is $\\boxed{{{ref}}}$."
        try:
            verdict = hendrycks.process_results({"solution": solution}, [resp])["exact_match"]
        except (TypeError, AssertionError):  # lm-eval itself fails on a solution without a closed \boxed{}
            continue
        rows["hendrycks_math"].append({"response": resp, "solution": solution, "exact_match": verdict})
    for resp, solution in MINERVA:
        doc = minerva_doc(solution)
        with_sympy = minerva.process_results(doc, [resp])
        real = minerva.parse_latex

        def fail(s: str) -> None:
            raise sympy.parsing.latex.errors.LaTeXParsingError("the sympy step left out")

        minerva.parse_latex = fail
        try:
            strings = minerva.process_results(doc, [resp])["exact_match"]
        finally:
            minerva.parse_latex = real
        rows["minerva_math"].append({"response": resp, "solution": solution, "answer": doc["answer"],
                                     "exact_match": with_sympy["exact_match"], "math_verify": with_sympy["math_verify"],
                                     "exact_match_strings": strings})
    (HERE / "verdicts.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    differ = sum(r["exact_match"] != r["exact_match_strings"] for r in rows["minerva_math"])
    print(f"wrote {len(rows['hendrycks_math'])} hendrycks_math and {len(rows['minerva_math'])} minerva_math verdicts "
          f"({differ} where the sympy step decides) to {HERE / 'verdicts.json'}")


if __name__ == "__main__":
    main()
