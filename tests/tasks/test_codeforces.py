"""The `codeforces` task on a fixture in open-r1/codeforces' own schema (invented problems): what is kept, what is
left out with a count, the date window, the rating metadata, the options' errors."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks import load_task
from reasoneval.tasks.codeforces import judged_by
from tests.tasks.conftest import HUB_FIXTURES


def _data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    shutil.copy(HUB_FIXTURES / "codeforces.jsonl", d / "codeforces.jsonl")
    return d


def test_gradable_problems_kept_and_the_others_left_out_with_a_count(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="reasoneval"):
        spec, problems = load_task("codeforces", data_dir=_data_dir(tmp_path))
    assert [p.id for p in problems] == ["9001/A", "9001/B", "9003/E", "9003/F"]
    assert ("3 of 7 problems left out: 1 interactive (the dataset ships no interactor), 1 official tests incomplete, "
            "1 reads a file, not stdin") in caplog.text.replace("codeforces: ", "")
    # several right answers: graded by the row's generated_checker, in open-r1's convention
    assert problems[1].payload["checker"] == {"language": "python", "protocol": "open-r1",
                                              "source": problems[1].payload["checker"]["source"]}
    assert problems[1].payload["checker"]["source"].startswith("import sys\n\n\ndef main(input_path, output_path")
    assert "checker" not in problems[0].payload
    a = problems[0]
    assert a.payload["tests"][0] == {"input": "2 3\n", "output": "5\n", "kind": "public"}
    assert [t["kind"] for t in a.payload["tests"]] == ["public", "official", "official", "official"]
    assert a.payload["time_limit_s"] == 1.0 and a.payload["memory_mb"] == 256 and a.payload["mode"] == "stdin"
    assert a.metadata["rating"] == 800 and a.metadata["rating_band"] == "<1200 (newbie-pupil)"
    assert a.metadata["contest_date"] == "2021-01-05" and a.metadata["contest_year"] == 2021
    assert "# Sum of Two" in a.problem and "## Input" in a.problem and "time limit per test: 1 seconds" in a.problem
    assert "rating" not in problems[2].metadata  # unrated: no rating, no band
    assert problems[3].metadata["rating_band"].startswith(">=2400")


def test_keep_incomplete_grades_against_the_incomplete_tests(tmp_path: Path) -> None:
    spec, problems = load_task("codeforces", data_dir=_data_dir(tmp_path), options={"keep": "incomplete"})
    assert "9002/D" in [p.id for p in problems]
    assert dict(spec.options_given) == {"keep": "incomplete"}


def test_date_window(tmp_path: Path) -> None:
    spec, problems = load_task("codeforces", data_dir=_data_dir(tmp_path),
                               options={"since": "2025-01-01", "until": "2025-12-31"})
    assert [p.id for p in problems] == ["9003/E", "9003/F"]
    assert dict(spec.options_given) == {"since": "2025-01-01", "until": "2025-12-31"}
    _, early = load_task("codeforces", data_dir=_data_dir(tmp_path), options={"until": "2021-12-31"})
    assert [p.id for p in early] == ["9001/A", "9001/B"]


@pytest.mark.parametrize("options, message", [
    ({"since": "2025"}, "give a date as YYYY-MM-DD"),
    ({"language": "java"}, "give one of python, cpp, any"),
    ({"keep": "checker"}, "only keep=incomplete"),
    ({"release": "v6"}, "unknown --task-arg 'release' for codeforces"),
    ({"since": "2030-01-01"}, "no problem left to grade"),
])
def test_bad_options_are_one_line_errors(tmp_path: Path, options: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        load_task("codeforces", data_dir=_data_dir(tmp_path), options=options)


def test_a_row_without_description_is_named(tmp_path: Path) -> None:
    d = tmp_path / "data"
    d.mkdir()
    (d / "codeforces.jsonl").write_text('{"id": "1/A", "description": "", "examples": []}\n')
    with pytest.raises(UserError, match="1/A has no description"):
        load_task("codeforces", data_dir=d)


def test_language_reaches_the_prompt_and_the_judge(tmp_path: Path) -> None:
    from reasoneval.prompts import PROMPTS

    spec, problems = load_task("codeforces", data_dir=_data_dir(tmp_path), options={"language": "cpp"})
    assert dict(spec.options_given) == {"language": "cpp"}
    assert spec.scoring.scorer == "codeforces" and spec.scoring.settings["language"] == "cpp"
    text = PROMPTS.get(spec.prompt).chat(problems[0])
    assert text.startswith("# Sum of Two") and "C++17 program" in text and "```cpp" in text
    _, plain = load_task("codeforces", data_dir=_data_dir(tmp_path))
    assert "Python 3 program" in PROMPTS.get("codeforces").chat(plain[0])


REASONS = ["official tests incomplete", "reads a file, not stdin", "interactive (the dataset ships no interactor)"]


def _recount(rows: list[dict[str, Any]], keep_incomplete: bool = False) -> tuple[dict[str, int], dict[str, int]]:
    """The fixture's problems per judging method and per reason left out, recounted from its raw rows (the
    dataset's own fields, not the task's payload): the first reason that applies, in the task's order."""
    judged = {"plain text compare": 0, "testlib checker": 0, "open-r1 generated checker": 0, "interactive": 0}
    left: dict[str, int] = {}
    for row in rows:
        reasons = [why for why, applies in zip(REASONS, (
            not keep_incomplete and (row.get("official_tests_complete") is False or not row.get("official_tests")),
            row.get("input_mode", "stdio") != "stdio", bool((row.get("interaction_format") or "").strip())))
            if applies]
        if reasons:
            left[reasons[0]] = left.get(reasons[0], 0) + 1
        else:
            judged["open-r1 generated checker" if (row.get("generated_checker") or "").strip()
                   else "plain text compare"] += 1
    return judged, left


