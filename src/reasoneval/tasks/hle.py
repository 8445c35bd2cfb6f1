"""Humanity's Last Exam (cais/hle, split test, gated on the Hub), its text-only questions.

The source's own fields are kept: id, question, image ("" for a text-only question), answer, answer_type
("multipleChoice": the question lists lettered choices and the answer is a letter; "exactMatch": a short answer),
raw_subject, category, ... A question with an image is left out (this is a text-only evaluation). The `hle` prompt
style asks for HLE's answer format (Explanation / Answer or Exact Answer / Confidence); scoring is the cascade: the
`hle` rule (exact match of the letter for multiple choice, which is final; of the short answer otherwise), then a
judge with HLE's own judge prompt for the short answers the rule does not accept (docs/grading.md).
"""

from __future__ import annotations

from typing import Any, Mapping

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.scoring.base import TaskScoring
from reasoneval.tasks.keys import problem_key
from reasoneval.tasks.spec import HubSource, TaskSpec

ANSWER_TYPES = ("multipleChoice", "exactMatch")
# The text-only questions of cais/hle's 2,500 (its card; a later revision of the set may differ a little).
TEXT_ONLY_SIZE = 2158
_KEEP = ("id", "question", "image", "answer", "answer_type", "raw_subject", "category")


def map_hle(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """A cais/hle row with its text fields (images and rationales dropped), or None for a question with an image."""
    if row.get("image"):
        return None
    return {k: row[k] for k in _KEEP if k in row and k != "image"}


def hle_problem(task: str, where: str, row: Mapping[str, Any], default_id: str) -> Problem | None:
    """A cais/hle row -> Problem (None for a question with an image); payload: answer_type."""
    if row.get("image"):
        return None
    question, answer, kind = row.get("question"), row.get("answer"), row.get("answer_type")
    if not isinstance(question, str) or not question.strip() or not isinstance(answer, str) or not answer.strip():
        raise UserError(f"{where}: an HLE row needs a non-empty 'question' and 'answer' (row keys: "
                        f"{', '.join(sorted(row))})")
    if kind not in ANSWER_TYPES:
        raise UserError(f"{where}: 'answer_type' must be one of {', '.join(ANSWER_TYPES)}, got {kind!r}")
    meta = {k: str(row[v]) for k, v in (("subject", "category"), ("source_id", "id")) if row.get(v)}
    if row.get("raw_subject"):
        meta["raw_subject"] = str(row["raw_subject"])
    return Problem(task=task, id=str(row.get("id") or default_id), problem=question, answer=answer.strip(),
                   key=problem_key(question, answer), payload={"answer_type": kind}, metadata=meta)


HLE = TaskSpec(
    "hle", "Humanity's Last Exam, text-only questions (gated: accept the terms on the Hub; graded by the rule, then "
    "a judge with HLE's prompt: --judge-model, --judge-base-url)", size=TEXT_ONLY_SIZE, prompt="hle",
    scoring=TaskScoring("cascade", {"rule": {"scorer": "hle", "settings": {}}, "judge_prompt": "hle"}),
    hub=HubSource("cais/hle", "test", map_hle, gated=True), row_to_problem=hle_problem)
