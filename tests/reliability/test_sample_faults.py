"""One bad sample never stops a run: a scorer raising on one response, and responses holding lone surrogates
(a server's JSON "\\ud800"), are stored, scored and exported (samples.jsonl, results.parquet, report.html)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import pyarrow.parquet as pq
import pytest

import reasoneval
from reasoneval.records import Problem, SampleRecord
from reasoneval.run.imported import score
from reasoneval.scoring import SCORERS, Score, ScoringContext
from tests.run.test_pipeline import write_data_dir


class _RaisesOnBoom:
    """Correct when the response says "right"; raises (a scorer bug, a parser fault) when it says "boom"."""

    name = "test_raises_on_boom"
    version = "1"

    def __init__(self, context: ScoringContext) -> None:
        pass

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        out = []
        for s in samples:
            if "boom" in (s.text or ""):
                raise ValueError("cannot parse this response")
            ok = "right" in (s.text or "")
            out.append(Score(ok, ok, s.text, "ok"))
        return out


if "test_raises_on_boom" not in SCORERS:
    SCORERS.add("test_raises_on_boom", _RaisesOnBoom)


def test_a_scorer_raising_on_one_sample_makes_that_sample_a_harness_error(tmp_path: Path) -> None:
    gens = tmp_path / "gens.jsonl"
    rows = [{"problem": "p0", "answer": "a", "responses": ["right", "boom", "wrong"]},
            {"problem": "p1", "answer": "b", "responses": ["right", "right", "right"]}]
    gens.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = score(str(gens), scorer="test_raises_on_boom", print_table=False)
    t = result.tasks["gens"]
    assert t.num_problems == 2 and result.complete
    assert t.mean == pytest.approx(4 / 6)  # the raising sample counts as not correct; the others keep theirs
    table = pq.read_table(tmp_path / "gens.jsonl.reasoneval" / "results.parquet").to_pylist()
    p0 = next(r for r in table if r["responses"][0] == "right" and r["responses"][1] == "boom")
    assert p0["correct"] == [True, False, False]
    assert p0["grade_status"] == ["ok", "error", "ok"]
    reason = json.loads(p0["details"][1])["reason"]
    assert reason == "harness_error: ValueError: cannot parse this response"


SURROGATE = "\\boxed{4} then \ud800 and \udfff"


def test_lone_surrogates_in_responses_are_stored_scored_and_exported(make_openai_server: Any,
                                                                      tmp_path: Path) -> None:
    write_data_dir(tmp_path / "data")
    server = make_openai_server(script={"x+1=5": SURROGATE, "2 \\cdot 5": "\\boxed{10}\ud83d"},
                                default="\\boxed{0} \udc80")
    s = reasoneval.evaluate(base_url=server.base_url, model="test-model", data_dir=str(tmp_path / "data"),
                            output_dir=str(tmp_path / "results"), retry_backoff=0.01, grading_workers=1,
                            progress=False, print_table=False, tasks=["aime24"], n=2)
    assert s.complete
    assert s.tasks["aime24"].mean == pytest.approx(2 / 3)  # problems 0 and 1 right, 2 wrong
    run_dir = next((tmp_path / "results" / "test-model").iterdir())
    texts = [json.loads(line)["text"] for line in (run_dir / "samples.jsonl").read_text("utf-8").splitlines()]
    # a lone surrogate is not text UTF-8 can hold: it is stored as U+FFFD, the rest of the response kept
    assert "\\boxed{4} then \ufffd and \ufffd" in texts and "\\boxed{10}\ufffd" in texts
    table = pq.read_table(run_dir / "results.parquet").to_pylist()
    assert any(r["responses"][0] == "\\boxed{4} then \ufffd and \ufffd" for r in table)
    assert "report.html" in os.listdir(run_dir)
    (run_dir / "report.html").read_text("utf-8")  # valid UTF-8


@pytest.mark.real_data("ifeval.jsonl")
def test_lone_surrogates_reach_the_ifeval_workers_safely(real_data_dir: Path, make_openai_server: Any, tmp_path: Path) -> None:
    pytest.importorskip("if_verifiable")
    server = make_openai_server(default="A short answer \ud800 without any commas")
    s = reasoneval.evaluate(base_url=server.base_url, model="test-model", data_dir=str(real_data_dir),
                            output_dir=str(tmp_path / "results"), retry_backoff=0.01, grading_workers=1,
                            progress=False, print_table=False, tasks=["ifeval"], n=1, limit=2)
    assert s.complete
    run_dir = next((tmp_path / "results" / "test-model").iterdir())
    rows = pq.read_table(run_dir / "results.parquet").to_pylist()
    assert len(rows) == 2 and all(r["grade_status"] == ["ok"] for r in rows)
    assert all(r["responses"] == ["A short answer \ufffd without any commas"] for r in rows)
