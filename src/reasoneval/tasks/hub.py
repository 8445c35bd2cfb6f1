"""Field mappings from each Hub source's own columns to the uniform schema.

Each mapper takes one row as `datasets` yields it and returns a uniform row without `id`
(the loader assigns `<task>-<n>` from the row's position, like the files in a data dir) or
None to skip the row. tests/fixtures/hub/ holds one synthetic fixture per source in that
source's column layout; tests/tasks/test_hub_mappings.py runs every mapper on its fixture.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks.keys import problem_key, reference_text

Row = Mapping[str, Any]
_YEAR_IN_URL = re.compile(r"/((?:19|20)\d\d)_")


def _col(row: Row, *names: str) -> Any:
    for n in names:
        if n in row and row[n] is not None:
            return row[n]
    want = " or ".join(repr(n) for n in names)
    raise UserError(f"Hub row has no column {want} (columns: {', '.join(sorted(row))}); the dataset's "
                    "layout changed: use a --data-dir file for this task instead, and report it")


def _opt_str(row: Row, name: str) -> str | None:
    v = row.get(name)
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    return str(v)


def _year(row: Row) -> int | None:
    y = row.get("year")
    if isinstance(y, int) and not isinstance(y, bool):
        return y
    if isinstance(y, str) and y.strip().isdigit():
        return int(y.strip())
    url = row.get("url")
    if isinstance(url, str):
        m = _YEAR_IN_URL.search(url)
        if m:
            return int(m.group(1))
    return None


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def columns_mapper(*, problem: tuple[str, ...] = ("problem",), solution: bool = False, subject: str | None = None,
                   level: bool = False, year: Callable[[Row], int | None] | None = None,
                   source_id: str = "id", url: bool = False) -> Callable[[Row], dict[str, Any]]:
    """A mapper for a source whose columns are the uniform schema's under their own names: the problem (the first
    of `problem` present), the answer as reference text, and the optional columns asked for, in this order."""
    def map_row(row: Row) -> dict[str, Any]:
        out: dict[str, Any] = {"problem": _col(row, *problem), "answer": reference_text(_col(row, "answer"))}
        if solution:
            out["solution"] = _opt_str(row, "solution")
        if subject:
            out["subject"] = _opt_str(row, subject)
        if level:
            out["level"] = row.get("level")
        if year:
            out["year"] = year(row)
        out["source_id"] = _opt_str(row, source_id)
        if url:
            out["url"] = _opt_str(row, "url")
        return _clean(out)

    return map_row


# HuggingFaceH4/aime_2024: id, problem, solution, answer (str, some zero-padded), url, year (str).
map_aime24 = columns_mapper(solution=True, year=_year, url=True)
# math-ai/aime25: problem, answer (str), id (str).
map_aime25 = columns_mapper(year=lambda row: 2025)
# math-ai/amc23: id, question, answer (float, e.g. 27.0), url.
map_amc23 = columns_mapper(problem=("question", "problem"), year=lambda row: _year(row) or 2023, url=True)
# AI-MO/aimo-validation-amc: id, problem, answer (float), url (year from the AoPS URL).
map_amc = columns_mapper(year=_year, url=True)
# HuggingFaceH4/MATH-500: problem, solution, answer, subject, level (int), unique_id.
map_math500 = columns_mapper(solution=True, subject="subject", level=True, source_id="unique_id")


MATH_LEVEL = re.compile(r"Level (\d+)")


def map_hendrycks_math(row: Row) -> dict[str, Any]:
    """EleutherAI/hendrycks_math (7 configs, one per subject): problem, level ("Level 3"; a few "Level ?"),
    type ("Counting & Probability"), solution. The reference is what lm-eval's minerva_math compares with,
    before its normalisation: remove_boxed(last_boxed_only_string(solution))."""
    # Imported here, not at the top: the grading modules (the math package starts its grading pool's
    # machinery) would make every `reasoneval tasks` pay for them (bench/cli_startup.py).
    from reasoneval.scoring.lmeval_hendrycks import lmeval_boxed_answer
    from reasoneval.scoring.maths.extract import last_boxed

    solution = str(_col(row, "solution"))
    answer = lmeval_boxed_answer(solution)
    if answer is None:
        answer = last_boxed(solution)
    if answer is None:
        raise UserError("hendrycks_math Hub row's solution has no \\boxed{} answer")
    level = MATH_LEVEL.fullmatch(str(row.get("level") or "").strip())
    return _clean({
        "problem": _col(row, "problem"),
        "answer": answer,
        "solution": solution,
        "subject": _opt_str(row, "type"),
        "level": int(level.group(1)) if level else None,
    })


def map_minerva(row: Row) -> dict[str, Any]:
    """math-ai/minervamath: question, answer. Copies without `answer` keep it boxed in `solution`."""
    from reasoneval.scoring.maths.extract import last_boxed  # here, as in map_hendrycks_math

    solution = _opt_str(row, "solution")
    answer = row.get("answer")
    if answer is None and solution is not None:
        answer = last_boxed(solution)
    if answer is None:
        raise UserError("minerva_math Hub row has neither 'answer' nor a \\boxed{} answer in 'solution'")
    return _clean({
        "problem": _col(row, "question", "problem"),
        "answer": reference_text(answer),
        "solution": solution,
        "subject": _opt_str(row, "type") or _opt_str(row, "subject"),
        "source_id": _opt_str(row, "idx") or _opt_str(row, "id"),
    })


def map_olympiadbench(row: Row) -> dict[str, Any]:
    """math-ai/olympiadbench: id, question, solution (list), final_answer (list), subfield, ...

    answer = final_answer[0] with the surrounding `$` stripped (the rule of Qwen2.5-Math's loader;
    inner `$` of multi-part answers like `69$,$84` stay, the grader deals with them).
    """
    fa = _col(row, "final_answer")
    if isinstance(fa, list):
        if not fa:
            raise UserError("olympiadbench Hub row has an empty 'final_answer' list")
        fa = fa[0]
    sol = row.get("solution")
    if isinstance(sol, list):
        sol = "\n\n".join(s for s in sol if isinstance(s, str)) or None
    return _clean({
        "problem": _col(row, "question"),
        "answer": reference_text(str(fa).strip().strip("$").strip()),
        "solution": sol if isinstance(sol, str) and sol else None,
        "subject": _opt_str(row, "subfield"),
        "source_id": _opt_str(row, "id"),
    })


def map_gsm8k(row: Row) -> dict[str, Any]:
    """openai/gsm8k (main): question, answer = worked solution ending in `#### N`."""
    full = str(_col(row, "answer"))
    if "####" not in full:
        raise UserError("gsm8k Hub row's answer has no '#### N' final line")
    final = full.rsplit("####", 1)[1].strip().replace(",", "")  # "2,125" -> "2125"
    return {"problem": _col(row, "question"), "answer": reference_text(final), "solution": full}


def map_gsm8k_train(row: Row) -> dict[str, Any]:
    """openai/gsm8k (main, train): kept in its own layout (question, answer = worked solution), as
    lm-eval's few-shot exemplars use the answer verbatim."""
    return {"question": _col(row, "question"), "answer": _col(row, "answer")}


