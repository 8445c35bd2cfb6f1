"""`last_line`: the response's last line, stripped, equals the reference (a plain exact match)."""

from typing import Sequence

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import Score, ScoringContext


class LastLineScorer:
    name = "last_line"
    version = "1"

    def __init__(self, context: ScoringContext, ignore_case: bool = False) -> None:
        self.ignore_case = ignore_case

    def _norm(self, s: str) -> str:
        return s.strip().lower() if self.ignore_case else s.strip()

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        out = []
        for p, s in zip(problems, samples):
            lines = (s.text or "").strip().splitlines()
            answer = lines[-1] if lines else None
            ok = answer is not None and self._norm(answer) == self._norm(p.answer)
            out.append(Score(correct=ok, value=ok, answer=answer,
                             status="ok" if answer is not None else "no_answer"))
        return out
