"""lm-eval's MATH verdicts per response: reasoneval's `exact_match` (hendrycks_math's and minerva_math's, with and
without the sympy step) and `math_verify` against what lm-eval 0.4.13's own `process_results` returned on the same
text (lmeval_expected/verdicts.json, written by lmeval_expected/make_expected.py in a venv with lm-eval)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.lmeval_hendrycks import HENDRYCKS, lmeval_boxed_answer

VERDICTS = json.loads((Path(__file__).parent / "lmeval_expected" / "verdicts.json").read_text(encoding="utf-8"))


def ours(scoring: TaskScoring, rows: list[dict[str, Any]]) -> list[bool]:
    """reasoneval's verdict on each row's response, the problem built as the Hub's MATH rows load (the answer the
    solution boxes, the solution in the metadata)."""
    problems = [Problem("hendrycks_math", f"m-{i}", "p", lmeval_boxed_answer(r["solution"]) or "", f"k{i}",
                        metadata={"solution": r["solution"]}) for i, r in enumerate(rows)]
    samples = [SampleRecord("hendrycks_math", p.key, p.id, 0, 0, "ok", text=r["response"]) for p, r in zip(problems, rows)]
    with ScoringContext(workers=2) as context:
        return [s.correct for s in create_scorer(scoring, context).score_many(problems, samples)]


def disagreements(scoring: TaskScoring, rows: list[dict[str, Any]], field: str) -> list[tuple[str, str, bool]]:
    return [(r["response"], r["solution"], bool(r[field])) for r, v in zip(rows, ours(scoring, rows)) if v != bool(r[field])]


def test_hendrycks_math_exact_match_is_lm_evals_process_results_per_response() -> None:
    rows = VERDICTS["hendrycks_math"]
    assert len(rows) > 300 and 0 < sum(r["exact_match"] for r in rows) < len(rows)
    assert disagreements(TaskScoring("exact_match", {"pattern": HENDRYCKS}), rows, "exact_match") == []


def test_minerva_exact_match_with_the_sympy_step_is_lm_evals_per_response() -> None:
    rows = VERDICTS["minerva_math"]
    decided_by_sympy = [r for r in rows if r["exact_match"] != r["exact_match_strings"]]
    # The cases the issue names are among those where the step decides.
    assert {(r["response"].split("$")[1], r["answer"]) for r in decided_by_sympy} >= {
        ("0.5", "\\frac{1}{2}"), ("x^2+2x", "2x+x^2")}
    assert disagreements(TaskScoring("exact_match", {"sympy": True}), rows, "exact_match") == []
    # Without the step (a run scored before it existed) it is lm-eval's string part alone.
    assert disagreements(TaskScoring("exact_match"), rows, "exact_match_strings") == []
    assert disagreements(TaskScoring("math_verify"), rows, "math_verify") == []


def test_the_sympy_step_needs_antlr_4_11_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "4.13.2" if name == "antlr4-python3-runtime" else real(name))
    with pytest.raises(UserError, match="needs antlr4-python3-runtime 4.11 .installed: 4.13.2."):
        create_scorer(TaskScoring("exact_match", {"sympy": True}), ScoringContext())
    create_scorer(TaskScoring("exact_match"), ScoringContext())  # the string part alone needs no parser


def test_the_sympy_step_runs_in_the_grading_workers_not_in_the_harness() -> None:
    """Model output reaches sympy's LaTeX parser only in a grading worker: scoring through the step leaves the
    parser unimported in the harness process."""
    import subprocess
    import sys

    code = ("from reasoneval.records import Problem, SampleRecord\n"
            "from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer\n"
            "import sys\n"
            "p = Problem('t', 't-0', 'q', '2^{2^{2^{2^{2^{9}}}}}', 'k')\n"
            "s = SampleRecord('t', 'k', 't-0', 0, 0, 'ok', text='Final Answer: The final answer is $0.5$. I hope it is correct.')\n"
            "with ScoringContext(workers=1, timeout_s=20) as c:\n"
            "    (score,) = create_scorer(TaskScoring('exact_match', {'sympy': True}), c).score_many([p], [s])\n"
            "print(score.correct, 'sympy.parsing.latex' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
