"""`reasoneval export RUN_DIR`: a run's samples as chat-message training data (JSONL or Parquet).

Each row: `messages` (the prompt the run sent, as chat messages, and the response as the assistant
turn) and beside it the task, problem id and key, sample index, seed, score, extracted answer, finish
reason, tokens, model and run id. The samples stream from the journal (samples.jsonl) line by line;
only the grades (a few bytes per sample, from results.parquet) and the problems are held in memory, so
a multi-GB run exports in bounded memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from reasoneval.analysis.outcomes import iter_problem_rows
from reasoneval.errors import UserError
from reasoneval.prompts import PromptConfig, build_messages, build_prompt
from reasoneval.records import Problem
from reasoneval.results.schema import RunConfig, load_run
from reasoneval.results.store import SampleStore
from reasoneval.results.store.problems import read_problems
from reasoneval.tasks.catalog import TASKS

ROW_SCHEMA = pa.schema([
    ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("task", pa.string()), ("problem_id", pa.string()), ("problem_key", pa.string()), ("sample_index", pa.int32()),
    ("seed", pa.int64()), ("correct", pa.bool_()), ("score", pa.float64()), ("extracted", pa.string()),
    ("reference", pa.string()), ("finish_reason", pa.string()), ("completion_tokens", pa.int64()),
    ("reasoning", pa.string()), ("model", pa.string()), ("run_id", pa.string()),
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
    written: int = 0
    incorrect: int = 0
    truncated: int = 0
    length: int = 0
    per_problem_cap: int = 0


def _prompt_style(config: RunConfig, task: str) -> str:
    if task in TASKS.names():
        return TASKS.get(task).prompt
    scoring = config.scoring.get(task)
    return "choice" if scoring is not None and scoring.scorer == "choice" else "boxed"


def _prompt_messages(problem: Problem, config: RunConfig) -> list[dict[str, str]]:
    s = config.settings
    cfg = PromptConfig(system_prompt=s.get("system_prompt"), template=s.get("prompt_template"),
                       style=_prompt_style(config, problem.task))
    if s.get("api") == "completions":
        return [{"role": "user", "content": build_prompt(problem, cfg)}]
    return [dict(m) for m in build_messages(problem, cfg)]


def iter_export_rows(run_dir: Path, flt: ExportFilter, counts: ExportCounts | None = None) -> Iterator[dict[str, Any]]:
    run_dir = Path(run_dir)
    result = load_run(run_dir)
    counts = counts if counts is not None else ExportCounts()
    grades: dict[tuple[str, str], dict[int, tuple[bool, str | None]]] = {}
    for d in iter_problem_rows(run_dir, ("task", "problem_key", "sample_indices", "correct", "extracted")):
        grades[(str(d["task"]), str(d["problem_key"]))] = {
            int(i): (bool(c), e) for i, c, e in zip(d["sample_indices"], d["correct"], d["extracted"])}  # type: ignore[call-overload]
    problems = {(p.task, p.key): p for p in read_problems(run_dir) if (p.task, p.key) in grades}
    prompts: dict[tuple[str, str], list[dict[str, str]]] = {}
    taken: dict[tuple[str, str], int] = {}
    seen: set[tuple[str, str, int]] = set()
    for rec in SampleStore(run_dir).records():
        key = (rec.task, rec.problem_key)
        g = grades.get(key, {}).get(rec.index)
        if rec.status != "ok" or g is None or (rec.task, rec.problem_key, rec.index) in seen:
            continue  # failed, beyond K, not in the run's last report, or a duplicate line
        seen.add((rec.task, rec.problem_key, rec.index))
        correct, extracted = g
        if flt.correct_only and not correct:
            counts.incorrect += 1
            continue
        if rec.finish_reason == "length" and not flt.keep_truncated:
            counts.truncated += 1
            continue
        toks = rec.completion_tokens
        if (flt.min_tokens is not None and (toks is None or toks < flt.min_tokens)) or \
                (flt.max_tokens is not None and (toks is None or toks > flt.max_tokens)):
            counts.length += 1
            continue
        if flt.max_per_problem is not None and taken.get(key, 0) >= flt.max_per_problem:
            counts.per_problem_cap += 1
            continue
        taken[key] = taken.get(key, 0) + 1
        problem = problems[key]
        if key not in prompts:
            prompts[key] = _prompt_messages(problem, result.config)
        counts.written += 1
        yield {"messages": [*prompts[key], {"role": "assistant", "content": rec.text or ""}],
               "task": rec.task, "problem_id": rec.problem_id, "problem_key": rec.problem_key,
               "sample_index": rec.index, "seed": rec.seed, "correct": correct, "score": 1.0 if correct else 0.0,
               "extracted": extracted, "reference": problem.answer, "finish_reason": rec.finish_reason,
               "completion_tokens": toks, "reasoning": rec.reasoning, "model": result.model, "run_id": result.run_id}


def export_run(run_dir: Path | str, out: Path | str, flt: ExportFilter, fmt: str | None = None,
               batch_rows: int = 512) -> ExportCounts:
    """Write the rows to `out` (.jsonl or .parquet, or `fmt`); returns what was written and dropped."""
    out = Path(out)
    fmt = fmt or ("parquet" if out.suffix == ".parquet" else "jsonl" if out.suffix in (".jsonl", ".json") else None)
    if fmt not in ("jsonl", "parquet"):
        raise UserError(f"cannot tell the format of {out}: name it .jsonl or .parquet, or pass --format")
    counts = ExportCounts()
    rows = iter_export_rows(Path(run_dir), flt, counts)
    tmp = out.with_name(out.name + ".tmp")
    if fmt == "jsonl":
        with open(tmp, "w", encoding="utf-8") as f:
            _write_jsonl(f, rows)
    else:
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
    tmp.replace(out)
    return counts


def _write_batch(writer: pq.ParquetWriter, batch: list[dict[str, Any]]) -> None:
    writer.write_table(pa.Table.from_pylist(batch, schema=ROW_SCHEMA))
    pa.default_memory_pool().release_unused()  # Arrow keeps freed buffers otherwise: 446 MB on a 2 GB run


def _write_jsonl(f: IO[str], rows: Iterator[dict[str, Any]]) -> None:
    for r in rows:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
