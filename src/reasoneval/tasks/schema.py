"""The uniform row schema (see /work/shared/datasets/README.md) -> validated `Problem`s.

Uniform row: id (str), problem (str), answer (str; ints/floats accepted and normalised),
optional solution, subject, level (int), year (int), source_id, url, and for multiple-choice
tasks `choices` (list of str). Every error names the file and line and says what to fix.

Multiple-choice rows (gpqa_diamond) may come in two layouts:
  * uniform + `choices`: if `answer` is a letter (A, B, ...) the choices are shown in the given
    order; if `answer` is the text of the correct choice, that choice and the others (in their
    given order) are shuffled with the problem's fixed seed, like the Hub layout;
  * the Hub's own columns (`Question`, `Correct Answer`, `Incorrect Answer 1..3`, ...).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from reasoneval.errors import UserError
from reasoneval.records import CHOICE_LETTERS, Problem
from reasoneval.tasks.choice import shuffle_choices
from reasoneval.tasks.keys import problem_key, reference_text
from reasoneval.tasks.spec import TaskSpec

STR_META = ("solution", "subject", "source_id", "url")
INT_META = ("level", "year")
META_KEYS = ("subject", "level", "year", "source_id", "url", "solution")

log = logging.getLogger("reasoneval")

NumberedRow = tuple[str, Mapping[str, Any]]  # (where: "file:line", row)


def iter_jsonl_rows(path: Path) -> Iterator[NumberedRow]:
    """Rows of a JSONL file as they are read, each tagged with "file:line"; blank lines skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise UserError(f"{path}:{n}: invalid JSON ({e.msg} at column {e.colno}); "
                                    "each line must be one JSON object") from None
                if not isinstance(row, dict):
                    raise UserError(f"{path}:{n}: expected a JSON object, got {type(row).__name__}")
                yield f"{path}:{n}", row
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e.reason}); save it as UTF-8 JSONL") from None
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None


def read_jsonl(path: Path) -> list[NumberedRow]:
    """All rows of a JSONL file (see iter_jsonl_rows); an empty file is an error."""
    rows = list(iter_jsonl_rows(path))
    if not rows:
        raise UserError(f"{path}: file is empty; expected one JSON object per line")
    return rows


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def _get_str(where: str, row: Mapping[str, Any], key: str, *, required: bool, allow_int: bool = False) -> str | None:
    if key not in row or row[key] is None:
        if required:
            raise UserError(f"{where}: missing key {key!r} (row keys: {', '.join(sorted(row)) or 'none'})")
        return None
    v = row[key]
    if allow_int and isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        raise UserError(f"{where}: {key!r} must be a string, got {_type_name(v)}")
    return v


def _get_answer(where: str, row: Mapping[str, Any], key: str = "answer") -> str:
    if key not in row or row[key] is None:
        raise UserError(f"{where}: missing key {key!r} (row keys: {', '.join(sorted(row)) or 'none'})")
    v = row[key]
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise UserError(f"{where}: {key!r} must be a string or a number, got {_type_name(v)}")
    ans = reference_text(v)
    if not ans:
        raise UserError(f"{where}: {key!r} is empty")
    return ans


def _get_int(where: str, row: Mapping[str, Any], key: str) -> int | None:
    v = row.get(key)
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    raise UserError(f"{where}: {key!r} must be an integer, got {_type_name(v)} {v!r}")


