"""`reasoneval score PATH`: grade a run directory again, or an external file of generations.

An external file is turned into a run directory (config.json, problems.jsonl, samples.jsonl) beside it,
then graded and reported exactly like a run, so the summary, parquet and table are the same.
Accepted: JSONL / JSON with a problem field and a response field or list (e.g. `gen`), Parquet with a
`responses` list column, and lm-evaluation-harness `samples_*.jsonl` logs (`doc`, `target`, `resps`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from .errors import UserError
from .result import RunConfig, RunResult, write_config
from .scoring import SCORERS, TaskScoring
from .store import SampleStore, add_problems
from .tasks import problem_key
from .tasks.user_data import iter_rows
from .types import Problem, SampleRecord

PROBLEM_KEYS = ("problem", "question", "prompt", "input", "query")
ANSWER_KEYS = ("answer", "gt", "ground_truth", "reference", "target", "expected_answer", "final_answer")
RESPONSE_KEYS = ("responses", "gen", "generations", "response", "output", "outputs", "completion",
                 "completions", "generation", "model_output")


def _pick(row: Mapping[str, Any], override: str | None, candidates: Sequence[str], what: str, where: str) -> Any:
    if override:
        if override not in row:
            raise UserError(f"{where}: no {override!r} field (given with --{what}-key); fields: {', '.join(row)}")
        return row[override]
    for k in candidates:
        if k in row and row[k] is not None:
            return row[k]
    raise UserError(f"{where}: no {what} field (looked for {', '.join(candidates)}); name it with --{what}-key")


def _as_text(value: Any) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _responses(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out: list[str] = []
        for v in value:  # lm-eval: a list (per request) of lists (per output)
            if isinstance(v, list):
                out.extend(str(x) for x in v)
            elif v is not None:
                out.append(str(v))
        return out
    raise UserError(f"{where}: the response field must be a string or a list of strings")


def import_generations(path: Path, out_dir: Path, *, task: str, scorer: str, problem_key_name: str | None,
                       answer_key: str | None, response_key: str | None) -> int:
    """Write `out_dir` as a run directory holding the file's problems and responses; returns K."""
    out_dir.mkdir(parents=True, exist_ok=True)
    problems: list[Problem] = []
    K = 0
    with SampleStore(out_dir) as store:
        if store.path.stat().st_size if store.path.exists() else 0:
            store.path.write_bytes(b"")  # re-import from scratch: the file is the source of truth
        seen: set[str] = set()
        for n, (where, row) in enumerate(iter_rows(str(path))[0]):
            if "doc" in row and "resps" in row and isinstance(row["doc"], dict):  # lm-evaluation-harness
                doc = row["doc"]
                q = _pick(doc, problem_key_name, PROBLEM_KEYS, "problem", where)
                a = row.get("target") if answer_key is None and row.get("target") is not None else \
                    _pick(doc, answer_key, ANSWER_KEYS, "answer", where)
                resp = row["resps"] if response_key is None else _pick(row, response_key, (), "response", where)
                pid = str(row.get("doc_id", n))
            else:
                q = _pick(row, problem_key_name, PROBLEM_KEYS, "problem", where)
                a = _pick(row, answer_key, ANSWER_KEYS, "answer", where)
                resp = _pick(row, response_key, RESPONSE_KEYS, "response", where)
                pid = str(row.get("id", row.get("idx", n)))
            question, answer = _as_text(q), _as_text(a)
            key = problem_key(question, answer)
            if key in seen:
                key = problem_key(question + f"\x1f{n}", answer)  # the same problem twice stays two rows
            seen.add(key)
            p = Problem(task=task, id=pid, problem=question, answer=answer, key=key)
            problems.append(p)
            texts = _responses(resp, where)
            K = max(K, len(texts))
            for j, text in enumerate(texts):
                store.append(SampleRecord(task=task, problem_key=key, problem_id=pid, index=j, seed=-1,
                                          status="ok", text=text))
    if not problems:
        raise UserError(f"{path} holds no rows")
    (out_dir / "problems.jsonl").unlink(missing_ok=True)
    add_problems(out_dir, problems)
    write_config(out_dir, RunConfig(
        run_id=out_dir.name, settings={"model": path.stem}, engine="score", source=str(path), n=K, tasks=[task],
        problem_keys={task: [p.key for p in problems]}, scoring={task: TaskScoring(scorer)},
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z")))
    return K


def score(path: str, *, n: int | None = None, output_dir: str | None = None, task: str | None = None,
          scorer: str = "math", problem_key_name: str | None = None, answer_key: str | None = None,
          response_key: str | None = None, workers: int | None = None, grading_timeout: float = 5.0,
          print_table: bool = True) -> RunResult:
    from .pipeline import score_run

    src = Path(path)
    if not src.exists():
        raise UserError(f"{path} does not exist")
    if src.is_dir():
        return score_run(src, n=n, workers=workers, grading_timeout=grading_timeout, print_table=print_table)
    out = Path(output_dir) if output_dir else src.with_name(src.name + ".reasoneval")
    SCORERS.get(scorer)  # an unknown scorer fails before anything is written
    K = import_generations(src, out, task=task or src.stem, scorer=scorer, problem_key_name=problem_key_name,
                           answer_key=answer_key, response_key=response_key)
    return score_run(out, n=n or K, workers=workers, grading_timeout=grading_timeout, print_table=print_table)


def add_score_parser(sub: Any, fmt: Any) -> None:
    p = sub.add_parser("score", help="grade a run directory again, or an external file of generations",
                       formatter_class=fmt, epilog="examples:\n"
                       "  reasoneval score results/my-model/0123abcd4567     # after a grader change\n"
                       "  reasoneval score gens.jsonl --response-key gen --answer-key gt\n"
                       "  reasoneval score samples_aime24_2025-01-01.jsonl   # lm-evaluation-harness log\n"
                       "Writes summary.json, results.parquet and the table (for a file: into FILE.reasoneval/).")
    p.add_argument("path")
    p.add_argument("--n", type=int, help="use sample indices < N")
    p.add_argument("--output-dir", help="where a file's run directory goes (default: FILE.reasoneval beside it)")
    p.add_argument("--task", help="task name for a file (default: the file name)")
    p.add_argument("--scorer", "--kind", dest="scorer", default="math", help="how a file's responses are scored: "
                   + ", ".join(SCORERS.names()) + " (default math)")
    p.add_argument("--problem-key", dest="problem_key_name")
    p.add_argument("--answer-key")
    p.add_argument("--response-key")
    p.add_argument("--grading-workers", type=int)
    p.add_argument("--grading-timeout", type=float, default=5.0, help="seconds per grading item")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_score)


def _cmd_score(a: argparse.Namespace) -> int:
    from .errors import RunIncomplete

    s = score(a.path, n=a.n, output_dir=a.output_dir, task=a.task, scorer=a.scorer,
              problem_key_name=a.problem_key_name, answer_key=a.answer_key, response_key=a.response_key,
              workers=a.grading_workers, grading_timeout=a.grading_timeout, print_table=not a.json)
    if a.json:
        print(json.dumps(s.to_json_dict(), indent=2))
    if not s.complete:
        raise RunIncomplete(s)
    return 0
