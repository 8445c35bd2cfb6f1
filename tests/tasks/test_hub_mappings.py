"""Each Hub source's field mapping, run on a synthetic fixture in that source's own layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from reasoneval.errors import UserError
from reasoneval.tasks import TASKS, hub_client, load_task, loading
from reasoneval.tasks.loading import convert_hub_rows
from tests.tasks.conftest import HUB_FIXTURES

HUB_TASKS = [n for n in TASKS if TASKS.get(n).hub is not None]


def hub_rows(task: str, tmp_path: Path) -> list[dict[str, Any]]:
    """The fixture as `datasets` yields it (same Arrow typing as the Hub: floats, lists, nulls)."""
    ds = datasets.load_dataset("json", data_files=str(HUB_FIXTURES / f"{task}.jsonl"), split="train",
                               cache_dir=str(tmp_path / "hf"))
    return [dict(r) for r in ds]


def test_every_hub_task_has_a_fixture() -> None:
    assert sorted(HUB_TASKS) == sorted(p.stem for p in HUB_FIXTURES.glob("*.jsonl"))


EXPECTED: dict[str, list[dict[str, Any]]] = {
    "aime24": [
        {"id": "aime24-0", "answer": "55", "year": 2024, "source_id": "60",
         "url": "https://artofproblemsolving.com/wiki/index.php/2024_AIME_I_Problems/Problem_1"},
        {"id": "aime24-1", "answer": "400", "year": 2024, "source_id": "61"},
    ],
    "aime25": [{"id": "aime25-0", "answer": "25", "year": 2025, "source_id": "0"},
               {"id": "aime25-1", "answer": "21", "source_id": "1"}],
    "amc23": [{"id": "amc23-0", "answer": "15", "year": 2023, "source_id": "0"},
              {"id": "amc23-1", "answer": "3", "problem": "What is $\\frac{9}{3}$?"}],
    "amc": [{"id": "amc-0", "answer": "32", "year": 2022}, {"id": "amc-1", "answer": "120", "year": 2023}],
    "math500": [{"answer": "\\frac34", "subject": "Prealgebra", "level": 1, "source_id": "test/prealgebra/1.json"},
                {"answer": "2", "level": 2}],
    "minerva_math": [{"answer": "6"}, {"answer": "4.5e-16"}],
    # The reference as lm-eval's minerva_math reads it: remove_boxed(last_boxed_only_string(solution)).
    "hendrycks_math": [{"id": "hendrycks_math-0", "answer": "4", "subject": "Algebra", "level": 2},
                       {"answer": "\\frac{1}{2}", "level": 3}, {"subject": "Counting & Probability"}, {},
                       {"answer": "25"}, {"answer": "180^\\circ", "subject": "Geometry"}, {}, {}, {},
                       {"answer": "6", "subject": "Number Theory"}, {}, {}, {}, {"subject": "Precalculus"}],
    # The pool of lm-eval's hendrycks_math exemplars: the same mapping, the train split of the 7 configs.
    "hendrycks_math_train": [{"id": "hendrycks_math_train-0", "answer": "102", "subject": "Algebra", "level": 1},
                             {}, {}, {"answer": "\\frac{109}{5}"}, {}, {"answer": "122"}] + [{}] * 57,
    "olympiadbench": [
        {"answer": "4", "subject": "Number Theory", "source_id": "1606",
         "solution": "Since $3^2=9$ and $4^2=16$, $n=4$.\n\nTry $n=1,2,3,4$."},
        {"answer": "(1,2)$, $(2,1)", "subject": "Algebra"},
    ],
    "gsm8k": [{"answer": "12", "problem": "Sam has 3 boxes of 4 pens. How many pens does he have?"},
              {"answer": "2125", "solution": "2,000 + 125 = <<2000+125=2125>>2,125\n#### 2,125"}],
    # Kept in the source's layout: lm-eval's few-shot exemplars use the worked solution verbatim.
    "gsm8k_train": [{"question": "Ava has 3 apples and gets 2 more. How many apples does Ava have now?",
                     "answer": "Ava has 3 + 2 = <<3+2=5>>5 apples.\n#### 5"}] + [{}] * 119,
    "gpqa_diamond": [
        {"problem": "Which gas is most abundant in dry air?", "answer": "Nitrogen",
         "choices": ["Nitrogen", "Oxygen", "Argon", "Carbon dioxide"], "source_id": "recFIXTURE0001",
         "subject": "Atmospheric Chemistry", "solution": "About 78% of dry air is nitrogen."},
        {"answer": "6", "choices": ["6", "12", "8", "4"]},
    ],
    "limo": [{"answer": "10", "solution": "The sum is $10$."}, {"answer": "7"}],
    # Code tasks keep the source's own fields; only the test split (task_ids 11-510) is kept.
    "mbpp": [{"id": "mbpp-0", "task_id": 11, "text": "Write a function to double a number."},
             {"id": "mbpp-1", "task_id": 510, "test_list": ["assert neg(1) == -1", "assert neg(0) == 0",
                                                            "assert neg(-3) == 3"]}],
    "ifeval": [{"id": "ifeval-0", "key": 1, "instruction_id_list": ["punctuation:no_comma",
                                                                  "length_constraints:number_sentences"]},
               {"id": "ifeval-1", "prompt": "Answer in lowercase letters only."}],
    "mbpp_sanitized": [{"id": "mbpp_sanitized-0", "task_id": 12, "prompt": "Write a function to triple a number.",
                        "test_imports": ["import math"]}],
    # competition programming: rows kept verbatim (tasks/contests.py reads the source's own schema)
    "livecodebench": [{"id": "livecodebench-0", "question_id": "abc999_a"}, {"id": "livecodebench-1", "platform": "leetcode"},
                      {"id": "livecodebench-2", "difficulty": "hard"}],
    "code_contests": [{"id": "code_contests-0", "name": "1000_A. Double", "source": 2},
                      {"id": "code_contests-1", "time_limit": None}],
    "apps": [{"id": "apps-0", "problem_id": 4000}, {"id": "apps-1", "difficulty": "interview"}, {"id": "apps-2"}],
    "taco": [{"id": "taco-0", "difficulty": "EASY"}, {"id": "taco-1", "source": "geeksforgeeks"}],
    # MathArena: problem_idx -> source_id, problem_type -> subject, the year; AIME's int64 answers as text
    "aime26": [{"id": "aime26-0", "answer": "15", "source_id": "1", "year": 2026}, {"answer": "101"}],
    "hmmt_feb25": [{"answer": "100", "subject": "Algebra", "year": 2025},
                   {"answer": "\\frac{\\pi}{4}", "subject": "Geometry, Combinatorics", "source_id": "2"}],
    "hmmt_feb26": [{"answer": "4+3\\sqrt{2}", "year": 2026}, {"answer": "16"}, {"subject": "Number Theory"}],
    "hmmt_nov25": [{"answer": "1"}, {"answer": "1", "subject": "Geometry"}],
    "brumo25": [{"answer": "120"}, {"answer": "2\\sqrt{3}"}],
    "cmimc25": [{"answer": "24"}, {"answer": "9\\pi"}],
    # HLE: source fields kept (answer_type for the prompt and the rule); the question with an image left out
    "hle": [{"id": "66fixture0000000000000a1", "answer": "B", "answer_type": "multipleChoice", "category": "Math"},
            {"id": "66fixture0000000000000b2", "answer": "6"}, {"answer": "1848"}],
    "smt25": [{"answer": "2", "subject": "Number Theory"}, {"answer": "20", "source_id": "2"}],
    "codeforces": [{"id": "9001/A", "rating": 800, "contest_start": 1609804800}, {"id": "9001/B"}, {"id": "9002/C"},
                   {"id": "9002/D", "official_tests_complete": False}, {"id": "9003/E", "rating": None},
                   {"id": "9003/F"}, {"id": "9004/G", "input_mode": "file"}],
}


def test_hendrycks_math_keeps_level_unknown_and_reads_all_seven_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = convert_hub_rows(TASKS.get("hendrycks_math"), hub_rows_plain("hendrycks_math"))
    assert "level" not in rows[5]  # "Level ?"
    asked: list[tuple[str, str | None, str | None]] = []
    monkeypatch.setattr(hub_client, "load_hub_rows", lambda ds, cfg, split, hint="": asked.append((ds, cfg, split)) or [])
    hub_client.download_rows(TASKS.get("hendrycks_math").hub)  # type: ignore[arg-type]
    assert asked == [("EleutherAI/hendrycks_math", c, "test") for c in (
        "algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory", "prealgebra",
        "precalculus")]


def hub_rows_plain(task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HUB_FIXTURES / f"{task}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("task", HUB_TASKS)
def test_mapping_on_fixture(task: str, tmp_path: Path) -> None:
    rows = convert_hub_rows(TASKS.get(task), hub_rows(task, tmp_path))
    assert len(rows) == len(EXPECTED[task])
    for got, want in zip(rows, EXPECTED[task]):
        for k, v in want.items():
            assert got[k] == v, (task, k)
        if TASKS.get(task).row_to_problem is None:  # the uniform schema
            assert isinstance(got["problem"], str) and got["problem"].strip()
        # What gets cached must be plain JSON.
        json.dumps(got)


def test_hub_path_writes_cache_and_keys_match_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fixture_rows = hub_rows("aime24", tmp_path)
    calls: list[str] = []

    def fake_download(src: Any) -> list[dict[str, Any]]:  # the network boundary only
        calls.append(src.dataset_id)
        return fixture_rows

    monkeypatch.delenv("REASONEVAL_OFFLINE")
    monkeypatch.setattr(loading, "download_rows", fake_download)
    spec, hub_problems = load_task("aime24")
    assert calls == ["HuggingFaceH4/aime_2024"]
    assert spec.origin == "hub:HuggingFaceH4/aime_2024"
    cached = tmp_path / "cache" / "aime24.jsonl"
    assert cached.is_file()

    # Second load: from the cache, no download.
    spec2, cached_problems = load_task("aime24")
    assert calls == ["HuggingFaceH4/aime_2024"]
    assert spec2.origin == f"cache:{cached}"
    assert cached_problems == hub_problems

    # The same problems typed into a data dir (other whitespace, unpadded answer) get the same keys.
    ddir = tmp_path / "dd"
    ddir.mkdir()
    with (ddir / "aime24.jsonl").open("w") as f:
        for p in hub_problems:
            f.write(json.dumps({"id": p.id, "problem": "  " + p.problem.replace(" ", "\n") + "\n",
                                "answer": p.answer}) + "\n")
    spec3, dd_problems = load_task("aime24", data_dir=ddir)
    assert spec3.origin == f"data_dir:{ddir / 'aime24.jsonl'}"
    assert [p.key for p in dd_problems] == [p.key for p in hub_problems]
    assert hub_problems[0].answer == "55"


def test_pull_writes_cache_for_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rows = {t: hub_rows(t, tmp_path) for t in ("aime24", "amc23", "gpqa_diamond")}
    monkeypatch.delenv("REASONEVAL_OFFLINE")
    by_id = {TASKS.get(t).hub.dataset_id: r for t, r in rows.items()}  # type: ignore[union-attr]
    monkeypatch.setattr(loading, "download_rows", lambda src: by_id[src.dataset_id])
    paths = loading.pull(["aime24,amc23", "gpqa_diamond", "arith"])
    assert [p.name for p in paths] == ["aime24.jsonl", "amc23.jsonl", "gpqa_diamond.jsonl"]
    spec, probs = load_task("gpqa_diamond")
    assert spec.origin.startswith("cache:")
    assert probs[0].choices and probs[0].answer in "ABCD"
    assert probs[0].choices is not None and probs[0].choices["ABCD".index(probs[0].answer)] == "Nitrogen"


def test_changed_hub_layout_is_a_clear_error() -> None:
    with pytest.raises(UserError) as e:
        convert_hub_rows(TASKS.get("gsm8k"), [{"question": "q", "answer": "a\n#### 1"}, {"prompt": "q"}])
    msg = str(e.value)
    assert msg.startswith("hf:openai/gsm8k (main) split=test row 1:") and "'answer'" in msg and "\n" not in msg


def test_minerva_answer_from_boxed_solution_when_column_missing() -> None:
    (row,) = convert_hub_rows(TASKS.get("minerva_math"), [
        {"question": "q", "solution": "So $x=\\boxed{\\frac{1}{2}}$ m, not \\boxed{3} ... \\boxed{ 4.5e33 }"}])
    assert row["answer"] == "4.5e33"
