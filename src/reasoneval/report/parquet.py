"""results.parquet: one row per problem, written in batches as problems are graded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from reasoneval.results.schema import RESULTS_VERSION, RESULTS_VERSION_KEY
from reasoneval.results.stream import ScoredProblem

SCHEMA = pa.schema([
    ("task", pa.string()),
    ("id", pa.string()),
    ("problem_key", pa.string()),
    ("problem", pa.string()),
    ("answer", pa.string()),
    ("sample_indices", pa.list_(pa.int32())),
    ("responses", pa.list_(pa.string())),
    ("extracted", pa.list_(pa.string())),
    ("correct", pa.list_(pa.bool_())),
    ("grade_status", pa.list_(pa.string())),
    ("seeds", pa.list_(pa.int64())),
    ("completion_tokens", pa.list_(pa.int64())),
    ("finish_reasons", pa.list_(pa.string())),
    # Extra scorers (lm-eval's strict-match, ...): metric name -> per-sample verdicts / extracted answers.
    ("extra_correct", pa.map_(pa.string(), pa.list_(pa.bool_()))),
    ("extra_extracted", pa.map_(pa.string(), pa.list_(pa.string()))),
    # the scorer's per-sample details as JSON (code: result, tests passed, stderr; IFEval: each instruction's
    # strict/loose result); null where the scorer gives none (math)
    ("details", pa.list_(pa.string())),
], metadata={RESULTS_VERSION_KEY: str(RESULTS_VERSION).encode()})


class ResultsWriter:
    """Writes `path` (a temporary of atomic.FileSet: the caller moves it into place with the other files)."""

    def __init__(self, path: Path, batch_rows: int = 256) -> None:
        self.path = Path(path)
        self._writer = pq.ParquetWriter(self.path, SCHEMA, compression="zstd")
        self._rows: list[dict[str, Any]] = []
        self.batch_rows = batch_rows

    def add(self, scored: ScoredProblem) -> None:
        p, records, scores = scored.problem, scored.samples, scored.scores
        self._rows.append({
            "task": p.task, "id": p.id, "problem_key": p.key, "problem": p.problem, "answer": p.answer,
            "sample_indices": [r.index for r in records],
            "responses": [r.text or "" for r in records],
            "extracted": [s.answer for s in scores],
            "correct": [bool(s.correct) for s in scores],
            "grade_status": [s.status for s in scores],
            "seeds": [r.seed for r in records],
            "completion_tokens": [r.completion_tokens for r in records],
            "finish_reasons": [r.finish_reason for r in records],
            "extra_correct": {name: [bool(s.correct) for s in ss] for name, ss in scored.extra_scores.items()},
            "extra_extracted": {name: [s.answer for s in ss] for name, ss in scored.extra_scores.items()},
            "details": [json.dumps(dict(s.details)) if s.details else None for s in scores],
        })
        if len(self._rows) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=SCHEMA))
            self._rows = []

    def close(self) -> None:
        try:
            self._flush()
        finally:
            self._writer.close()
