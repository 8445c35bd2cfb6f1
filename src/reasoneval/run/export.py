"""`reasoneval export RUN_DIR`: a run's samples as chat-message training data (JSONL or Parquet).

Each row: `messages` (the prompt the run sent, as chat messages, rebuilt by plan's own request_maker from
the run's settings, few-shot exemplars included, and the response as the assistant
turn) and beside it the task, problem id and key, sample index, seed, score, extracted answer, finish
reason, tokens, model and run id. The samples stream from the journal (samples.jsonl) line by line;
only the grades (a few bytes per sample, from results.parquet) and the problems are held in memory, so
a multi-GB run exports in bounded memory.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from reasoneval.analysis.outcomes import iter_problem_rows
from reasoneval.atomic import atomic_open, replace_synced, temp_path
from reasoneval.errors import UserError
from reasoneval.prompts import EXEMPLARS_HASH, PromptConfig
from reasoneval.records import Problem, SamplingParams
from reasoneval.results.schema import RunConfig, load_run
from reasoneval.results.store import SampleStore
from reasoneval.results.store.problems import read_problems
from reasoneval.run.plan import LoadedTask, request_maker
from reasoneval.scoring.base import TaskScoring
from reasoneval.tasks.registry import TASKS
from reasoneval.tasks.spec import TaskSpec

log = logging.getLogger("reasoneval")

ROW_SCHEMA = pa.schema([
    ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("task", pa.string()), ("problem_id", pa.string()), ("problem_key", pa.string()), ("sample_index", pa.int32()),
    ("seed", pa.int64()), ("correct", pa.bool_()), ("score", pa.float64()), ("extracted", pa.string()),
    ("reference", pa.string()), ("finish_reason", pa.string()), ("completion_tokens", pa.int64()),
    ("reasoning", pa.string()), ("model", pa.string()), ("run_id", pa.string()),
    # the scorer's verdict detail, as JSON (code and contest programs: the verdict, tests passed, the first failing
    # test; IFEval: each instruction); None where the scorer gives none
    ("details", pa.string()),
])


# A Parquet row group holds at most this much response text (or batch_rows rows).
BATCH_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ExportFilter:
    correct_only: bool = False
    max_per_problem: int | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None
    keep_truncated: bool = False


@dataclass
class ExportCounts:
    """The rows an export wrote, and the samples it dropped per reason (`dropped_by`)."""

    written: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def dropped_by(flt: ExportFilter, correct: bool, finish_reason: str | None, tokens: int | None, taken: int) -> str | None:
    """Why the filter drops a sample (None: it is kept): incorrect, truncated, length (outside the token bounds) or
    per_problem_cap (`taken` samples of its problem are kept already)."""
    if flt.correct_only and not correct:
        return "incorrect"
    if finish_reason == "length" and not flt.keep_truncated:
        return "truncated"
    if (flt.min_tokens is not None and (tokens is None or tokens < flt.min_tokens)) or \
            (flt.max_tokens is not None and (tokens is None or tokens > flt.max_tokens)):
        return "length"
    if flt.max_per_problem is not None and taken >= flt.max_per_problem:
        return "per_problem_cap"
    return None


def prompt_config(config: RunConfig) -> PromptConfig:
    """The run's prompt choices, as `run` made them (config.json's settings: the system prompt, the
    template's text, and --prompt-style / --num-fewshot / --no-style-stop)."""
    s = config.settings
    style = s.prompt_style or {}
    if style.get("exemplars") not in (None, EXEMPLARS_HASH):
        log.warning("the few-shot exemplars changed since run %s was made: its exported prompts hold today's "
                    "exemplars, not the ones the model saw", config.run_id)
    return PromptConfig(system_prompt=s.system_prompt, template=s.prompt_template, num_fewshot=style.get("num_fewshot"),
                        style_override=style.get("style"), style_stop=bool(style.get("style_stop", True)),
                        fewshot_seed=style.get("fewshot_seed"))


def recorded_task_spec(config: RunConfig, task: str) -> TaskSpec:
    if task in TASKS.names():
        return TASKS.get(task)
    scoring = config.scoring.get(task) or TaskScoring()
    # A file of generations imported with `score` was never prompted here: the prompt its scorer expects.
    prompt = "choice" if config.engine == "score" and scoring.scorer == "choice" else "boxed"
    return TaskSpec(name=task, description="user data", scoring=scoring, prompt=prompt)  # as load_user_data's


