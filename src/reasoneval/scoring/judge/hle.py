"""`hle`: the rule of Humanity's Last Exam's cascade, and HLE's calibration error.

The response is read in HLE's answer format (prompts/hle.py): the last `Answer:` / `Exact Answer:` line is the
answer, `Confidence: N%` its stated confidence. A multiple-choice answer is its letter, exactly equal to the reference
letter or not: that verdict is final (no judge). A short answer equal to the reference after trivial normalisation
(case, spaces, surrounding `$`, a final period) is correct; any other is left to the judge (status "ok", not correct),
which the cascade asks with HLE's judge prompt.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import Score, ScoringContext

_ANSWER_LINE = re.compile(r"^[ \t>*_#]*(exact answer|final answer|answer)[ \t*_]*:[ \t*_]*(.+?)[ \t*_]*$", re.I | re.M)
_CONFIDENCE = re.compile(r"confidence[ \t*_]*:?[ \t*_]*(\d{1,3}(?:\.\d+)?)[ \t]*%", re.I)
_LETTER = re.compile(r"^\(?\s*([A-Z])\s*\)?(?:[.):\s]|$)")


def answer_line(text: str) -> str | None:
    """The last answer line's text (HLE's `Exact Answer:` or `Answer:`), None when there is none."""
    found = _ANSWER_LINE.findall(text)
    return found[-1][1].strip() if found else None


def stated_confidence(text: str) -> float | None:
    """The last `Confidence: N%` as a fraction in [0, 1], None when the response states none."""
    found = _CONFIDENCE.findall(text)
    return min(100.0, float(found[-1])) / 100 if found else None


def _letter(text: str) -> str | None:
    m = _LETTER.match(text.strip().strip("*$ "))
    return m.group(1) if m else None


def _plain(text: str) -> str:
    return " ".join(text.strip().strip("$").strip().rstrip(".").split()).casefold()


class HLERule:
    """Exact match: the letter for multiple choice (final), the normalised short answer otherwise."""

    name = "hle"
    version = "1"

    def __init__(self, context: ScoringContext) -> None:
        self.context = context

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        out = []
        for p, s in zip(problems, samples):
            text = s.text or ""
            answer = answer_line(text)
            details: dict[str, object] = {}
            confidence = stated_confidence(text)
            if confidence is not None:
                details["confidence"] = confidence
            if p.payload.get("answer_type") == "multipleChoice":
                details["final"] = True  # exact match decides multiple choice
                letter = _letter(answer) if answer is not None else None
                ok = letter is not None and letter == _letter(p.answer)
                out.append(Score(ok, ok, letter, "ok" if letter is not None else "no_answer", details))
                continue
            if answer is None:
                out.append(Score(False, False, None, "no_answer", details))
                continue
            ok = _plain(answer) == _plain(p.answer)
            out.append(Score(ok, ok, answer, "ok", details))
        return out


def calibration_error(confidence: Sequence[float], correct: Sequence[bool], beta: int = 100) -> float | None:
    """HLE's calibration error (hle_eval/run_judge_results.py `calib_err`, p='2', from Hendrycks et al.'s outlier
    exposure tools): samples sorted by confidence, cut into bins of `beta` (the last bin takes the remainder), the
    root of the bin-size-weighted mean squared gap between a bin's mean confidence and its accuracy. As HLE's code
    does, the last bin is left out of the sum (its loop runs to len(bins) - 1), so a figure here equals HLE's. Fewer
    than `beta` samples: None (HLE's code has no bin then)."""
    n = len(confidence)
    if n < beta:
        return None
    order = sorted(range(n), key=lambda i: confidence[i])
    conf = [confidence[i] for i in order]
    hit = [1.0 if correct[i] else 0.0 for i in order]
    bins = [[i * beta, (i + 1) * beta] for i in range(n // beta)]
    bins[-1][1] = n
    total = 0.0
    for lo, hi in bins[:-1]:
        size = hi - lo
        gap = abs(sum(conf[lo:hi]) / size - sum(hit[lo:hi]) / size)
        total += size / n * gap * gap
    return math.sqrt(total)
