"""A scorer without `version`, a task scored by it, and a prompt style that is a plain string."""

from __future__ import annotations

from typing import Any, Sequence

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import Score, ScoringContext, TaskScoring
from reasoneval.tasks import TaskSpec


class NoVersionScorer:
    name = "no_version"

    def __init__(self, context: ScoringContext) -> None:
        pass

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        return [Score(correct=False, value=False, answer=None, status="no_answer") for _ in samples]


def rows() -> list[dict[str, Any]]:
    return [{"id": f"double-{n}", "problem": f"What is {n} + {n}?", "answer": str(2 * n)} for n in range(1, 4)]


UNVERSIONED_DOUBLES = TaskSpec("unversioned_doubles", "N + N scored by a scorer without a version", size=3,
                               generate=rows, prompt="boxed", fewshot=None, scoring=TaskScoring("no_version"))
NOT_A_STYLE = "Answer: {problem}"
