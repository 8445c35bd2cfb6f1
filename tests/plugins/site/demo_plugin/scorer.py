"""`demo_exact`: the response, stripped, is the reference; its figure `off_by` is how far the number is off."""

from __future__ import annotations

from typing import Sequence

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import Score, ScoringContext


class DemoExactScorer:
    name = "demo_exact"
    version = "1"

    def __init__(self, context: ScoringContext) -> None:
        pass

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        out = []
        for p, s in zip(problems, samples):
            answer = (s.text or "").strip()
            off_by = abs(int(answer) - int(p.answer)) if answer.isdigit() else float("nan")
            out.append(Score(correct=answer == p.answer, value={"off_by": float(off_by)}, answer=answer or None,
                             status="ok" if answer else "no_answer"))
        return out
