"""`report` streams the journal: memory follows the chunk budget, not the store's size, and the chunking
does not change a single figure."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from reasoneval.atomic import atomic_write_json
from reasoneval.records import Problem, SampleRecord
from reasoneval.results import stream
from reasoneval.results.store import SampleStore, add_problems
from reasoneval.run import score as pipeline
from reasoneval.run.score import score_run
from reasoneval.tasks import problem_key


def _store(run_dir: Path, problems: int, samples: int, kb: int) -> int:
    probs = []
    for i in range(problems):
        q, a = f"Find {i} + {i}.", str(2 * i)
        probs.append(Problem(task="t", id=f"p{i}", problem=q, answer=a, key=problem_key(q, a)))
    run_dir.mkdir(parents=True)
    add_problems(run_dir, probs)
    filler = "we reason step by step " * (kb * 1024 // 23)
    with SampleStore(run_dir) as store:
        for j in range(samples):
            for i, p in enumerate(probs):
                ans = int(p.answer) + (0 if (i + j) % 3 else 1)
                store.append(SampleRecord(task="t", problem_key=p.key, problem_id=p.id, index=j, seed=j,
                                          status="ok", text=f"{j} {filler} so \\boxed{{{ans}}}",
                                          finish_reason="stop", completion_tokens=kb * 256))
    atomic_write_json(run_dir / "config.json", {"run_id": "r", "settings": {"model": "m"}, "n": samples,
                                                "tasks": ["t"], "problem_keys": {"t": [p.key for p in probs]}})
    return (run_dir / "samples.jsonl").stat().st_size


def test_report_memory_is_flat_and_chunking_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "run"
    size = _store(run_dir, problems=40, samples=8, kb=64)  # ~21 MB of responses
    whole = score_run(run_dir, workers=1, print_table=False)
    table = pq.read_table(run_dir / "results.parquet").to_pylist()

    monkeypatch.setattr(stream, "CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr(pipeline, "PARQUET_BATCH_BYTES", 1 << 20)
    (run_dir / "grades.jsonl").unlink(missing_ok=True)
    tracemalloc.start()
    try:
        small = score_run(run_dir, workers=1, print_table=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A 1 MB budget: a chunk is a problem or two (512 KB each), never the 21 MB store.
    assert peak < size / 3, (peak, size)
    assert small.tasks == whole.tasks and small.aggregate == whole.aggregate
    assert pq.read_table(run_dir / "results.parquet").to_pylist() == table
    assert len(table) == 40 and all(len(r["responses"]) == 8 for r in table)
    assert json.loads((run_dir / "summary.json").read_text())["tasks"] == {k: m.to_json_dict() for k, m in whole.tasks.items()}
