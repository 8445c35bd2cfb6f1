"""Data honesty (issue 48.8): every row of a task's file is its own problem, and config.json records the file the
problems were read from (its path and sha256), not the Hub dataset the task would otherwise download."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.engines import ENGINES
from reasoneval.tasks import load_task
from reasoneval.tasks.loading import file_sha256
from tests.plugins import register_for_the_test


def _write(d: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    d.mkdir(exist_ok=True)
    path = d / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _tests(outputs: list[str]) -> list[dict[str, str]]:
    return [{"input": f"{i}\n", "output": o, "testtype": "stdin"} for i, o in enumerate(outputs)]


def test_contest_rows_differing_after_the_third_test_stay_distinct(tmp_path: Path) -> None:
    d = tmp_path / "data"
    same = "Print something for each test."
    _write(d, "livecodebench", [{"id": "a", "problem": same, "starter_code": "", "tests": _tests(["1", "2", "3", "4"])},
                                {"id": "b", "problem": same, "starter_code": "", "tests": _tests(["1", "2", "3", "5"])}])
    _, lcb = load_task("livecodebench", data_dir=d)
    assert len(lcb) == 2 and lcb[0].key != lcb[1].key
    cc = {"description": same, "public_tests": {"input": ["1\n"], "output": ["1\n"]},
          "private_tests": {"input": ["2\n", "3\n"], "output": ["2\n", "3\n"]}}
    _write(d, "code_contests", [{**cc, "generated_tests": {"input": ["4\n"], "output": ["4\n"]}},
                                {**cc, "generated_tests": {"input": ["4\n"], "output": ["8\n"]}}])
    _, ccs = load_task("code_contests", data_dir=d)
    assert len(ccs) == 2 and ccs[0].key != ccs[1].key
    io = {"inputs": ["1\n", "2\n", "3\n", "4\n"], "outputs": ["1\n", "2\n", "3\n", "4\n"]}
    _write(d, "taco", [{"question": same, "input_output": json.dumps(io), "url": "https://a"},
                       {"question": same, "input_output": json.dumps(io), "url": "https://b"}])  # its own id: url
    _, taco = load_task("taco", data_dir=d)
    assert len(taco) == 2 and taco[0].key != taco[1].key


def test_identical_rows_stay_two_problems_and_a_warning_names_them(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "data"
    row = {"problem": "Print 1.", "starter_code": "", "tests": _tests(["1"])}
    _write(d, "livecodebench", [{"id": "p1", **row}, {"id": "p2", **row}, {"id": "p3", **row}])
    with caplog.at_level(logging.WARNING, logger="reasoneval"):
        _, problems = load_task("livecodebench", data_dir=d)
    assert [p.id for p in problems] == ["p1", "p2", "p3"] and len({p.key for p in problems}) == 3
    assert "task livecodebench: 2 rows repeat an earlier row's problem under another id, kept as distinct " \
           "problems: p2 (same as p1), p3 (same as" in caplog.text
    # the first keeps the key it has alone: a file without repeats keys as before
    _write(d, "livecodebench", [{"id": "p1", **row}])
    assert load_task("livecodebench", data_dir=d)[1][0].key == problems[0].key
    _write(d, "aime24", [{"id": 1, "problem": "What is 2+2?", "answer": "4"},
                         {"id": 2, "problem": "What is  2+2?", "answer": "4"}])  # the same up to whitespace
    _, aime = load_task("aime24", data_dir=d)
    assert len({p.key for p in aime}) == 2


def test_config_records_the_data_dir_file_and_its_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_for_the_test(monkeypatch, ENGINES, "constant", "tests.plugins.constant_engine")
    path = _write(tmp_path / "data", "aime24", [{"id": 1, "problem": "What is 2+2?", "answer": "4"},
                                                {"id": 2, "problem": "What is 3+3?", "answer": "6"}])
    result = reasoneval.evaluate(tasks=["aime24"], engine="constant", engine_args={"answer": "4"}, n=1, grading_workers=1,
                                 data_dir=str(path.parent), output_dir=str(tmp_path / "out"), print_table=False,
                                 progress=False)
    expected = f"data_dir:{path} sha256:{file_sha256(path)}"
    assert result.config.datasets["aime24"].source == expected
    written = json.loads((Path(result.run_dir) / "config.json").read_text())
    assert written["datasets"]["aime24"]["source"] == expected
    assert result.tasks["aime24"].mean == pytest.approx(0.5)


def test_a_cached_download_is_recorded_as_the_hub_source_with_the_rows_hash(tmp_path: Path) -> None:
    cached = _write(tmp_path / "cache", "aime24", [{"id": "aime24-0", "problem": "What is 2+2?", "answer": "4"}])
    spec, _ = load_task("aime24")  # the tasks conftest points the cache at tmp_path / "cache"
    assert spec.source == f"hf:HuggingFaceH4/aime_2024 split=train via cache:{cached} sha256:{file_sha256(cached)}"
