"""A user's own data set: a local JSONL / JSON / Parquet / CSV file or a Hub dataset id.

Hub ids may name a config as `owner/name:config` (e.g. `openai/gsm8k:main`). Rows need the
problem and answer columns named by `problem_field` / `answer_field` (`run --problem-field / --answer-field`);
`id_field` is optional (ids default to `<task>-<n>`). Malformed rows are a UserError naming the file and
line/row. The responses are scored with the `math` scorer unless `scorer` names another (`run --scorer`).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.scoring.base import TaskScoring
from reasoneval.tasks.hub_client import hub_offline, load_hub_rows
from reasoneval.tasks.keys import problem_key, reference_text
from reasoneval.tasks.schema import NumberedRow, _get_answer, check_limit, iter_jsonl_rows, metadata_of
from reasoneval.tasks.spec import TaskSpec

FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


def _read_json(path: Path) -> list[NumberedRow]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from None
    if isinstance(data, dict):
        # Accept {"data": [...]}-style wrappers with exactly one list of rows.
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise UserError(f"{path}: expected a JSON list of objects (or an object holding one such list)")
        data = lists[0]
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a JSON list of objects, got {type(data).__name__}")
    if not data:
        raise UserError(f"{path}: file is empty (no rows)")
    rows: list[NumberedRow] = []
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise UserError(f"{path}: row {i}: expected a JSON object, got {type(row).__name__}")
        rows.append((f"{path}: row {i}", row))
    return rows


def _iter_parquet(path: Path) -> Iterator[NumberedRow]:
    """Rows of a Parquet file, a batch at a time (a large file of generations is never held whole)."""
    import pyarrow.parquet as pq

    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=256)
        n = 0
        for batch in batches:
            for r in batch.to_pylist():
                yield f"{path}: row {n}", r
                n += 1
    except UserError:
        raise
    except Exception as e:  # pyarrow raises ArrowInvalid/OSError for non-parquet files
        raise UserError(f"{path}: not a readable Parquet file ({type(e).__name__}: {str(e)[:150]})") from None


def _read_csv(path: Path) -> list[NumberedRow]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows: list[NumberedRow] = []
            start = 2
            for r in reader:
                rows.append((f"{path}:{start}", {k: v for k, v in r.items() if k is not None}))
                start = reader.line_num + 1
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"cannot read {path} as CSV: {e}") from None
    if not rows:
        raise UserError(f"{path}: file is empty (needs a header line and at least one row)")
    return rows


def _read_hub(source: str, split: str | None) -> list[NumberedRow]:
    if hub_offline():
        raise UserError(f"{source!r} is not a local file and the Hub is off (offline mode); "
                        "give a path to a JSONL/JSON/Parquet/CSV file")
    dataset_id, _, config = source.partition(":")
    label = f"{source}[{split}]" if split else source
    return [(f"{label}: row {i}", r) for i, r in enumerate(load_hub_rows(dataset_id, config or None, split))]


def iter_rows(source: str, split: str | None = None) -> tuple[Iterator[NumberedRow], str]:
    """The rows of a JSONL/JSON/Parquet/CSV file (read lazily where the format allows) or of a Hub
    dataset `owner/name[:config]`, each tagged with where it came from; and the source's origin."""
    path = Path(source).expanduser()
    if path.is_file():
        suffix = path.suffix.lower()
        readers: dict[str, Callable[[Path], Iterable[NumberedRow]]] = {
            ".jsonl": iter_jsonl_rows, ".json": _read_json, ".parquet": _iter_parquet, ".csv": _read_csv}
        if suffix not in readers:
            raise UserError(f"{path}: unsupported file type {suffix or '(none)'}; use one of {', '.join(FILE_SUFFIXES)}")
        return iter(readers[suffix](path)), str(path)
    looks_local = (path.suffix.lower() in FILE_SUFFIXES or source.startswith((".", "/", "~"))
                   or path.exists() or not re.fullmatch(r"[\w.-]+/[\w.-]+(:[\w.-]+)?", source))
    if looks_local:
        raise UserError(f"data file {source} not found (or not a file); give a JSONL/JSON/Parquet/CSV "
                        "file or a Hub dataset id like owner/name")
    return iter(_read_hub(source, split)), f"hf:{source}"


def read_rows(source: str, split: str | None = None) -> tuple[list[NumberedRow], str]:
    """All rows of `source` (see iter_rows); no rows is an error."""
    rows_iter, origin = iter_rows(source, split)
    rows = list(rows_iter)
    if not rows:
        raise UserError(f"{source}: file is empty (no rows)")
    return rows, origin


def _user_problem(task: str, where: str, row: Mapping[str, Any], problem_field: str, answer_field: str,
                  id_field: str | None, default_id: str) -> Problem:
    q = row.get(problem_field)
    if q is None:
        raise UserError(f"{where}: missing problem field {problem_field!r} (row keys: {', '.join(map(str, row))}); "
                        "set --problem-field")
    if not isinstance(q, str):
        raise UserError(f"{where}: {problem_field!r} must be a string, got {type(q).__name__}")
    if not q.strip():
        raise UserError(f"{where}: {problem_field!r} is empty")
    if answer_field not in row or row[answer_field] is None:
        raise UserError(f"{where}: missing answer field {answer_field!r} (row keys: {', '.join(map(str, row))}); "
                        "set --answer-field")
    answer = _get_answer(where, row, answer_field)
    pid = default_id
    if id_field is not None:
        v = row.get(id_field)
        if v is None:
            raise UserError(f"{where}: missing id field {id_field!r}; set --id-field or leave it out")
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise UserError(f"{where}: {id_field!r} must be a string or an integer, got {type(v).__name__}")
        pid = str(v)
    meta_row = {k: row[k] for k in ("solution", "subject", "level", "year", "source_id", "url")
                if k in row and k not in (problem_field, answer_field)}
    try:
        meta = metadata_of(where, meta_row)
    except UserError:
        meta = {}  # extra columns are the user's own; never fail a load over them
    return Problem(task=task, id=pid, problem=q, answer=reference_text(answer),
                   key=problem_key(q, answer), metadata=meta)


def load_user_data(source: str, *, problem_field: str, answer_field: str, id_field: str | None = None,
                   split: str | None = None, limit: int | None = None,
                   task_name: str | None = None, scorer: str | None = None) -> tuple[TaskSpec, list[Problem]]:
    check_limit(limit)
    rows, origin = read_rows(source, split)
    if limit is not None:
        rows = rows[:limit]
    if task_name is None:
        p = Path(source)
        task_name = p.stem if p.is_file() else source.split(":")[0].rsplit("/", 1)[-1]
        task_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", task_name) or "data"
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for i, (where, row) in enumerate(rows):
        prob = _user_problem(task_name, where, row, problem_field, answer_field, id_field, f"{task_name}-{i}")
        if prob.id in seen:
            raise UserError(f"{where}: duplicate id {prob.id!r} (first at {seen[prob.id]}); ids must be unique")
        seen[prob.id] = where
        problems.append(prob)
    # A file scored as math answers takes the math tasks' few-shot style; other scorers have none of their own.
    spec = TaskSpec(name=task_name, description=f"user data {source}", origin=origin, prompt="boxed",
                    scoring=TaskScoring(scorer) if scorer else TaskScoring(),
                    fewshot="minerva" if scorer in (None, "math") else None)
    return spec, problems