def gsm8k_train_problem(task: str, where: str, row: Row, default_id: str) -> Problem:
    """A GSM8K train row (question, answer) -> Problem; payload keeps both verbatim (the exemplar text)."""
    q, full = row.get("question"), row.get("answer")
    if not isinstance(q, str) or not q.strip() or not isinstance(full, str) or "####" not in full:
        raise UserError(f"{where}: a GSM8K train row needs 'question' and an 'answer' ending in '#### N' "
                        f"(row keys: {', '.join(sorted(row))})")
    final = reference_text(full.rsplit("####", 1)[1].strip().replace(",", ""))
    return Problem(task=task, id=str(row.get("id") or default_id), problem=q, answer=final,
                   key=problem_key(q, final), payload={"question": q, "answer": full}, metadata={"solution": full})


def map_gpqa(row: Row) -> dict[str, Any]:
    """Idavidrein/gpqa (gpqa_diamond): Question, Correct Answer, Incorrect Answer 1-3, ...

    There is no letter column: the row becomes uniform + `choices` in canonical order (correct
    first) with `answer` = the correct text; the loader shuffles them with the problem's seed.
    """
    correct = str(_col(row, "Correct Answer")).strip()
    wrong = [str(_col(row, f"Incorrect Answer {i}")).strip() for i in (1, 2, 3)]
    return _clean({
        "problem": str(_col(row, "Question")).strip(),
        "answer": correct,
        "choices": [correct, *wrong],
        "subject": _opt_str(row, "Subdomain") or _opt_str(row, "High-level domain"),
        "solution": _opt_str(row, "Explanation"),
        "source_id": _opt_str(row, "Record ID"),
    })


def map_limo(row: Row) -> dict[str, Any]:
    """GAIR/LIMO: question, solution, answer."""
    return _clean({
        "problem": _col(row, "question"),
        "answer": reference_text(_col(row, "answer")),
        "solution": _opt_str(row, "solution"),
    })
