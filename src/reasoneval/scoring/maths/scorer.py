"""`math` and `choice`: free-form answers checked for mathematical equivalence, and choice letters.

Both run on the grader's `GradingPool` (time- and memory-bounded worker processes, dedupe, and the
run's grades.jsonl cache), shared through the scoring context. Rules: docs/grading.md.
"""

from __future__ import annotations

from typing import Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import GRADES_FILE
from reasoneval.scoring.base import Score, ScoringContext
from reasoneval.scoring.maths import GRADER_VERSION, GradeItem, GradingPool
from reasoneval.scoring.maths.normalize import Policy


def grading_pool(context: ScoringContext) -> GradingPool:
    def make() -> GradingPool:
        cache = context.cache_dir / GRADES_FILE if context.cache_dir is not None else None
        return GradingPool(workers=context.workers, timeout_s=context.timeout_s, cache_path=cache)

    pool: GradingPool = context.resource("grading_pool", make)
    return pool


class _AnswerScorer:
    """Extract an answer, compare it with the reference on the grading pool."""

    name = ""
    kind = ""
    version = GRADER_VERSION

    def __init__(self, context: ScoringContext, rel_tol: float | None = None, approx: str | None = None,
                 units: str | None = None) -> None:
        try:
            Policy.make(rel_tol, approx, units)  # a bad setting fails here, once, with one line
        except ValueError as e:
            raise UserError(f"{self.name} scorer: {e}") from None
        self.context = context
        self.rel_tol, self.approx, self.units = rel_tol, approx, units

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        items = [GradeItem(response=s.text or "", reference=p.answer, kind=self.kind, finish_reason=s.finish_reason,
                           rel_tol=self.rel_tol, approx=self.approx, units=self.units)
                 for p, s in zip(problems, samples)]
        return [Score(correct=g.correct, value=g.correct, answer=g.extracted, status=g.status)
                for g in grading_pool(self.context).grade_many(items)]

    def cluster_many(self, groups: Sequence[tuple[Problem, Sequence[str | None]]]) -> list[list[int | None]]:
        return grading_pool(self.context).cluster_many([(answers, self.kind) for _, answers in groups])


class MathScorer(_AnswerScorer):
    """A free-form answer (the last \\boxed{}, or an answer phrase), equal to the reference as mathematics.

    Settings (docs/grading.md, "Policy"): rel_tol, the relative tolerance for decimal answers; approx, how a
    decimal meets an exact value ("digits" | "measured" | "exact"); units ("ignore" | "strict").
    """

    name = "math"
    kind = "math"


class ChoiceScorer(_AnswerScorer):
    """A multiple-choice letter, equal to the reference letter."""

    name = "choice"
    kind = "choice"
