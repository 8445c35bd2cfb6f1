"""Files of generations for the competition tasks (`reasoneval score FILE --task livecodebench|code_contests|apps|taco`):
each row names a problem of the task and carries its programs or responses; joined to the task's own problems
(their tests), so the file is graded exactly like a run of that task (docs/contests.md, "Grading a file").

Accepted, each recognised by its fields:
- lcb_runner's generation output (and its `_eval_all.json`): a JSON list of {question_id, question_content,
  output_list, code_list, ...}; `code_list` (the programs lcb_runner extracted and grades) is graded by default,
  `--response-field output_list` grades the raw outputs with our own extraction instead.
- SkyThought's results.json: a JSON object {index: {<the dataset row>, responses: [{content, ...}], ...}} (its
  LiveCodeBench records name the problem `task_id`, APPS's `problem_id`, TACO's only by `question`).
- our own `reasoneval export`: rows of {messages, task, problem_id, problem_key, ...}, one per sample.
- any JSON/JSONL/Parquet file whose rows name a problem (problem_key, question_id, problem_id, name, id, or the
  statement) beside a response field (a string or a list), or a `code` field holding a bare program.

A problem is found by, in this order: our problem_key; the source's own id (LiveCodeBench's question_id or task_id,
APPS's problem_id, CodeContests' name); our problem id; the statement (whitespace-normalised; a TACO statement that recurs
is told apart by its url). Rows that name no problem of the task, and rows without a response field, are one-line
errors naming them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks.keys import normalize_ws
from reasoneval.tasks.schema import NumberedRow
from reasoneval.tasks.spec import TaskSpec
from reasoneval.tasks.user_data import iter_rows

CONTEST_TASKS = ("livecodebench", "code_contests", "apps", "taco")
# LiveCodeBench's question_id (SkyThought's LiveCodeBench records call it task_id), APPS's, CodeContests'
SOURCE_ID_FIELDS = ("question_id", "task_id", "problem_id", "name")
OWN_ID_FIELDS = ("problem_id", "id")  # ours (`reasoneval export`, a run's problems)
STATEMENT_FIELDS = ("question_content", "question", "description", "problem")
CODE_FIELDS = ("code_list", "code")  # bare programs: fenced, as the contest scorer grades a response's last block


def contest_task(task: str | None, scorer: str, first_row: Mapping[str, Any] | None) -> str | None:
    """The competition task a file is joined to: `--task` when it is one; with `--scorer contest` and no task, the
    task its first row names (an export's `task`; lcb_runner's question_id + code_list: livecodebench). None: not
    a competition file."""
    if task in CONTEST_TASKS:
        return task
    if scorer != "contest":
        return None
    names = ", ".join(CONTEST_TASKS)
    if task is not None:
        raise UserError(f"--scorer contest grades against a task's own tests: give --task one of {names} "
                        f"(not {task!r})")
    row = first_row or {}
    if str(row.get("task")) in CONTEST_TASKS:
        return str(row["task"])
    if "question_id" in row and "code_list" in row:
        return "livecodebench"
    raise UserError(f"--scorer contest: cannot tell the task from the file's first row; give --task one of {names}")


def read_generation_rows(path: Path) -> Iterable[NumberedRow]:
    """The file's rows; a JSON object of objects (SkyThought's results.json: index -> record) as its records."""
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            data = None  # iter_rows names what is wrong
        if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
            return [(f"{path}: entry {k!r}", v) for k, v in data.items()]
    return iter_rows(str(path))[0]


class _Index:
    """The task's problems by each name a file may give them."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.by_key = {p.key: p for p in problems}
        self.by_id = {p.id: p for p in problems}
        self.by_source: dict[str, list[Problem]] = {}
        self.by_statement: dict[str, list[Problem]] = {}
        for p in problems:
            if p.metadata.get("source_id") is not None:
                self.by_source.setdefault(str(p.metadata["source_id"]), []).append(p)
            self.by_statement.setdefault(normalize_ws(p.problem), []).append(p)


def _one(hits: list[Problem], row: Mapping[str, Any], what: str, where: str) -> Problem | None:
    if len(hits) > 1 and row.get("url"):
        hits = [p for p in hits if p.metadata.get("url") == row["url"]] or hits
    if len(hits) > 1:
        raise UserError(f"{where}: {what} matches {len(hits)} problems ({', '.join(p.id for p in hits[:4])}); name "
                        "the problem by problem_key or problem_id (as `reasoneval export` writes them)")
    return hits[0] if hits else None


