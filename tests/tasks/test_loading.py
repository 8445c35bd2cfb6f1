"""Registry, groups, data dir / cache precedence, malformed files, limit, listing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasoneval.errors import UserError
from reasoneval.tasks import GROUPS, TASKS, dataset_hash, load_task, resolve_task_names, task_listing

EXPECTED_ROWS = {"aime24": 30, "aime25": 30, "amc23": 40, "amc": 83, "math500": 500,
                 "minerva_math": 272, "olympiadbench": 675, "gsm8k": 1319}


def write(path: Path, rows: list[object] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(rows, str):
        path.write_text(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_registry_names_and_math_group() -> None:
    for name in ("aime24", "aime25", "amc23", "amc", "math500", "minerva_math", "olympiadbench",
                 "gsm8k", "gpqa_diamond", "limo", "arith"):
        assert name in TASKS
    assert GROUPS["math"] == ("aime24", "aime25", "amc23", "math500", "minerva_math", "olympiadbench")
    assert TASKS.get("gpqa_diamond").scoring.scorer == "choice"
    assert TASKS.get("minerva_math").scoring.settings == {"rel_tol": 1e-2, "approx": "measured"}
    assert TASKS.get("aime24").scoring.settings == {}
    gsm = TASKS.get("gsm8k").hub
    assert gsm is not None and (gsm.dataset_id, gsm.config, gsm.split) == ("openai/gsm8k", "main", "test")


def test_resolve_expands_groups_and_dedupes_in_order() -> None:
    assert resolve_task_names(["aime25", "math", "gsm8k,aime24"]) == [
        "aime25", "aime24", "amc23", "math500", "minerva_math", "olympiadbench", "gsm8k"]


def test_resolve_unknown_lists_tasks_and_groups() -> None:
    with pytest.raises(UserError) as e:
        resolve_task_names(["aime2024"])
    msg = str(e.value)
    assert "'aime2024'" in msg and "gpqa_diamond" in msg and "math (" in msg and "\n" not in msg


@pytest.mark.real_data(*(f"{name}.jsonl" for name in EXPECTED_ROWS))
def test_loads_every_shared_benchmark(shared_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONEVAL_DATA_DIR", str(shared_data_dir))
    for name, n in EXPECTED_ROWS.items():
        spec, problems = load_task(name)
        assert len(problems) == n, name
        assert spec.origin == f"data_dir:{shared_data_dir / (name + '.jsonl')}"
        assert [p.id for p in problems[:2]] == [f"{name}-0", f"{name}-1"]
        assert len({p.key for p in problems}) == n  # no duplicate problems within a file
        assert all(p.task == name and p.choices is None and p.answer for p in problems)
    _, math500 = load_task("math500")
    assert math500[0].metadata["level"] in range(1, 6) and "subject" in math500[0].metadata
    _, aime = load_task("aime24")
    assert all(a.answer == str(int(a.answer)) for a in aime)  # integer answers normalised
    assert aime[0].metadata["year"] == 2024 and "url" in aime[0].metadata


@pytest.mark.real_data("amc23.jsonl")
def test_keys_are_stable_across_loads(shared_data_dir: Path) -> None:
    _, a = load_task("amc23", data_dir=shared_data_dir)
    _, b = load_task("amc23", data_dir=shared_data_dir)
    assert [p.key for p in a] == [p.key for p in b]
    assert dataset_hash(a) == dataset_hash(b)
    assert dataset_hash(a[:5]) != dataset_hash(a)


@pytest.mark.real_data("math500.jsonl")
def test_limit_takes_first_n(shared_data_dir: Path) -> None:
    _, full = load_task("math500", data_dir=shared_data_dir)
    _, five = load_task("math500", data_dir=shared_data_dir, limit=5)
    assert five == full[:5]
    for bad in (0, -1):
        with pytest.raises(UserError, match="--limit"):
            load_task("math500", data_dir=shared_data_dir, limit=bad)


def test_data_dir_beats_cache_and_cache_is_used_without_it(tmp_path: Path) -> None:
    write(tmp_path / "cache" / "aime25.jsonl", [{"id": "c-0", "problem": "cached?", "answer": "1"}])
    write(tmp_path / "dd" / "aime25.jsonl", [{"id": "d-0", "problem": "data dir?", "answer": "2"}])
    spec, probs = load_task("aime25", data_dir=tmp_path / "dd")
    assert [p.id for p in probs] == ["d-0"] and spec.origin.startswith("data_dir:")
    spec, probs = load_task("aime25")
    assert [p.id for p in probs] == ["c-0"] and spec.origin.startswith("cache:")
    # A data dir without the task's file falls through to the cache.
    (tmp_path / "empty").mkdir()
    _, probs = load_task("aime25", data_dir=tmp_path / "empty")
    assert [p.id for p in probs] == ["c-0"]


def test_offline_without_data_is_one_line_how_to(tmp_path: Path) -> None:
    with pytest.raises(UserError) as e:
        load_task("limo")
    msg = str(e.value)
    assert "\n" not in msg and "reasoneval data pull limo" in msg and "--data-dir" in msg and "limo.jsonl" in msg


def test_missing_data_dir_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="--data-dir .*nope is not a directory"):
        load_task("aime24", data_dir=tmp_path / "nope")
    monkeypatch.setenv("REASONEVAL_DATA_DIR", str(tmp_path / "gone"))
    with pytest.raises(UserError, match="REASONEVAL_DATA_DIR"):
        load_task("aime24")


@pytest.mark.parametrize("content, pattern", [
    ('{"id": "a", "problem": "p", "answer": "1"}\n{"id": "b", "problem": "q", answer: 2}\n',
     r"aime24\.jsonl:2: invalid JSON"),
    ('{"id": "a", "problem": "p"}\n', r"aime24\.jsonl:1: missing key 'answer'"),
    ('{"id": "a", "problem": "p", "answer": 1}\n\n{"id": "b", "problem": ["x"], "answer": "1"}\n',
     r"aime24\.jsonl:3: 'problem' must be a string, got list"),
    ('{"id": "a", "problem": "p", "answer": true}\n', r":1: 'answer' must be a string or a number, got bool"),
    ('{"id": "a", "problem": "p", "answer": "1", "level": "hard"}\n', r":1: 'level' must be an integer"),
    ('{"id": "a", "problem": "  ", "answer": "1"}\n', r":1: 'problem' is empty"),
    ('[1, 2]\n', r":1: expected a JSON object, got list"),
    ("\n\n", r"aime24\.jsonl: file is empty"),
    ('{"id": "a", "problem": "p", "answer": "1"}\n{"id": "a", "problem": "q", "answer": "2"}\n',
     r":2: duplicate id 'a' \(first at .*:1\)"),
])
def test_malformed_rows_name_file_and_line(tmp_path: Path, content: str, pattern: str) -> None:
    write(tmp_path / "aime24.jsonl", content)
    with pytest.raises(UserError, match=pattern) as e:
        load_task("aime24", data_dir=tmp_path)
    assert "\n" not in str(e.value)


def test_answers_normalised_and_metadata_kept(tmp_path: Path) -> None:
    write(tmp_path / "amc.jsonl", [
        {"id": "x", "problem": "p", "answer": 27.0, "year": 2023, "subject": "Algebra", "extra": 1},
        {"id": "y", "problem": "q", "answer": "055", "source_id": 7, "url": "u", "solution": "s"},
        {"id": "z", "problem": "r", "answer": "\\frac{1}{2}"},
    ])
    _, probs = load_task("amc", data_dir=tmp_path)
    assert [p.answer for p in probs] == ["27", "55", "\\frac{1}{2}"]
    assert dict(probs[0].metadata) == {"subject": "Algebra", "year": 2023}
    assert dict(probs[1].metadata) == {"source_id": "7", "url": "u", "solution": "s"}


@pytest.mark.real_data("aime24.jsonl")
def test_task_listing(tmp_path: Path, shared_data_dir: Path) -> None:
    listing = {e["name"]: e for e in task_listing(shared_data_dir)}
    assert set(listing) == set(TASKS)
    assert listing["aime24"]["local"] is True and listing["aime24"]["size"] == 30
    assert listing["aime24"]["source"] == f"data_dir:{shared_data_dir / 'aime24.jsonl'}"
    assert listing["limo"] == {**listing["limo"], "local": False, "size": 817,
                               "source": "hf:GAIR/LIMO split=train"}
    assert listing["arith"]["local"] is True and listing["arith"]["source"] == "generated"
    # A broken local file shows up as an error entry instead of hiding the other tasks.
    write(tmp_path / "dd" / "aime25.jsonl", "not json\n")
    broken = {e["name"]: e for e in task_listing(tmp_path / "dd")}
    assert broken["aime25"]["size"] is None and "invalid JSON" in broken["aime25"]["error"]
    assert broken["aime24"]["local"] is False and broken["aime24"]["size"] == 30
