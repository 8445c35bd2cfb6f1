"""User data sets: JSONL / JSON / Parquet / CSV with chosen fields; clear errors for bad rows."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reasoneval.errors import UserError
from reasoneval.tasks import load_user_data, problem_key

ROWS = [{"qid": "p1", "q": "What is $1+1$?", "a": 2},
        {"qid": "p2", "q": "Simplify $\\frac{2}{4}$.", "a": "\\frac{1}{2}"},
        {"qid": "p3", "q": "Leading zeros?", "a": "007"}]


def write_all_formats(d: Path) -> dict[str, Path]:
    paths = {"jsonl": d / "mine.jsonl", "json": d / "mine.json", "parquet": d / "mine.parquet", "csv": d / "mine.csv"}
    paths["jsonl"].write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    paths["json"].write_text(json.dumps(ROWS))
    pq.write_table(pa.Table.from_pylist([{**r, "a": str(r["a"])} for r in ROWS]), paths["parquet"])
    paths["csv"].write_text("qid,q,a\n" + "".join(f'{r["qid"]},"{r["q"]}",{r["a"]}\n' for r in ROWS))
    return paths


@pytest.mark.parametrize("fmt", ["jsonl", "json", "parquet", "csv"])
def test_every_format_loads_the_same_problems(tmp_path: Path, fmt: str) -> None:
    path = write_all_formats(tmp_path)[fmt]
    spec, probs = load_user_data(str(path), problem_field="q", answer_field="a", id_field="qid")
    assert spec.name == "mine" and spec.scoring.scorer == "math" and spec.origin == str(path)
    assert [p.id for p in probs] == ["p1", "p2", "p3"]
    assert [p.answer for p in probs] == ["2", "\\frac{1}{2}", "7"]
    assert probs[1].problem == "Simplify $\\frac{2}{4}$."
    assert probs[0].key == problem_key("What is $1+1$?", "2")
    assert all(p.task == "mine" for p in probs)


def test_default_ids_limit_and_task_name(tmp_path: Path) -> None:
    path = write_all_formats(tmp_path)["jsonl"]
    spec, probs = load_user_data(str(path), problem_field="q", answer_field="a", limit=2, task_name="custom")
    assert spec.name == "custom" and [p.id for p in probs] == ["custom-0", "custom-1"]


def test_json_wrapper_object(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"version": 1, "data": ROWS}))
    _, probs = load_user_data(str(path), problem_field="q", answer_field="a")
    assert len(probs) == 3


@pytest.mark.parametrize("name, content, pattern", [
    ("b.jsonl", '{"q": "x", "a": 1}\n{"q": "y" "a": 2}\n', r"b\.jsonl:2: invalid JSON"),
    ("b.jsonl", '{"q": "x", "a": 1}\n{"question": "y", "a": 2}\n', r"b\.jsonl:2: missing problem field 'q'"),
    ("b.jsonl", '{"q": "x", "ans": 1}\n', r"b\.jsonl:1: missing answer field 'a'.*--answer-field"),
    ("b.jsonl", '{"q": 5, "a": 1}\n', r"b\.jsonl:1: 'q' must be a string, got int"),
    ("b.jsonl", '{"q": "x", "a": [1]}\n', r"b\.jsonl:1: 'a' must be a string or a number, got list"),
    ("b.jsonl", "", r"b\.jsonl: file is empty"),
    ("b.json", "[]", r"b\.json: file is empty"),
    ("b.json", '[{"q": "x", "a": 1}, 3]', r"b\.json: row 1: expected a JSON object"),
    ("b.csv", "q,a\n", r"b\.csv: file is empty"),
    ("b.csv", 'q,a\nx,1\n"multi\nline",\n', r"b\.csv:3: 'a' is empty"),
    ("b.txt", "hello", r"unsupported file type \.txt"),
])
def test_malformed_user_files(tmp_path: Path, name: str, content: str, pattern: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(UserError, match=pattern) as e:
        load_user_data(str(path), problem_field="q", answer_field="a")
    assert "\n" not in str(e.value)


def test_duplicate_and_missing_ids(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"i": 1, "q": "x", "a": 1}\n{"i": 1, "q": "y", "a": 2}\n')
    with pytest.raises(UserError, match=r"d\.jsonl:2: duplicate id '1'"):
        load_user_data(str(path), problem_field="q", answer_field="a", id_field="i")
    with pytest.raises(UserError, match=r"d\.jsonl:1: missing id field 'qid'"):
        load_user_data(str(path), problem_field="q", answer_field="a", id_field="qid")


def test_missing_file_and_offline_hub_id(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not found"):
        load_user_data(str(tmp_path / "nope.jsonl"), problem_field="q", answer_field="a")
    with pytest.raises(UserError, match="offline"):
        load_user_data("someone/some-dataset", problem_field="q", answer_field="a", split="test")
