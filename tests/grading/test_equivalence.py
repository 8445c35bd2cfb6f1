"""Equivalence rules of docs/grading.md, each with positive and negative cases, and the interface functions."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from reasoneval.grading import Grade, grade, is_equivalent
from reasoneval.grading.normalize import cheap_compare

RULES = [
    # (rule, pred, reference, equal)
    ("thousands separators", "7,425,000", "7425000", True),
    ("thousands separators", "1{,}000", "1000", True),
    ("thousands separators", "32,\\!349", "32349", True),
    ("thousands separators", "1,001", "1000", False),
    ("spaces in numbers", "1 000", "1000", True),
    ("spaces in numbers", "1\\,000", "1000", True),
    ("a comma and a space make a list", "32, 349", "32349", False),
    ("decimal commas", "1000,99", "1000.99", True),
    ("decimal commas", "0,111", "0.111", True),
    ("decimal commas", "1,22", "1.23", False),
    ("a bare pair on both sides is a list", "1,2", "2,1", True),
    ("currency", "\\$10", "10", True),
    ("currency", "10 dollars", "10", True),
    ("currency", "€5", "5", True),
    ("currency", "\\$10", "11", False),
    ("percent", "28\\%", "28", True),
    ("percent", "28\\%", "0.28", True),
    ("percent", "28 percent", "28\\%", True),
    ("percent", "28\\%", "0.29", False),
    ("degrees", "90^\\circ", "90", True),
    ("degrees", "90°", "90", True),
    ("degrees", "45^\\circ", "90", False),
    ("units and text words", "10\\text{ units}", "10", True),
    ("units and text words", "125 miles", "125\\textnormal{ miles}", True),
    ("units and text words", "15\\mbox{ cm}^2", "15", True),
    ("units and text words", "100\\text{ cm}", "10", False),
    ("assignment", "x = 5", "5", True),
    ("assignment", "k=\\frac13", "1/3", True),
    ("assignment", "x = 5", "6", False),
    ("fraction forms", "\\dfrac{1}{2}", "\\tfrac12", True),
    ("fraction forms", "\\frac34i", "\\frac{3}{4}i", True),
    ("fraction forms", "\\dfrac{1}{3}", "0.5", False),
    ("intervals and inequalities", "x \\in [2,7]", "[2,7]", True),
    ("intervals and inequalities", "2 \\le x \\le 7", "[2,7]", True),
    ("intervals and inequalities", "x<3", "(-\\infty,3)", True),
    ("intervals and inequalities", "[2,7)", "[2,7]", False),
    ("intervals and inequalities", "x \\leq 5", "x \\geq 5", False),
    ("sets are unordered", "\\{1,2\\}", "\\{2,1\\}", True),
    ("sets are unordered", "\\{1,2\\}", "\\{1,3\\}", False),
    ("tuples are ordered", "(1,4.5)", "(1,\\frac{9}{2})", True),
    ("tuples are ordered", "(1,2)", "(2,1)", False),
    ("multiple answers", "1, 2", "2, 1", True),
    ("multiple answers", "1 \\pm \\sqrt{19}", "1 + \\sqrt{19}, 1 - \\sqrt{19}", True),
    ("multiple answers", "1, 2", "1, 3", False),
    ("matrices", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", True),
    ("matrices", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}", False),
    ("equations", "y=-\\frac{1}{2}x+\\frac{3}{4}", "2x+4y-3=0", True),
    ("equations", "y=2x", "y=3x", False),
    ("scientific notation", "1.2\\times10^{5}", "120000", True),
    ("scientific notation", "1.2e5", "120000", True),
    ("scientific notation", "1.2 \\cdot 10^5", "120000", True),
    ("scientific notation", "1.2\\times10^{5}", "12000", False),
    ("numeric tolerance", "0.3333333", "\\frac{1}{3}", True),
    ("numeric tolerance", "\\sqrt{17}", "4.123105625617661", True),
    ("numeric tolerance", "0.333", "\\frac{1}{3}", False),
    ("dollar delimiters anywhere", "$\\frac{1}{2}$", "0.5", True),
    ("dollar delimiters anywhere", "0.5", "$0$.$5$", True),
    ("dollar delimiters anywhere", "$1$ and $2$ and $3$", "\\{1,2,3\\}", True),
    ("dollar delimiters anywhere", "$0.6$", "$0$.$5$", False),
    ("plain text", "Evelyn", "\\text{evelyn}", True),
    ("plain text", "\\text{The Midpoints}", "the  midpoints", True),
    ("plain text", "odd", "even", False),
    ("symbolic", "x^2+2x+1", "(x+1)^2", True),
    ("symbolic", "\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}", True),
    ("symbolic", "x^2+1", "(x+1)^2", False),
]


@pytest.mark.parametrize(("rule", "pred", "ref", "equal"), RULES, ids=[f"{r[0]}:{r[1]}~{r[2]}" for r in RULES])
def test_equivalence_rule(rule: str, pred: str, ref: str, equal: bool) -> None:
    assert is_equivalent(pred, ref) is equal


def test_per_task_relative_tolerance() -> None:
    assert is_equivalent("7.19", "7.2", rel_tol=1e-2)
    assert not is_equivalent("7.0", "7.2", rel_tol=1e-2)
    assert not is_equivalent("7.19", "7.2")  # the default 1e-6 is exact for rounded answers


def test_cheap_checks_decide_numbers_in_the_parent() -> None:
    # Decided without any worker: identical forms and plain numbers, either way.
    assert cheap_compare("1,000", "1000") is True
    assert cheap_compare("\\frac{1}{2}", "0.5") is True
    assert cheap_compare("3", "4") is False
    # Anything symbolic is left to the workers.
    assert cheap_compare("\\sqrt{2}", "1.41421356") is None


def test_a_side_with_a_box_is_extracted_first() -> None:
    assert is_equivalent("so we get \\boxed{\\frac{1}{2}}", "The solution ... hence \\boxed{0.5}.")
    assert not is_equivalent("so we get \\boxed{\\frac{1}{3}}", "hence \\boxed{0.5}.")


def test_choice_compares_letters_after_extraction() -> None:
    assert is_equivalent("The answer is (C)", "C", kind="choice")
    assert is_equivalent("D", "(D) Alina", kind="choice")
    assert not is_equivalent("C", "(A) Cecile", kind="choice")


def test_grade_reports_status_and_extracted_answer() -> None:
    assert grade("Thus the total is \\boxed{1,000}.", "1000") == Grade(True, "1,000", "ok")
    assert grade("Thus the total is \\boxed{999}.", "1000") == Grade(False, "999", "ok")
    assert grade("<think>long reasoning that never ends", "1000", finish_reason="length") == Grade(False, None, "no_answer")


def test_truncated_response_needs_an_explicit_answer() -> None:
    text = "We compute the terms one by one and the running total so far is 1000 after " * 3
    assert grade(text, "1000", finish_reason="length") == Grade(False, None, "no_answer")
    assert grade(text + "so the final answer is 1000. Let me double-check th", "1000", finish_reason="length").correct
    # Not cut off: the last value stands in for a missing final-answer marker.
    assert grade(text, "1000", finish_reason="stop").correct


def test_importing_the_grader_loads_no_parser() -> None:
    # Model output must not reach sympy in the parent: the parent never even imports it for grading.
    code = ("import sys, reasoneval.grading as g; g.extract_answer('\\\\boxed{1}'); "
            "from reasoneval.grading.normalize import cheap_compare; cheap_compare('1', '1.0'); "
            "print('sympy' in sys.modules, 'math_verify' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[2] / "src"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "False"]


_CASES = pathlib.Path(__file__).resolve().parents[3] / "shared" / "grader_cases" / "dev.jsonl"


@pytest.mark.slow
@pytest.mark.skipif(not _CASES.exists(), reason="grader cases not available")
def test_agreement_with_public_grader_cases_is_at_least_97_percent() -> None:
    rows = [json.loads(x) for x in _CASES.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = [r for r in rows if r["category"] in ("math", "mcq") and r.get("dup_of") is None and not r.get("label_conflict")]
    agree = 0
    for r in rows:
        kind = "choice" if r["category"] == "mcq" else "math"
        settings = r.get("settings") or {}
        tol = 10.0 ** -int(settings["precision"]) if "precision" in settings else None
        if r["kind"] == "response":
            got = grade(r["pred"], r["gold"], kind, rel_tol=tol).correct
        else:
            got = is_equivalent(r["pred"], r["gold"], kind, rel_tol=tol)
        agree += got == r["equal"]
    assert agree / len(rows) >= 0.97
