"""RunConfig / RunResult: one shape whoever writes it, versioned, and runs written before schema 2 still report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import reasoneval
from reasoneval.cli.main import main
from reasoneval.errors import UserError
from reasoneval.results.identity import RunSettings
from reasoneval.results.schema import SCHEMA_VERSION, RunConfig, load_config, load_run
from reasoneval.scoring import TaskScoring
from reasoneval.tasks import problem_key


def write_schema1_run(run_dir: Path) -> None:
    """A run directory exactly as reasoneval wrote it before schema 2 (config without scoring or version,
    problems.jsonl with kind / choices / rel_tol, summary.json without schema_version)."""
    run_dir.mkdir(parents=True)
    problems = [
        {"task": "minerva_math", "key": problem_key("speed?", "100"), "id": "m-0", "problem": "speed?",
         "answer": "100", "kind": "math", "choices": None, "rel_tol": 0.01, "metadata": {}},
        {"task": "gpqa_diamond", "key": problem_key("gas?\nA\nB", "B"), "id": "g-0", "problem": "gas?", "answer": "B",
         "kind": "choice", "choices": ["Oxygen", "Argon"], "rel_tol": None, "metadata": {}},
    ]
    (run_dir / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    texts = {"minerva_math": ["\\boxed{100.5}", "\\boxed{120}"], "gpqa_diamond": ["Answer: B", "Answer: A"]}
    lines = []
    for p in problems:
        for j, t in enumerate(texts[p["task"]]):
            lines.append({"task": p["task"], "problem_key": p["key"], "problem_id": p["id"], "index": j, "seed": j,
                          "status": "ok", "text": t, "finish_reason": "stop", "completion_tokens": 5})
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    (run_dir / "config.json").write_text(json.dumps({
        "run_id": "oldrun", "settings": {"model": "old-model"}, "engine": "openai", "n": 2,
        "tasks": ["minerva_math", "gpqa_diamond"],
        "problem_keys": {p["task"]: [p["key"]] for p in problems}, "versions": {"reasoneval": "0.1.0"},
        "last_generation": {"wall_s": 3.0, "requests": 4}}))


def test_a_schema1_run_reports_and_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "old-model" / "oldrun"
    write_schema1_run(run_dir)
    config = load_config(run_dir)
    assert config.scoring == {"minerva_math": TaskScoring("math", {"rel_tol": 0.01}),
                              "gpqa_diamond": TaskScoring("choice")}
    assert main(["report", str(run_dir), "--grading-workers", "1"]) == 0
    assert "minerva_math" in capsys.readouterr().out
    result = load_run(run_dir)
    assert result.schema_version == SCHEMA_VERSION and result.model == "old-model"
    # minerva's 1% tolerance from the old problems.jsonl: 100.5 is right, 120 is not; B is right, A is not.
    assert result.tasks["minerva_math"].mean == 0.5 and result.tasks["gpqa_diamond"].mean == 0.5
    assert result.timing.wall_s == 3.0 and result.timing.requests == 4
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["schema_version"] == SCHEMA_VERSION and summary["config"]["schema_version"] == SCHEMA_VERSION


def test_summary_round_trips_and_a_newer_schema_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "old-model" / "oldrun"
    write_schema1_run(run_dir)
    written = reasoneval.score_run(run_dir, workers=1, print_table=False)
    assert load_run(run_dir) == written
    data = json.loads((run_dir / "summary.json").read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    (run_dir / "summary.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match="newer than this reasoneval reads"):
        load_run(run_dir)


def test_run_config_round_trip() -> None:
    cfg = RunConfig(run_id="r", settings=RunSettings(model="m"), engine="local", n=4, tasks=["a"], problem_keys={"a": ["k"]},
                    scoring={"a": TaskScoring("math", {"rel_tol": 0.01})}, engine_config={"replicas": 2})
    assert RunConfig.from_json_dict(json.loads(json.dumps(cfg.to_json_dict()))) == cfg


def test_load_run_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a reasoneval run directory"):
        load_run(tmp_path)
    run_dir = tmp_path / "m" / "r"
    write_schema1_run(run_dir)
    with pytest.raises(UserError, match="no summary.json yet: run `reasoneval report"):
        load_run(run_dir)


def test_evaluate_inside_a_running_loop_points_to_evaluate_async(tmp_path: Path) -> None:
    async def inside() -> None:
        reasoneval.evaluate(tasks=["arith"], output_dir=str(tmp_path))

    with pytest.raises(UserError, match="await evaluate_async"):
        asyncio.run(inside())
