"""`reasoneval judge-check FILE`: the judge's own error rate, beside the rule's, on labelled answer pairs.

FILE holds JSON lines `{"pred", "gold", "equal"}` (a graders' test-case file such as ../shared/grader_cases/dev.jsonl;
`kind` "response" marks a whole model answer, else `pred` is an answer and is read as `\\boxed{pred}`). By default
the rows that measure mathematics are kept (`category` math or mcq where given, no `dup_of`, no `label_conflict`,
the reference an answer), as that file's README advises; `every_row` keeps all. Each pair is graded three ways: the
rule alone (the math grader), the judge alone (on the answer the rule extracts: the judge never sees reasoning) and
the cascade (the rule where it accepts, else the judge). Agreement with the labels is reported for each, with its
standard error, and the judge's ungraded pairs (failed, out of format) are counted, never guessed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.judge.client import JudgeClient, JudgeItem, JudgeSettings

# What the judge is told the question is: these pairs come without one.
NO_QUESTION = "(not given: compare the two answers as they stand)"


@dataclass(frozen=True)
class Pair:
    pred: str
    gold: str
    equal: bool
    response: bool  # pred is a whole response (the rule extracts its answer)


@dataclass(frozen=True)
class Agreement:
    graded: int
    agree: int
    ungraded: int = 0

    @property
    def rate(self) -> float | None:
        return self.agree / self.graded if self.graded else None

    @property
    def stderr(self) -> float | None:
        r = self.rate
        return math.sqrt(r * (1 - r) / self.graded) if r is not None and self.graded > 1 else None

    def to_json(self) -> dict[str, Any]:
        return {"graded": self.graded, "agree": self.agree, "ungraded": self.ungraded, "rate": self.rate,
                "stderr": self.stderr}


def read_pairs(path: Path, every_row: bool = False) -> list[Pair]:
    """The labelled pairs of a JSONL file (one-line errors naming the line)."""
    if not path.is_file():
        raise UserError(f"{path} is not a file; give a JSONL file of labelled pairs (pred, gold, equal)")
    pairs: list[Pair] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise UserError(f"{path}:{n}: invalid JSON ({e}); each line must be one JSON object") from None
            if not isinstance(row, dict) or not isinstance(row.get("equal"), bool) or \
                    not isinstance(row.get("pred"), str) or not isinstance(row.get("gold"), str):
                raise UserError(f"{path}:{n}: a pair needs 'pred' and 'gold' (strings) and 'equal' (true or false)")
            if not every_row and (row.get("category", "math") not in ("math", "mcq") or row.get("dup_of") is not None
                                  or row.get("label_conflict") or row.get("gold_kind", "answer") != "answer"):
                continue
            pairs.append(Pair(row["pred"], row["gold"], row["equal"], row.get("kind") == "response"))
    if not pairs:
        raise UserError(f"{path} holds no pairs to check (pass --every-row to keep rows of every category)")
    return pairs


def check_pairs(pairs: Sequence[Pair], judge: JudgeSettings, *, workers: int | None = None,
                grading_timeout: float = 5.0) -> dict[str, Any]:
    """Agreement with the labels of the rule, the judge and the cascade (see the module's docstring)."""
    problems = [Problem(task="judge-check", id=str(i), problem=NO_QUESTION, answer=p.gold, key=str(i))
                for i, p in enumerate(pairs)]
    samples = [SampleRecord(task="judge-check", problem_key=str(i), problem_id=str(i), index=0, seed=0, status="ok",
                            text=p.pred if p.response else f"\\boxed{{{p.pred}}}") for i, p in enumerate(pairs)]
    with ScoringContext(workers=workers, timeout_s=grading_timeout) as context:
        rule = create_scorer(TaskScoring("math"), context).score_many(problems, samples)
    client = JudgeClient(judge, None)
    asked = [i for i, s in enumerate(rule) if s.answer is not None]
    verdicts = dict(zip(asked, client.judge_many([JudgeItem(NO_QUESTION, pairs[i].gold, str(rule[i].answer))
                                                  for i in asked])))
    rule_agree = sum(s.correct == p.equal for s, p in zip(rule, pairs))
    judge_graded = judge_agree = cascade_graded = cascade_agree = 0
    for i, (s, p) in enumerate(zip(rule, pairs)):
        j = verdicts.get(i)
        judged: bool | None = False if j is None else j.verdict  # no answer extracted: nothing equals the gold
        if judged is not None:
            judge_graded += 1
            judge_agree += judged == p.equal
        final = True if s.correct else judged
        if final is not None:
            cascade_graded += 1
            cascade_agree += final == p.equal
    n = len(pairs)
    return {"pairs": n, "labelled_equal": sum(p.equal for p in pairs), "judge": judge.to_json(),
            "judge_requests": client.requests,
            "rule": Agreement(n, rule_agree).to_json(),
            "judge_alone": Agreement(judge_graded, judge_agree, n - judge_graded).to_json(),
            "cascade": Agreement(cascade_graded, cascade_agree, n - cascade_graded).to_json()}