def metadata_of(where: str, row: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for k in STR_META:
        v = _get_str(where, row, k, required=False, allow_int=(k == "source_id"))
        if v is not None and v != "":
            meta[k] = v
    for k in INT_META:
        iv = _get_int(where, row, k)
        if iv is not None:
            meta[k] = iv
    return {k: meta[k] for k in META_KEYS if k in meta}


def _choices_of(where: str, row: Mapping[str, Any], problem: str, answer: str) -> tuple[tuple[str, ...], str]:
    raw = row.get("choices")
    if not isinstance(raw, list) or len(raw) < 2 or not all(isinstance(c, str) and c.strip() for c in raw):
        raise UserError(f"{where}: 'choices' must be a list of at least 2 non-empty strings "
                        "(or use the Hub columns Question / Correct Answer / Incorrect Answer 1-3)")
    if len(raw) > len(CHOICE_LETTERS):
        raise UserError(f"{where}: at most {len(CHOICE_LETTERS)} choices are supported, got {len(raw)}")
    choices = [c.strip() for c in raw]
    letters = CHOICE_LETTERS[: len(choices)]
    if len(answer) == 1 and answer.upper() in letters:
        return tuple(choices), answer.upper()
    if answer in choices:
        i = choices.index(answer)
        return shuffle_choices(problem, answer, choices[:i] + choices[i + 1:])
    raise UserError(f"{where}: 'answer' {answer!r} is neither a letter {letters[0]}-{letters[-1]} "
                    "nor the text of one of the choices")


def _is_hub_gpqa(row: Mapping[str, Any]) -> bool:
    return "problem" not in row and "Question" in row and "Correct Answer" in row


def problem_from_row(spec: TaskSpec, where: str, row: Mapping[str, Any], default_id: str) -> Problem | None:
    if spec.row_to_problem is not None:
        return spec.row_to_problem(spec.name, where, row, default_id)
    if spec.scoring.scorer == "choice" and _is_hub_gpqa(row):
        from reasoneval.tasks.hub import map_gpqa  # the Hub layout allowed in a data dir for MC tasks

        mapped = map_gpqa(row)
        assert mapped is not None
        row = {**mapped, "id": row.get("id", default_id)}
    pid = _get_str(where, row, "id", required=False, allow_int=True) or default_id
    problem = _get_str(where, row, "problem", required=True)
    assert problem is not None
    if not problem.strip():
        raise UserError(f"{where}: 'problem' is empty")
    answer = _get_answer(where, row)
    meta = metadata_of(where, row)
    if spec.scoring.scorer == "choice":
        choices, letter = _choices_of(where, row, problem, answer)
        # The key covers what the model sees (text + choices in order) and the letter, so a
        # changed choice list never reuses old samples.
        key = problem_key(problem + "\n" + "\n".join(choices), letter)
        return Problem(task=spec.name, id=pid, problem=problem, answer=letter, key=key,
                       payload={"choices": list(choices)}, metadata=meta)
    return Problem(task=spec.name, id=pid, problem=problem, answer=answer,
                   key=problem_key(problem, answer), metadata=meta)


def problems_from_rows(spec: TaskSpec, rows: Iterable[NumberedRow]) -> list[Problem]:
    """The rows' problems, one per row. Two rows whose problems are the same (the same key: the same text and
    answer, or for a contest the same statement, tests and source id) under different ids stay two problems, as
    the dataset has them: the later one's key also hashes its id (samples are stored by key, so one key would
    merge them), and a warning names them."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    keys: dict[str, str] = {}
    repeats: list[str] = []
    for i, (where, row) in enumerate(rows):
        p = problem_from_row(spec, where, row, f"{spec.name}-{i}")
        if p is None:
            continue
        if p.id in seen:
            raise UserError(f"{where}: duplicate id {p.id!r} (first at {seen[p.id]}); ids must be unique")
        seen[p.id] = where
        if p.key in keys:
            repeats.append(f"{p.id} (same as {keys[p.key]})")
            p = dataclasses.replace(p, key=problem_key(p.key, p.id))
        keys[p.key] = p.id
        problems.append(p)
    if repeats:
        log.warning("task %s: %d rows repeat an earlier row's problem under another id, kept as distinct problems: "
                    "%s", spec.name, len(repeats), ", ".join(repeats[:5]) + (", ..." if len(repeats) > 5 else ""))
    return problems


def check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise UserError(f"--limit must be a positive integer, got {limit!r}")