def sent_prompts(config: RunConfig, problems: Sequence[Problem], data_dir: Path | None = None
                 ) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(task, problem key) -> the prompt the run sent for that problem, as chat messages (a completions run's
    prompt as one user message): built by `plan`'s own request_maker from the run's settings, with the
    problems in the order the run covered them (a drawn few-shot style's exemplars depend on it) and the
    few-shot pool the pipeline loads (`with_fewshot_pool`: the data dir, cache or Hub)."""
    from reasoneval.run.generation import with_fewshot_pool

    prompt = prompt_config(config)
    by_task: dict[str, list[Problem]] = {}
    for p in problems:
        by_task.setdefault(p.task, []).append(p)
    tasks = []
    for task, ps in by_task.items():
        order = {k: i for i, k in enumerate(config.problem_keys.get(task, []))}
        ps = sorted(ps, key=lambda p: order.get(p.key, len(order)))  # stable: the rest in first-seen order
        tasks.append(with_fewshot_pool(LoadedTask(recorded_task_spec(config, task), ps), prompt, data_dir))
    s = config.settings
    api = s.api or "chat"
    make = request_maker(tasks, seed=s.seed or 0, sampling=s.sampling or SamplingParams(), api=api, prompt=prompt)
    out: dict[tuple[str, str], list[dict[str, str]]] = {}
    for t in tasks:
        for p in t.problems:
            req = make(p, 0)
            if req.prompt is not None:
                out[(p.task, p.key)] = [{"role": "user", "content": req.prompt}]
            else:
                out[(p.task, p.key)] = [dict(m) for m in req.messages or ()]
    return out


def iter_export_rows(run_dir: Path, flt: ExportFilter, counts: ExportCounts | None = None,
                     data_dir: Path | None = None) -> Iterator[dict[str, Any]]:
    """data_dir: where a drawn few-shot style's pool is read from (default: $REASONEVAL_DATA_DIR, else the
    cache or the Hub, as `run` does)."""
    run_dir = Path(run_dir)
    result = load_run(run_dir)
    counts = counts if counts is not None else ExportCounts()
    grades: dict[tuple[str, str], dict[int, tuple[bool, str | None, str | None]]] = {}
    for d in iter_problem_rows(run_dir, ("task", "problem_key", "sample_indices", "correct", "extracted", "details")):
        details = d.get("details") or [None] * len(d["sample_indices"])  # type: ignore[arg-type]
        grades[(str(d["task"]), str(d["problem_key"]))] = {
            int(i): (bool(c), e, dt) for i, c, e, dt in zip(d["sample_indices"], d["correct"], d["extracted"],  # type: ignore[call-overload]
                                                           details)}
    every = read_problems(run_dir)
    problems = {(p.task, p.key): p for p in every if (p.task, p.key) in grades}
    if data_dir is None and os.environ.get("REASONEVAL_DATA_DIR"):
        data_dir = Path(os.environ["REASONEVAL_DATA_DIR"])
    # Every problem of the exported tasks, not only the graded ones: a drawn style's shots depend on the position.
    graded_tasks = {task for task, _ in grades}
    prompts = sent_prompts(result.config, [p for p in every if p.task in graded_tasks], data_dir)
    taken: dict[tuple[str, str], int] = {}
    seen: set[tuple[str, str, int]] = set()
    for rec in SampleStore(run_dir).records():
        key = (rec.task, rec.problem_key)
        g = grades.get(key, {}).get(rec.index)
        if rec.status != "ok" or g is None or (rec.task, rec.problem_key, rec.index) in seen:
            continue  # failed, beyond K, not in the run's last report, or a duplicate line
        seen.add((rec.task, rec.problem_key, rec.index))
        correct, extracted, details = g
        toks = rec.completion_tokens
        reason = dropped_by(flt, correct, rec.finish_reason, toks, taken.get(key, 0))
        if reason is not None:
            counts.dropped[reason] += 1
            continue
        taken[key] = taken.get(key, 0) + 1
        problem = problems[key]
        counts.written += 1
        yield {"messages": [*prompts[key], {"role": "assistant", "content": rec.text or ""}],
               "task": rec.task, "problem_id": rec.problem_id, "problem_key": rec.problem_key,
               "sample_index": rec.index, "seed": rec.seed, "correct": correct, "score": 1.0 if correct else 0.0,
               "extracted": extracted, "reference": problem.answer, "finish_reason": rec.finish_reason,
               "completion_tokens": toks, "reasoning": rec.reasoning, "model": result.model, "run_id": result.run_id,
               "details": details}


def export_run(run_dir: Path | str, out: Path | str, flt: ExportFilter, fmt: str | None = None,
               batch_rows: int = 512, data_dir: Path | None = None) -> ExportCounts:
    """Write the rows to `out` (.jsonl or .parquet, or `fmt`); returns what was written and dropped."""
    out = Path(out)
    fmt = fmt or ("parquet" if out.suffix == ".parquet" else "jsonl" if out.suffix in (".jsonl", ".json") else None)
    if fmt not in ("jsonl", "parquet"):
        raise UserError(f"cannot tell the format of {out}: name it .jsonl or .parquet, or pass --format")
    counts = ExportCounts()
    rows = iter_export_rows(Path(run_dir), flt, counts, data_dir)
    if fmt == "jsonl":
        with atomic_open(out) as f:
            _write_jsonl(f, rows)
        return counts
    tmp = temp_path(out)
    try:
        writer = pq.ParquetWriter(tmp, ROW_SCHEMA, compression="zstd")
        try:
            batch: list[dict[str, Any]] = []
            size = 0
            for r in rows:
                batch.append(r)
                size += len(r["messages"][-1]["content"])
                if len(batch) >= batch_rows or size >= BATCH_BYTES:
                    _write_batch(writer, batch)
                    batch, size = [], 0
            if batch:
                _write_batch(writer, batch)
        finally:
            writer.close()
        replace_synced(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return counts


def _write_batch(writer: pq.ParquetWriter, batch: list[dict[str, Any]]) -> None:
    writer.write_table(pa.Table.from_pylist(batch, schema=ROW_SCHEMA))
    pa.default_memory_pool().release_unused()  # Arrow keeps freed buffers otherwise: 446 MB on a 2 GB run


def _write_jsonl(f: IO[str], rows: Iterator[dict[str, Any]]) -> None:
    for r in rows:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
