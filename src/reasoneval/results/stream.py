"""Score a run directory's samples a chunk of problems at a time, streaming the journal.

Memory stays flat as the journal grows: a first pass keeps only each sample's byte offset; then
problems are scored a chunk at a time and handed, with their samples and scores, to a sink
(results.parquet's writer) before the next chunk is read.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.metrics import ProblemOutcome
from reasoneval.records import Problem, SampleRecord
from reasoneval.results.store import iter_samples
from reasoneval.run_files import SAMPLES_FILE
from reasoneval.scoring.base import Score, Scorer, cluster, cluster_by_text

log = logging.getLogger("reasoneval")

CHUNK_PROBLEMS = 64
# Responses held at once (scored together, then handed to the sink): bounds memory when responses
# are long (64 samples x 64 KB is 4 MB per problem), whatever the store's size.
CHUNK_BYTES = 16 << 20


@dataclass(frozen=True)
class ScoredProblem:
    """One problem with its present samples (index < K, ordered by index) and their scores."""

    problem: Problem
    samples: Sequence[SampleRecord]
    scores: Sequence[Score]
    outcome: ProblemOutcome
    # The task's extra scorers' scores (TaskScoring.extra), by metric name, one per sample.
    extra_scores: Mapping[str, Sequence[Score]] = field(default_factory=dict)


# Called once per chunk with that chunk's scored problems and its response bytes.
ChunkSink = Callable[[Sequence[ScoredProblem], int], None]


def _bound(K: int | Mapping[str, int], task: str) -> int:
    return K if isinstance(K, int) else K[task]


def _index_samples(run_dir: Path, wanted: set[tuple[str, str]], K: int | Mapping[str, int]
                   ) -> dict[tuple[str, str], dict[int, int]]:
    """(task, key) -> {sample index: byte offset of its ok line}, for indices < K (the task's K)."""
    index: dict[tuple[str, str], dict[int, int]] = {}
    for offset, d in iter_samples(run_dir / SAMPLES_FILE, with_offsets=True):
        if d.get("status") != "ok":
            continue
        pk = (d.get("task"), d.get("problem_key"))
        i = d.get("index")
        if pk not in wanted or not isinstance(i, int) or i >= _bound(K, str(pk[0])):
            continue
        index.setdefault(pk, {}).setdefault(i, offset)
    return index


def _read_at(f: IO[bytes], offset: int) -> SampleRecord:
    f.seek(offset)
    return SampleRecord.from_json_dict(json.loads(f.readline()))


def score_store(run_dir: Path, problems: Sequence[Problem], K: int | Mapping[str, int], scorers: Mapping[str, Scorer],
                sink: ChunkSink | None = None,
                extra: Mapping[str, Mapping[str, Scorer]] | None = None,
                offsets: Mapping[tuple[str, str], Mapping[int, int]] | None = None) -> dict[str, list[ProblemOutcome]]:
    """Score samples 0..K-1 of each problem with its task's scorer; per task, one outcome per problem. K: one
    bound for every task, or each task's.

    extra: per task, further scorers by metric name (TaskScoring.extra); their verdicts go in
    `ProblemOutcome.extra`. offsets: (task, key) -> {sample index: byte offset of its ok line}, when the caller
    already read the journal (`reasoneval view` follows it as it grows); else the journal is indexed here."""
    wanted = {(p.task, p.key) for p in problems}
    index = _index_samples(Path(run_dir), wanted, K) if offsets is None else offsets
    outcomes: dict[str, list[ProblemOutcome]] = {p.task: [] for p in problems}
    samples_path = Path(run_dir) / SAMPLES_FILE
    with open(samples_path, "rb") if samples_path.exists() else open(os.devnull, "rb") as f:
        pos = 0
        while pos < len(problems):
            # A chunk: up to CHUNK_PROBLEMS problems or CHUNK_BYTES of responses, at least one problem.
            chunk: list[tuple[Problem, list[SampleRecord]]] = []
            size = 0
            while pos < len(problems) and len(chunk) < CHUNK_PROBLEMS and (not chunk or size < CHUNK_BYTES):
                p = problems[pos]
                pos += 1
                recs = [_read_at(f, off) for _, off in sorted(index.get((p.task, p.key), {}).items())]
                size += sum(len(r.text or "") for r in recs)
                chunk.append((p, recs))
            scored = _score_chunk(chunk, K, scorers, extra or {})
            for sp in scored:
                outcomes[sp.problem.task].append(sp.outcome)
            if sink is not None:
                sink(scored, size)
    return outcomes


def harness_error_score(e: BaseException) -> Score:
    """The verdict of a sample whose scoring raised: not correct, status "error", the reason in details."""
    reason = f"harness_error: {type(e).__name__}: {e}"[:2000]
    return Score(False, False, None, "error", {"result": "harness_error", "reason": reason})


def score_guarded(scorer: Scorer, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
    """`scorer.score_many`, where an exception scoring one sample becomes that sample's verdict, never a crash.

    The batch is scored whole; if that raises (or returns the wrong number of scores) each sample is scored
    alone, so one bad response costs only its own verdict (`harness_error: ...`). A `UserError` (the task or
    setup is wrong, e.g. a code task without tests) is not a sample's fault: it still stops the command.
    """
    try:
        scores = list(scorer.score_many(problems, samples))
        if len(scores) == len(samples):
            return scores
        raise RuntimeError(f"scorer {scorer.name} returned {len(scores)} scores for {len(samples)} samples")
    except UserError:
        raise
    except Exception as e:
        if len(samples) <= 1:
            log.warning("scorer %s: %s (sample %s of %s)", scorer.name, harness_error_score(e).details["reason"],
                        samples[0].index if samples else "-", samples[0].problem_id if samples else "-")
            return [harness_error_score(e) for _ in samples]
    return [score for p, s in zip(problems, samples) for score in score_guarded(scorer, [p], [s])]


def _cluster_guarded(scorer: Scorer, groups: Sequence[tuple[Problem, Sequence[str | None]]]) -> list[list[int | None]]:
    try:
        return cluster(scorer, groups)
    except UserError:
        raise
    except Exception as e:  # maj@k falls back to identical answers rather than stopping the run
        log.warning("scorer %s: grouping answers failed (harness_error: %s: %s); grouping identical answers",
                    scorer.name, type(e).__name__, e)
        return cluster_by_text(groups)


def _score_chunk(chunk: Sequence[tuple[Problem, list[SampleRecord]]], K: int | Mapping[str, int], scorers: Mapping[str, Scorer],
                 extra: Mapping[str, Mapping[str, Scorer]]) -> list[ScoredProblem]:
    # One batch per task (each task has its scorer), so the scorer's workers see its whole share at once.
    by_task: dict[str, list[int]] = {}
    for i, (p, _) in enumerate(chunk):
        by_task.setdefault(p.task, []).append(i)
    scores: list[list[Score]] = [[] for _ in chunk]
    classes: list[list[int | None]] = [[] for _ in chunk]
    extra_scores: list[dict[str, list[Score]]] = [{} for _ in chunk]
    for task, idxs in by_task.items():
        scorer = scorers[task]
        flat_p = [chunk[i][0] for i in idxs for _ in chunk[i][1]]
        flat_s = [s for i in idxs for s in chunk[i][1]]
        flat = score_guarded(scorer, flat_p, flat_s)
        pos = 0
        for i in idxs:
            n = len(chunk[i][1])
            scores[i] = flat[pos:pos + n]
            pos += n
        for name, extra_scorer in extra.get(task, {}).items():
            extra_flat = score_guarded(extra_scorer, flat_p, flat_s)
            pos = 0
            for i in idxs:
                n = len(chunk[i][1])
                extra_scores[i][name] = extra_flat[pos:pos + n]
                pos += n
        groups = [(chunk[i][0], [s.answer for s in scores[i]]) for i in idxs]
        for i, row in zip(idxs, _cluster_guarded(scorer, groups)):
            classes[i] = row
    out = []
    for (p, recs), sc, cl, ex in zip(chunk, scores, classes, extra_scores):
        outcome = ProblemOutcome(
            task=p.task, problem_key=p.key, correct=[s.correct for s in sc], classes=list(cl),
            correct_classes=frozenset(c for c, s in zip(cl, sc) if c is not None and s.correct),
            completion_tokens=[r.completion_tokens for r in recs],
            finish_reasons=[r.finish_reason for r in recs],
            num_missing=max(0, _bound(K, p.task) - len(recs)), indices=[r.index for r in recs],
            extra={name: [s.correct for s in e] for name, e in ex.items()},
            # named figures only where the scorer gives them (IFEval); math's flags are already in `correct`
            values=[s.value if isinstance(s.value, Mapping) else {} for s in sc]
            if sc and isinstance(sc[0].value, Mapping) else ())
        out.append(ScoredProblem(problem=p, samples=recs, scores=sc, outcome=outcome, extra_scores=ex))
    return out
