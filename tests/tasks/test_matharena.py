"""MathArena's competitions: declared in MathArena's layout, loaded from fixtures in it, listed, run end to end on the
loopback server and graded exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.tasks import GROUPS, TASKS, load_task, resolve_task_names, task_listing
from reasoneval.tasks.loading import convert_hub_rows
from reasoneval.tasks.matharena import MATHARENA_TASKS
from tests.tasks.conftest import HUB_FIXTURES

DATASETS = {"aime26": "aime_2026", "hmmt_feb25": "hmmt_feb_2025", "hmmt_feb26": "hmmt_feb_2026",
            "hmmt_nov25": "hmmt_nov_2025", "brumo25": "brumo_2025", "cmimc25": "cmimc_2025", "smt25": "smt_2025"}


def fixture_rows(task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HUB_FIXTURES / f"{task}.jsonl").read_text().splitlines()]


def write_data_dir(d: Path, tasks: tuple[str, ...] = MATHARENA_TASKS) -> Path:
    """Each task's fixture converted as `pull` converts the Hub's rows: the files a data dir holds."""
    d.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        rows = convert_hub_rows(TASKS.get(t), fixture_rows(t))
        (d / f"{t}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_group_and_declarations() -> None:
    assert GROUPS["matharena"] == MATHARENA_TASKS
    assert resolve_task_names(["matharena"]) == list(MATHARENA_TASKS)
    for t, dataset in DATASETS.items():
        spec = TASKS.get(t)
        assert spec.hub is not None and (spec.hub.dataset_id, spec.hub.split) == (f"MathArena/{dataset}", "train")
        # graded exactly: the math grader with no tolerance, asked for a boxed answer
        assert (spec.scoring.scorer, dict(spec.scoring.settings), spec.prompt) == ("math", {"approx": "exact"}, "boxed")
        assert isinstance(spec.size, int) and spec.size >= 30


def test_load_from_data_dir_keeps_problem_number_and_types(tmp_path: Path) -> None:
    ddir = write_data_dir(tmp_path / "dd")
    spec, problems = load_task("hmmt_feb25", data_dir=ddir)
    assert spec.origin == f"data_dir:{ddir / 'hmmt_feb25.jsonl'}"
    assert [p.id for p in problems] == ["hmmt_feb25-0", "hmmt_feb25-1"]
    assert problems[1].answer == "\\frac{\\pi}{4}"
    assert problems[1].metadata == {"subject": "Geometry, Combinatorics", "year": 2025, "source_id": "2"}
    _, aime = load_task("aime26", data_dir=ddir)
    assert [p.answer for p in aime] == ["15", "101"] and "subject" not in aime[0].metadata


def test_listing_shows_sizes_before_and_after_loading(tmp_path: Path) -> None:
    before = {e["name"]: e for e in task_listing(None)}
    assert before["hmmt_feb26"]["size"] == 33 and before["cmimc25"]["size"] == 40
    assert before["aime26"]["source"] == "hf:MathArena/aime_2026 split=train" and not before["aime26"]["local"]
    after = {e["name"]: e for e in task_listing(write_data_dir(tmp_path / "dd"))}
    assert all(after[t]["local"] for t in MATHARENA_TASKS)
    assert after["hmmt_feb26"]["size"] == 3 and after["smt25"]["size"] == 2


def test_run_end_to_end_graded_exactly(make_openai_server: Any, tmp_path: Path) -> None:
    ddir = write_data_dir(tmp_path / "dd", ("hmmt_feb25", "brumo25"))
    # right in another form (2 sqrt 3 written as sqrt 12); pi/4 to four digits is not pi/4: exact grading
    server = make_openai_server(script={
        "first $10$ positive odd": "The sum is $10^2$, so \\boxed{100}.",
        "inscribed disk": "\\boxed{0.7854}",
        "letters of BRUNO": "\\boxed{120}",
        "x^2 = 12": "\\boxed{\\sqrt{12}}"}, default="\\boxed{0}")
    result = reasoneval.evaluate(base_url=server.base_url, model="test-model", data_dir=str(ddir), tasks=["hmmt_feb25",
                                 "brumo25"], n=1, output_dir=str(tmp_path / "results"), grading_workers=1,
                                 progress=False, print_table=False, retry_backoff=0.01)
    assert result.complete
    assert result.tasks["brumo25"].mean == pytest.approx(1.0)
    assert result.tasks["hmmt_feb25"].mean == pytest.approx(0.5)
    assert set(result.tasks["hmmt_feb25"].breakdown["subject"]) == {"Algebra", "Geometry, Combinatorics"}


def test_score_file_grades_as_the_task_does(tmp_path: Path) -> None:
    """`score FILE --task hmmt_feb25`: the task's exact grading (a decimal is not pi/4), not the default digits rule
    (under which 0.7854, pi/4 to its digits, is right)."""
    from reasoneval.results.schema import load_config
    from reasoneval.run.imported import score

    f = tmp_path / "gens.jsonl"
    f.write_text(json.dumps({"problem": "Compute the area of a circle of diameter 1.", "answer": "\\frac{\\pi}{4}",
                             "responses": ["\\boxed{0.7854}", "\\boxed{\\frac{\\pi}{4}}"]}) + "\n")
    s = score(str(f), task="hmmt_feb25", workers=1, print_table=False)
    assert s.tasks["hmmt_feb25"].mean == pytest.approx(0.5)
    assert load_config(s.run_dir).scoring["hmmt_feb25"].settings == {"approx": "exact"}
