"""Per-problem outcomes of a scored run, read from its results.parquet (one row per problem)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from reasoneval.errors import UserError
from reasoneval.results.schema import results_version
from reasoneval.run_files import RESULTS_FILE

# The columns a problem row needs without the response texts (small: a few bytes per sample).
OUTCOME_COLUMNS = ("task", "id", "problem_key", "answer", "sample_indices", "extracted", "correct",
                   "completion_tokens", "finish_reasons")


@dataclass(frozen=True)
class ProblemRow:
    """One problem's graded samples (in sample-index order) as results.parquet holds them."""

    task: str
    id: str
    problem_key: str
    answer: str
    sample_indices: list[int]
    extracted: list[str | None]
    correct: list[bool]
    completion_tokens: list[int | None]
    finish_reasons: list[str | None]

    @property
    def n(self) -> int:
        return len(self.correct)

    @property
    def num_correct(self) -> int:
        return sum(bool(x) for x in self.correct)

    @property
    def accuracy(self) -> float | None:
        return self.num_correct / self.n if self.n else None


def results_path(run_dir: Path) -> Path:
    path = Path(run_dir) / RESULTS_FILE
    if not path.exists():
        raise UserError(f"{run_dir} has no {RESULTS_FILE}: run `reasoneval report {run_dir}` to score it")
    return path


def iter_problem_rows(run_dir: Path, columns: Sequence[str] = OUTCOME_COLUMNS, batch_size: int = 256,
                      path: Path | None = None) -> Iterator[dict[str, object]]:
    """results.parquet rows as dicts, one row group at a time (the writer bounds a row group to ~8 MB of
    responses), so memory stays bounded whatever the run's size. (`iter_batches` reads ahead: 570 MB
    peak on a 1.7 GB run, against 130 MB this way; bench/html_report.py.) path: another results file than the
    run directory's (a view's, or one not yet moved into place)."""
    path = path or results_path(run_dir)
    pf = pq.ParquetFile(path)
    results_version(pf.schema_arrow.metadata, path)
    have = set(pf.schema_arrow.names)
    cols = [c for c in columns if c in have]
    for g in range(pf.metadata.num_row_groups):
        for batch in pf.read_row_group(g, columns=cols, use_threads=False).to_batches(max_chunksize=batch_size):
            yield from batch.to_pylist()
        pa.default_memory_pool().release_unused()  # give the row group's buffers back before the next


def read_problem_rows(run_dir: Path) -> list[ProblemRow]:
    """Every problem of a scored run, without the response texts."""
    out = []
    for d in iter_problem_rows(run_dir):
        out.append(ProblemRow(
            task=str(d["task"]), id=str(d["id"]), problem_key=str(d["problem_key"]), answer=str(d.get("answer") or ""),
            sample_indices=list(d.get("sample_indices") or []),  # type: ignore[call-overload]
            extracted=list(d.get("extracted") or []),  # type: ignore[call-overload]
            correct=[bool(x) for x in d.get("correct") or []],  # type: ignore[attr-defined]
            completion_tokens=list(d.get("completion_tokens") or []),  # type: ignore[call-overload]
            finish_reasons=list(d.get("finish_reasons") or []),  # type: ignore[call-overload]
        ))
    return out


def by_task(rows: Sequence[ProblemRow]) -> dict[str, list[ProblemRow]]:
    out: dict[str, list[ProblemRow]] = {}
    for r in rows:
        out.setdefault(r.task, []).append(r)
    return out
