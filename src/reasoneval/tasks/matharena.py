"""MathArena's final-answer competitions (https://matharena.ai): AIME 2026, HMMT February 2025/2026 and November
2025, BRUMO 2025, CMIMC 2025, SMT 2025, each the Hub dataset MathArena publishes right after the contest.

Every one has MathArena's layout (`MathArena/<competition>_<year>`, split `train`): problem_idx (int, the problem's
number in the contest), problem (LaTeX), answer (a string; an int for the AIME sets) and, for most, problem_type (a
list of "Algebra", "Combinatorics", "Geometry", "Number Theory"). Answers are numbers or closed forms, so they are
graded exactly by the math grader (no tolerance: docs/grading.md).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from reasoneval.errors import UserError
from reasoneval.scoring.base import TaskScoring
from reasoneval.tasks.keys import reference_text
from reasoneval.tasks.spec import HubSource, TaskSpec

Row = Mapping[str, Any]


def matharena_mapper(year: int) -> Callable[[Row], dict[str, Any]]:
    """A mapper for one MathArena competition: the problem, its answer as reference text, the contest's problem
    number as source_id, the problem types joined as the subject (the breakdown's key), the contest's year."""
    def map_row(row: Row) -> dict[str, Any]:
        for col in ("problem", "answer"):
            if row.get(col) is None:
                raise UserError(f"MathArena row has no column {col!r} (columns: {', '.join(sorted(row))}); the "
                                "dataset's layout changed: use a --data-dir file for this task instead, and report it")
        out: dict[str, Any] = {"problem": str(row["problem"]), "answer": reference_text(row["answer"]), "year": year}
        kinds = row.get("problem_type")
        if isinstance(kinds, (list, tuple)) and kinds:
            out["subject"] = ", ".join(str(k) for k in kinds)
        elif isinstance(kinds, str) and kinds.strip():
            out["subject"] = kinds.strip()
        if row.get("problem_idx") is not None:
            out["source_id"] = str(row["problem_idx"])
        return out

    return map_row


# Exact grading: the math grader's equivalence with no tolerance between a decimal and an exact value (approx
# "exact": 0.5 = 1/2, but 0.7854 is not pi/4 however many digits are right), as the contests grade their answers.
EXACT_MATH = TaskScoring("math", {"approx": "exact"})


def _spec(name: str, dataset: str, title: str, year: int, size: int) -> TaskSpec:
    return TaskSpec(name, f"{title} (MathArena, hf:MathArena/{dataset})", size=size, scoring=EXACT_MATH,
                    prompt="boxed", fewshot="minerva", hub=HubSource(f"MathArena/{dataset}", "train",
                                                                     matharena_mapper(year)))


# Sizes as the dataset cards list them (the listing's figure before the data is loaded; the loaded count is what a
# run reports). smt25's 53 could not be checked against its card here: `reasoneval tasks` shows the real count once
# the data is pulled.
AIME26 = _spec("aime26", "aime_2026", "AIME 2026 I+II", 2026, 30)
HMMT_FEB25 = _spec("hmmt_feb25", "hmmt_feb_2025", "HMMT February 2025", 2025, 30)
HMMT_FEB26 = _spec("hmmt_feb26", "hmmt_feb_2026", "HMMT February 2026", 2026, 33)
HMMT_NOV25 = _spec("hmmt_nov25", "hmmt_nov_2025", "HMMT November 2025", 2025, 30)
BRUMO25 = _spec("brumo25", "brumo_2025", "BRUMO 2025", 2025, 30)
CMIMC25 = _spec("cmimc25", "cmimc_2025", "CMIMC 2025", 2025, 40)
SMT25 = _spec("smt25", "smt_2025", "SMT 2025", 2025, 53)

MATHARENA_TASKS = ("aime26", "hmmt_feb25", "hmmt_feb26", "hmmt_nov25", "brumo25", "cmimc25", "smt25")