def _find(row: Mapping[str, Any], index: _Index, where: str) -> tuple[Problem | None, list[str]]:
    """The problem a row names, or None and the names it gave (empty: it gave none)."""
    tried: list[str] = []
    if row.get("problem_key") is not None:
        key = str(row["problem_key"])
        if key in index.by_key:
            return index.by_key[key], []
        tried.append(f"problem_key {key!r}")
    for field in SOURCE_ID_FIELDS:
        if row.get(field) is not None:
            value = str(row[field])
            p = _one(index.by_source.get(value, []), row, f"{field} {value!r}", where)
            if p is not None:
                return p, []
            tried.append(f"{field} {value[:60]!r}")
    for field in OWN_ID_FIELDS:
        if row.get(field) is not None and str(row[field]) in index.by_id:
            return index.by_id[str(row[field])], []
    for field in STATEMENT_FIELDS:
        if isinstance(row.get(field), str) and row[field].strip():
            p = _one(index.by_statement.get(normalize_ws(row[field]), []), row, f"its {field}", where)
            if p is not None:
                return p, []
            tried.append(f"{field} {normalize_ws(row[field])[:40]!r}...")
            break
    return None, tried


def _texts(value: Any, field: str, where: str) -> list[str]:
    if field == "messages":  # an export row: the assistant's turn is the response
        turns = [m for m in value if isinstance(m, Mapping) and m.get("role") == "assistant"] \
            if isinstance(value, list) else []
        if not turns or not isinstance(turns[-1].get("content"), str):
            raise UserError(f"{where}: 'messages' holds no assistant turn with a text content")
        return [turns[-1]["content"]]
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for v in items:
        if isinstance(v, Mapping):  # SkyThought: {"content": ..., "correctness": ..., "reason": ...}
            v = v.get("content")
        if not isinstance(v, str):
            raise UserError(f"{where}: {field!r} must be a string or a list of strings (or of {{content: text}}), "
                            f"got an item of type {type(v).__name__}")
        out.append(v)
    return out


def row_responses(row: Mapping[str, Any], where: str, response_field: str | None,
                  response_fields: Sequence[str]) -> list[str]:
    """A row's responses as texts the contest scorer grades; a bare program (code_list, code) fenced, an empty one
    (lcb_runner's extraction found none) left empty, so it is graded as no code."""
    candidates = ("code_list", "responses", "messages", *response_fields, "code")
    if response_field is not None:
        if response_field not in row:
            raise UserError(f"{where}: no {response_field!r} field (given with --response-field); fields: "
                            f"{', '.join(row)}")
        field = response_field
    else:
        found = [f for f in candidates if row.get(f) is not None]
        if not found:
            raise UserError(f"{where}: no code or response field (looked for {', '.join(dict.fromkeys(candidates))}); "
                            f"name it with --response-field; fields: {', '.join(row)}")
        field = found[0]
    texts = _texts(row[field], field, where)
    if field in CODE_FIELDS:
        texts = [f"```python\n{t}\n```" if t.strip() else "" for t in texts]
    return texts


def _row_name(where: str, path: Path) -> str:
    """"line 3" / "row 0" / "entry '7'" of a row's "file:line"-style tag."""
    rest = where[len(str(path)):].lstrip(": ") if where.startswith(str(path)) else where
    return f"line {rest}" if rest.isdigit() else rest


def join_contest_file(path: Path, task: str, spec: TaskSpec, problems: Sequence[Problem], *,
                      response_field: str | None, response_fields: Sequence[str]) -> dict[str, list[str]]:
    """Each problem's responses (by key, in file order) from the file's rows; rows naming no problem of the task are
    one error naming them all (the first few)."""
    index = _Index(problems)
    texts: dict[str, list[str]] = {}
    unmatched: list[str] = []
    count = 0
    for where, row in read_generation_rows(path):
        count += 1
        if row.get("task") is not None and str(row["task"]) != task:
            raise UserError(f"{where}: a row of task {row['task']!r} in a file graded as {task}; give --task "
                            f"{row['task']} or keep only {task}'s rows")
        problem, tried = _find(row, index, where)
        if problem is None:
            if not tried:
                raise UserError(f"{where}: no field naming a {task} problem (looked for problem_key, "
                                f"{', '.join(dict.fromkeys((*SOURCE_ID_FIELDS, *OWN_ID_FIELDS)))} or the statement "
                                f"{'/'.join(STATEMENT_FIELDS)}); fields: {', '.join(row)}")
            unmatched.append(f"{_row_name(where, path)}: {tried[0]}")
            continue
        got = row_responses(row, where, response_field, response_fields)
        if got:  # an empty list (no generation yet) adds no problem
            texts.setdefault(problem.key, []).extend(got)
    if not count:
        raise UserError(f"{path} holds no rows")
    if unmatched:
        advice = (f"is this a {task} file of the same data (--data-dir)?" if index.by_source else
                  f"these {task} problems carry no source ids (the data dir's copy has none): give each row its "
                  "statement (question_content / question) or our problem_id")
        raise UserError(f"{path}: {len(unmatched)} of {count} rows name no problem of task {task} "
                        f"({len(problems)} problems from {spec.origin or spec.source}): {'; '.join(unmatched[:3])}"
                        f"{'; ...' if len(unmatched) > 3 else ''}; {advice}")
    if not texts:
        raise UserError(f"{path}: no row holds a program or response (every list is empty)")
    return texts
