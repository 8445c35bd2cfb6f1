"""Grade a run directory's samples and compute its summary, streaming the journal.

Memory stays flat as the journal grows: a first pass keeps only each sample's byte offset; then
problems are graded a chunk at a time, their rows written to results.parquet as they go.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import UserError
from ..grading import GradeItem, GradingPool
from ..metrics import ProblemOutcome, aggregate_metrics, task_metrics
from ..store import iter_jsonl, read_problems
from ..store.sample_store import SAMPLES_FILE
from ..types import Problem
from .parquet import ResultsWriter

log = logging.getLogger("reasoneval")

CHUNK_PROBLEMS = 64
# Responses held at once (graded together, then written to results.parquet): bounds memory when
# responses are long (64 samples x 64 KB is 4 MB per problem), whatever the store's size.
CHUNK_BYTES = 16 << 20
# Response bytes per results.parquet batch (Arrow holds ~3x that while building and compressing it).
PARQUET_BATCH_BYTES = 8 << 20


@dataclass
class Summary:
    """What `evaluate()` returns and summary.json holds."""

    model: str
    run_id: str
    run_dir: Path
    config: dict[str, Any]
    tasks: dict[str, dict[str, Any]]
    aggregate: dict[str, Any]
    timing: dict[str, Any]
    complete: bool
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        return {"model": self.model, "run_id": self.run_id, "config": self.config, "tasks": self.tasks,
                "aggregate": self.aggregate, "timing": self.timing, "complete": self.complete, **self.extra}


def select_problems(all_problems: Sequence[tuple[Problem, float | None]], tasks: Sequence[str] | None,
                    keys: Mapping[str, Sequence[str]] | None = None) -> list[tuple[Problem, float | None]]:
    """The problems a summary covers: those of `tasks` (all when None), restricted to `keys` per task."""
    out = []
    for p, tol in all_problems:
        if tasks is not None and p.task not in tasks:
            continue
        if keys is not None and p.task in keys and p.key not in keys[p.task]:
            continue
        out.append((p, tol))
    if tasks is not None:
        order = {t: i for i, t in enumerate(tasks)}
        out.sort(key=lambda pt: order[pt[0].task])  # stable: file order within a task
    return out


def _index_samples(run_dir: Path, wanted: set[tuple[str, str]], K: int) -> dict[tuple[str, str], dict[int, int]]:
    """(task, key) -> {sample index: byte offset of its ok line}, for indices < K."""
    index: dict[tuple[str, str], dict[int, int]] = {}
    for offset, d in iter_jsonl(run_dir / SAMPLES_FILE, with_offsets=True):
        if d.get("status") != "ok":
            continue
        pk = (d.get("task"), d.get("problem_key"))
        i = d.get("index")
        if pk not in wanted or not isinstance(i, int) or i >= K:
            continue
        index.setdefault(pk, {}).setdefault(i, offset)  # type: ignore[arg-type]
    return index


def _read_at(f: Any, offset: int) -> dict[str, Any]:
    f.seek(offset)
    return json.loads(f.readline())


def build_summary(run_dir: Path, *, K: int, problems: Sequence[tuple[Problem, float | None]], pool: GradingPool,
                  config: dict[str, Any], timing: dict[str, Any], write: bool = True) -> Summary:
    run_dir = Path(run_dir)
    if not problems:
        raise UserError(f"{run_dir} holds no problems to report on (check --tasks)")
    wanted = {(p.task, p.key) for p, _ in problems}
    index = _index_samples(run_dir, wanted, K)
    outcomes: dict[str, list[ProblemOutcome]] = {}
    meta: dict[str, list[Mapping[str, Any]]] = {}
    writer = ResultsWriter(run_dir / "results.parquet") if write else None
    samples_path = run_dir / SAMPLES_FILE
    try:
        with open(samples_path, "rb") if samples_path.exists() else open(os.devnull, "rb") as f:
            pos = 0
            written_bytes = written_rows = 0
            while pos < len(problems):
                # A chunk: up to CHUNK_PROBLEMS problems or CHUNK_BYTES of responses, at least one problem.
                chunk: list[tuple[Problem, float | None]] = []
                recs: list[list[dict[str, Any]]] = []
                size = 0
                while pos < len(problems) and len(chunk) < CHUNK_PROBLEMS and (not chunk or size < CHUNK_BYTES):
                    p, tol = problems[pos]
                    pos += 1
                    rs = [_read_at(f, off) for _, off in sorted(index.get((p.task, p.key), {}).items())]
                    size += sum(len(r.get("text") or "") for r in rs)
                    chunk.append((p, tol))
                    recs.append(rs)
                if writer is not None:
                    # Parquet rows wait in the writer until a batch is full: keep a batch near
                    # PARQUET_BATCH_BYTES of responses (256 rows of short answers, 2 of 4 MB ones).
                    written_bytes, written_rows = written_bytes + size, written_rows + len(chunk)
                    writer.batch_rows = max(1, min(256, PARQUET_BATCH_BYTES * written_rows // max(1, written_bytes)))
                _grade_chunk(chunk, recs, K, pool, outcomes, meta, writer)
    finally:
        if writer is not None:
            writer.close()
    tasks = {t: task_metrics(o, K) for t, o in outcomes.items()}
    aggregate = aggregate_metrics(outcomes, K)
    complete = all(o.num_missing == 0 for os_ in outcomes.values() for o in os_)
    summary = Summary(model=config.get("settings", {}).get("model", ""), run_id=config.get("run_id", ""),
                      run_dir=run_dir, config=config, tasks=tasks, aggregate=aggregate, timing=timing,
                      complete=complete)
    if write:
        write_json_atomic(run_dir / "summary.json", summary.to_json_dict())
    return summary


def _grade_chunk(chunk: Sequence[tuple[Problem, float | None]], recs: Sequence[Sequence[dict[str, Any]]], K: int,
                 pool: GradingPool, outcomes: dict[str, list[ProblemOutcome]],
                 meta: dict[str, list[Mapping[str, Any]]], writer: ResultsWriter | None) -> None:
    items = [GradeItem(response=r.get("text") or "", reference=p.answer, kind=p.kind,
                       finish_reason=r.get("finish_reason"), rel_tol=tol)
             for (p, tol), rs in zip(chunk, recs) for r in rs]
    grades = pool.grade_many(items)
    groups = []
    pos = 0
    per_problem_grades = []
    for (p, _), rs in zip(chunk, recs):
        g = grades[pos:pos + len(rs)]
        pos += len(rs)
        per_problem_grades.append(g)
        groups.append(([x.extracted for x in g], p.kind))
    classes = pool.cluster_many(groups)
    for (p, _), rs, g, cl in zip(chunk, recs, per_problem_grades, classes):
        correct_classes = frozenset(c for c, x in zip(cl, g) if c is not None and x.correct)
        outcome = ProblemOutcome(
            task=p.task, problem_key=p.key, correct=[x.correct for x in g], classes=list(cl),
            correct_classes=correct_classes,
            completion_tokens=[r.get("completion_tokens") for r in rs],
            finish_reasons=[r.get("finish_reason") for r in rs],
            num_missing=max(0, K - len(rs)))
        outcomes.setdefault(p.task, []).append(outcome)
        meta.setdefault(p.task, []).append(p.metadata)
        if writer is not None:
            writer.add(p, rs, g)


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_config(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise UserError(f"{run_dir} is not a reasoneval run directory (no config.json); "
                        "pass a directory like results/<model>/<run-id>")
    with open(path, encoding="utf-8") as f:
        config: dict[str, Any] = json.load(f)
    return config


def run_problems(run_dir: Path) -> list[tuple[Problem, float | None]]:
    return read_problems(run_dir)


def iter_unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
