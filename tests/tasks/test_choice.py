"""gpqa_diamond-style multiple choice: fixed per-problem shuffle, letter answers, both layouts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import reasoneval
from reasoneval.errors import UserError
from reasoneval.tasks import load_task
from reasoneval.tasks.choice import shuffle_choices
from tests.tasks.conftest import HUB_FIXTURES

SRC = str(Path(reasoneval.__file__).resolve().parents[1])


def write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_shuffle_is_stable_across_processes() -> None:
    # Python's hash() is salted per process; the shuffle must not depend on it.
    code = ("from reasoneval.tasks.choice import shuffle_choices;"
            "print(shuffle_choices('What is x?', 'right', ['w1', 'w2', 'w3']))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONPATH": SRC, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in (1, 2, 3)}
    assert len(outs) == 1
    assert outs.pop().strip() == str(shuffle_choices("What is x?", "right", ["w1", "w2", "w3"]))


def test_shuffle_puts_correct_answer_at_its_letter_and_varies_by_problem() -> None:
    letters = []
    for i in range(40):
        choices, letter = shuffle_choices(f"Question number {i}?", "right", ["w1", "w2", "w3"])
        assert sorted(choices) == ["right", "w1", "w2", "w3"]
        assert choices["ABCD".index(letter)] == "right"
        letters.append(letter)
    assert set(letters) == set("ABCD")  # not always the same position


def test_hub_layout_and_uniform_layout_agree(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "uni").mkdir()
    (tmp_path / "hub" / "gpqa_diamond.jsonl").write_text((HUB_FIXTURES / "gpqa_diamond.jsonl").read_text())
    hub_rows = [json.loads(line) for line in (HUB_FIXTURES / "gpqa_diamond.jsonl").read_text().splitlines()]
    write_rows(tmp_path / "uni" / "gpqa_diamond.jsonl", [
        {"id": f"gpqa_diamond-{i}", "problem": r["Question"].strip(), "answer": r["Correct Answer"].strip(),
         "choices": [r["Incorrect Answer 1"], r["Correct Answer"], r["Incorrect Answer 2"],
                     r["Incorrect Answer 3"].strip()]}
        for i, r in enumerate(hub_rows)])
    spec, from_hub = load_task("gpqa_diamond", data_dir=tmp_path / "hub")
    _, from_uni = load_task("gpqa_diamond", data_dir=tmp_path / "uni")
    assert spec.scoring.scorer == "choice" and spec.prompt == "choice"
    assert [(p.choices, p.answer, p.key) for p in from_hub] == [(p.choices, p.answer, p.key) for p in from_uni]
    p = from_hub[0]
    assert p.choices is not None and len(p.choices) == 4
    assert p.choices["ABCD".index(p.answer)] == "Nitrogen"
    assert p.metadata["source_id"] == "recFIXTURE0001"


def test_uniform_rows_with_letter_answer_keep_given_order(tmp_path: Path) -> None:
    write_rows(tmp_path / "gpqa_diamond.jsonl",
               [{"id": "q1", "problem": "Pick b.", "answer": "b", "choices": ["x", "y", "z"]}])
    _, (p,) = load_task("gpqa_diamond", data_dir=tmp_path)
    assert p.choices == ("x", "y", "z") and p.answer == "B"


@pytest.mark.parametrize("row, pattern", [
    ({"id": "q", "problem": "P", "answer": "A"}, "'choices' must be a list"),
    ({"id": "q", "problem": "P", "answer": "E", "choices": ["a", "b"]}, "neither a letter A-B"),
    ({"id": "q", "problem": "P", "answer": "A", "choices": ["a", 3]}, "'choices' must be a list"),
])
def test_bad_choice_rows(tmp_path: Path, row: dict, pattern: str) -> None:
    write_rows(tmp_path / "gpqa_diamond.jsonl", [row])
    with pytest.raises(UserError, match=pattern):
        load_task("gpqa_diamond", data_dir=tmp_path)
