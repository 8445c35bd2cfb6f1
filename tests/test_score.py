"""`reasoneval score`: external generation files and run directories, graded like a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reasoneval.errors import UserError
from reasoneval.score import score

ROOT = Path(__file__).resolve().parents[1]


def test_jsonl_with_gen_lists(tmp_path: Path) -> None:
    f = tmp_path / "gens.jsonl"
    rows = [{"question": "1+1?", "gt": "2", "gen": ["\\boxed{2}", "\\boxed{3}"]},
            {"question": "half?", "gt": "\\frac12", "gen": ["\\boxed{0.5}", "no idea"]}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), workers=1, print_table=False)
    t = s.tasks["gens"].to_json_dict()
    assert t["num_problems"] == 2 and t["num_samples"] == 2
    assert t["mean"] == pytest.approx(0.5)
    assert t["pass_at_k"]["2"] == pytest.approx(1.0)
    assert (tmp_path / "gens.jsonl.reasoneval" / "summary.json").exists()


def test_parquet_with_responses_column_and_key_overrides(tmp_path: Path) -> None:
    f = tmp_path / "out.parquet"
    pq.write_table(pa.Table.from_pylist([
        {"prob": "2*3?", "ref": "6", "responses": ["\\boxed{6}", "\\boxed{6}", "\\boxed{7}"]},
        {"prob": "2*4?", "ref": "8", "responses": ["\\boxed{9}", "\\boxed{9}", "\\boxed{8}"]}]), f)
    s = score(str(f), problem_key_name="prob", answer_key="ref", workers=1, print_table=False)
    t = s.tasks["out"].to_json_dict()
    assert t["mean"] == pytest.approx(0.5) and t["maj_at_k"]["3"] == pytest.approx(0.5)


def test_lm_eval_harness_samples_log(tmp_path: Path) -> None:
    f = tmp_path / "samples_aime24_2025-01-01T00-00-00.jsonl"
    rows = [{"doc_id": 0, "doc": {"problem": "Find x.", "answer": "55"}, "target": "55",
             "resps": [["... \\boxed{55}"], ["\\boxed{54}"]], "filtered_resps": ["55", "54"]},
            {"doc_id": 1, "doc": {"problem": "Find y.", "answer": "7"}, "target": "7",
             "resps": [["\\boxed{7}"], ["\\boxed{7}"]], "filtered_resps": ["7", "7"]}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), task="aime24", workers=1, print_table=False)
    assert s.tasks["aime24"].mean == pytest.approx(0.75)


def test_missing_field_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"question": "q", "answer": "1"}) + "\n")
    with pytest.raises(UserError, match=r"bad.jsonl:1: no response field .*--response-key"):
        score(str(f), workers=1, print_table=False)


def test_cli_score_regrades_a_file(tmp_path: Path) -> None:
    f = tmp_path / "g.jsonl"
    f.write_text(json.dumps({"problem": "p", "answer": "3", "response": "\\boxed{3}"}) + "\n")
    r = subprocess.run([sys.executable, "-m", "reasoneval.cli", "score", str(f), "--json", "--grading-workers", "1"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tasks"]["g"]["mean"] == 1.0