@pytest.mark.parametrize("options", [{}, {"keep": "incomplete"}, {"since": "2022-01-01"}])
def test_problems_per_judging_method_and_left_out_per_reason(tmp_path: Path, options: dict[str, str]) -> None:
    rows = [json.loads(line) for line in (HUB_FIXTURES / "codeforces.jsonl").read_text().splitlines()]
    if "since" in options:  # the window: contests from 2022-01-01 on (Unix seconds 1640995200)
        rows = [r for r in rows if r["contest_start"] >= 1640995200]
    judged, left = _recount(rows, keep_incomplete="keep" in options)
    spec, problems = load_task("codeforces", data_dir=_data_dir(tmp_path), options=options)
    assert spec.judged_by(problems) == judged and dict(spec.left_out) == left
    assert sum(judged.values()) == len(problems) and list(dict(spec.left_out)) == sorted(left, key=REASONS.index)
    if not options:  # the fixture has one of each reason, and a generated checker
        assert left == {"official tests incomplete": 1, "reads a file, not stdin": 1,
                        "interactive (the dataset ships no interactor)": 1}
        assert judged["open-r1 generated checker"] == 1 and judged["plain text compare"] == 3


def test_a_problem_with_a_testlib_checker_or_an_interactor_is_counted_as_such() -> None:
    def p(**payload: Any) -> Problem:
        return Problem(task="codeforces", id="x", problem="", answer="", key="k", payload={"tests": [], **payload})
    got = judged_by([p(), p(checker={"language": "cpp", "source": "int main(){}"}),
                     p(checker={"language": "python", "source": "", "protocol": "open-r1"}),
                     p(interactor={"language": "cpp", "source": ""}, checker={"language": "cpp", "source": ""})])
    assert got == {"plain text compare": 1, "testlib checker": 1, "open-r1 generated checker": 1, "interactive": 1}
    assert judged_by([p(checker={"language": "python", "source": "", "protocol": "domjudge"})]) == {
        "plain text compare": 0, "testlib checker": 0, "open-r1 generated checker": 0, "interactive": 0,
        "checker of unknown protocol 'domjudge' (the judge refuses it)": 1}
