"""The `demo_squares` task (N squared for N = 1..10), asked with the `demo_terse` prompt style."""

from __future__ import annotations

from typing import Any

from reasoneval.prompts import PromptStyle
from reasoneval.records import Problem
from reasoneval.scoring import TaskScoring
from reasoneval.tasks import TaskSpec


def rows() -> list[dict[str, Any]]:
    return [{"id": f"square-{n}", "problem": f"What is {n} squared?", "answer": str(n * n)} for n in range(1, 11)]


def _terse(problem: Problem) -> str:
    return f"{problem.problem} Reply with the number only."


TERSE = PromptStyle(chat=_terse, completion=_terse)
DEMO_SQUARES = TaskSpec("demo_squares", "N squared for N = 1..10 (a plugin's task)", size=10, generate=rows,
                        prompt="demo_terse", fewshot=None, scoring=TaskScoring("demo_exact"))
