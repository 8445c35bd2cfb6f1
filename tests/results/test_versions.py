"""Format versions: results.parquet's schema metadata, a task's version in config.json, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reasoneval.analysis.outcomes import read_problem_rows
from reasoneval.atomic import atomic_open, atomic_write_json, json_text
from reasoneval.errors import UserError
from reasoneval.results.schema import RESULTS_VERSION, RESULTS_VERSION_KEY, TaskData, load_config, load_run
from reasoneval.tasks import TASKS
from tests.analysis.runs import TASK, make_run

RUNS = Path(__file__).parent.parent / "fixtures" / "runs"


def test_results_parquet_records_its_version_and_old_files_read(make_openai_server: Any, tmp_path: Path) -> None:
    run = make_run(make_openai_server, tmp_path, "m", lambda i, j: j == 0, q=3, n=2)
    meta = pq.read_schema(run / "results.parquet").metadata
    assert meta[RESULTS_VERSION_KEY] == str(RESULTS_VERSION).encode()
    assert len(read_problem_rows(run)) == 3
    # results.parquet written by 0.1.0: no version (= 1), fewer columns
    assert RESULTS_VERSION_KEY not in (pq.read_schema(RUNS / "v0_1_0" / "results.parquet").metadata or {})
    assert len(read_problem_rows(RUNS / "v0_1_0")) == 10
    # a newer format is refused with a one-line error, not misread
    table = pq.read_table(run / "results.parquet")
    pq.write_table(table.replace_schema_metadata({RESULTS_VERSION_KEY: str(RESULTS_VERSION + 1).encode()}),
                   run / "results.parquet")
    with pytest.raises(UserError, match="newer than this reasoneval reads"):
        read_problem_rows(run)


def test_config_records_each_tasks_version(make_openai_server: Any, tmp_path: Path) -> None:
    run = make_run(make_openai_server, tmp_path, "m", lambda i, j: True, q=2, n=1)
    assert json.loads((run / "config.json").read_text())["datasets"][TASK]["version"] == TASKS.get(TASK).version == "1"
    assert load_config(run).task_version(TASK) == "1" and load_run(run).config.task_version(TASK) == "1"
    assert load_config(RUNS / "pre_layout").task_version("gsm8k") is None  # written before task versions
    # A typed record, read and written back key for key (0.1.0's runs had only the count and hash).
    data = load_config(run).datasets[TASK]
    assert isinstance(data, TaskData) and data.version == "1" and data.num_problems == 2 and len(data.hash) == 16
    old = json.loads((RUNS / "v0_1_0" / "config.json").read_text())["datasets"]
    assert {t: d.to_json_dict() for t, d in load_config(RUNS / "v0_1_0").datasets.items()} == old


def test_atomic_writes_leave_the_old_file_on_error(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    atomic_write_json(path, {"a": "é"})
    assert path.read_text(encoding="utf-8") == json_text({"a": "é"}) == '{\n  "a": "é"\n}\n'
    with pytest.raises(RuntimeError), atomic_open(path) as f:
        f.write("{half")
        raise RuntimeError("killed")
    assert json.loads(path.read_text()) == {"a": "é"}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left

