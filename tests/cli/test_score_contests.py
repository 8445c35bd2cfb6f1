"""`reasoneval score FILE --task livecodebench|code_contests|apps|taco`: lcb_runner's output, SkyThought's results
file and our own export, joined to the task's problems (fixture rows in each source's own schema) and graded in
the real sandbox; what does not match is a one-line error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reasoneval.cli.main import main
from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.results.schema import load_config
from reasoneval.run.contest_files import join_contest_file
from reasoneval.run.imported import RESPONSE_FIELDS, score
from reasoneval.tasks.loading import file_sha256, load_task

ROOT = Path(__file__).resolve().parents[2]
HUB_FIXTURES = ROOT / "tests" / "fixtures" / "hub"

SUM = "a, b = map(int, input().split())\nprint(a + b)"
TAKE_K = "class Solution:\n    def takeK(self, nums, k):\n        return nums[:k]"
REVERSE = "print(input()[::-1])"


def fenced(code: str) -> str:
    return f"Here it is.\n```python\n{code}\n```"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The four tasks' fixture rows (tests/fixtures/hub, each source's schema) as a data dir; nothing downloads."""
    monkeypatch.setenv("REASONEVAL_OFFLINE", "1")
    monkeypatch.setenv("REASONEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("REASONEVAL_DATA_DIR", raising=False)
    d = tmp_path / "data"
    d.mkdir()
    for task in ("livecodebench", "code_contests", "apps", "taco"):
        shutil.copy(HUB_FIXTURES / f"{task}.jsonl", d / f"{task}.jsonl")
    return d


def _correct(run_dir: Path) -> dict[str, list[bool]]:
    return {r["id"]: r["correct"] for r in pq.read_table(run_dir / "results.parquet").to_pylist()}


def test_lcb_runner_output_is_graded_by_question_id(tmp_path: Path, data_dir: Path) -> None:
    # lcb_runner's generation output: the raw outputs and the programs it extracted (code_list; "" where none)
    rows = [{"question_title": "Sum Pair", "question_content": "Read two integers A and B and print A+B.",
             "platform": "atcoder", "question_id": "abc999_a", "contest_id": "abc999",
             "contest_date": "2024-08-10T00:00:00", "starter_code": "", "difficulty": "easy",
             "output_list": [fenced(SUM), fenced("print(0)"), "I cannot solve it."], "code_list": [SUM, "print(0)", ""]},
            {"question_title": "Take K", "question_content": "Return the first k elements of nums.",
             "platform": "leetcode", "question_id": "3999", "contest_id": "weekly-contest-999",
             "contest_date": "2024-12-01T00:00:00", "starter_code": "", "difficulty": "medium",
             "output_list": [fenced(TAKE_K)], "code_list": [TAKE_K]}]
    f = tmp_path / "Scenario.codegeneration_3_0.2.json"
    f.write_text(json.dumps(rows, indent=4))
    s = score(str(f), task="livecodebench", data_dir=str(data_dir), workers=1, print_table=False)
    t = s.tasks["livecodebench"]
    assert t.num_problems == 2
    assert _correct(s.run_dir) == {"livecodebench-0": [True, False, False], "livecodebench-1": [True]}
    config = load_config(s.run_dir)  # where the problems came from: the data dir's file and its hash
    src = data_dir / "livecodebench.jsonl"
    assert config.datasets["livecodebench"].source == f"data_dir:{src} sha256:{file_sha256(src)}"


def test_skythought_results_for_apps_and_taco(tmp_path: Path, data_dir: Path) -> None:
    # SkyThought's results.json: index -> the dataset row, its prompt and responses [{content, correctness, ...}]
    apps = {"0": {"problem_id": 4000, "question": "Print the sum of two integers.", "difficulty": "introductory",
                  "prompt": "...", "responses": [{"content": fenced(SUM), "correctness": True, "reason": ""},
                                                 {"content": fenced("print(3)"), "correctness": False, "reason": ""}],
                  "token_usages": [{"completion_tokens": 9, "prompt_tokens": 5}] * 2},
            "1": {"problem_id": 4001, "question": "Write a function double(x).", "prompt": "...",
                  # APPS gives a call's expected value as a one-element list ([4] for 4): the right value passes
                  "responses": [{"content": fenced("def double(x):\n    return 2 * x"), "correctness": True},
                                {"content": fenced("def double(x):\n    return x"), "correctness": False}]}}
    f = tmp_path / "apps_results.json"
    f.write_text(json.dumps(apps))
    s = score(str(f), task="apps", data_dir=str(data_dir), workers=1, print_table=False)
    assert s.tasks["apps"].num_problems == 2
    assert _correct(s.run_dir) == {"apps-0": [True, False], "apps-1": [True, False]}
    # TACO rows carry no id: joined by their statement
    taco = {"0": {"question": "Return the square of n.", "responses": [
                {"content": fenced("class Solution:\n    def square(self, n):\n        return n * n")}]},
            "1": {"question": "Print the maximum of the numbers.", "url": "https://codeforces.com/problemset/problem/2/A",
                  "responses": [{"content": fenced("print(min(map(int, input().split())))")}]}}
    g = tmp_path / "taco_results.json"
    g.write_text(json.dumps(taco))
    s = score(str(g), task="taco", data_dir=str(data_dir), workers=1, print_table=False)
    assert _correct(s.run_dir) == {"taco-0": [False], "taco-1": [True]}


def test_skythought_livecodebench_records_join_by_task_id(tmp_path: Path, data_dir: Path) -> None:
    # SkyThought's LiveCodeBench records: question_id as task_id, `prompt` the whole templated prompt
    spec, problems = load_task("livecodebench", data_dir=data_dir)
    f = tmp_path / "results.json"
    f.write_text(json.dumps({"0": {"task_id": "3999", "prompt": "Generate an executable ... Take K", "is_stdin": False,
                                   "responses": [{"content": fenced(TAKE_K)}, {"content": "no code"}]},
                             "1": {"task_id": "abc999_a", "prompt": "...", "responses": [{"content": fenced(SUM)}]}}))
    texts = join_contest_file(f, "livecodebench", spec, problems, response_field=None, response_fields=RESPONSE_FIELDS)
    assert texts == {problems[1].key: [fenced(TAKE_K), "no code"], problems[0].key: [fenced(SUM)]}


def test_our_export_and_plain_rows_of_code_contests(tmp_path: Path, data_dir: Path) -> None:
    _, problems = load_task("code_contests", data_dir=data_dir)
    double, total = problems

    def export_row(p: Problem, text: str, j: int) -> dict[str, Any]:  # a `reasoneval export` row
        return {"messages": [{"role": "user", "content": p.problem}, {"role": "assistant", "content": text}],
                "task": "code_contests", "problem_id": p.id, "problem_key": p.key, "sample_index": j,
                "correct": None, "model": "m", "run_id": "r"}
    rows = [export_row(double, fenced("print(2 * int(input()))"), 0),
            export_row(double, fenced("print(int(input()) + 2)"), 1),
            {"name": "p00001 Sum", "code": "print(sum(map(int, input().split())))"}]  # the source's name + a program
    f = tmp_path / "export.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), task="code_contests", data_dir=str(data_dir), workers=1, print_table=False)
    assert _correct(s.run_dir) == {double.id: [True, False], total.id: [True]}
    assert s.tasks["code_contests"].num_problems == 2


def test_what_does_not_match_is_a_one_line_error(tmp_path: Path, data_dir: Path) -> None:
    def run(rows: list[dict], **kw: str) -> None:
        f = tmp_path / "gens.json"
        f.write_text(json.dumps(rows))
        score(str(f), workers=1, print_table=False, **{"task": "livecodebench", "data_dir": str(data_dir), **kw})

    with pytest.raises(UserError, match=r"2 of 3 rows name no problem of task livecodebench \(3 problems from "
                                        r"data_dir:.*\): row 1: question_id 'abc000_z'; row 2: question_id 'x'"):
        run([{"question_id": "abc999_a", "code_list": [SUM]}, {"question_id": "abc000_z", "code_list": [SUM]},
             {"question_id": "x", "code_list": []}])
    with pytest.raises(UserError, match=r"row 0: no code or response field \(looked for code_list, responses, "
                                        r"messages, .*\); name it with --response-field"):
        run([{"question_id": "abc999_a", "graded_list": [True]}])
    with pytest.raises(UserError, match=r"row 0: no field naming a livecodebench problem"):
        run([{"code_list": [SUM]}])
    with pytest.raises(UserError, match=r"row 0: a row of task 'apps' in a file graded as livecodebench"):
        run([{"task": "apps", "problem_id": "apps-0", "messages": []}])
    with pytest.raises(UserError, match=r"'code_list' must be a string or a list of strings"):
        run([{"question_id": "abc999_a", "code_list": [1]}])
    with pytest.raises(UserError, match=r"--scorer contest: cannot tell the task .*give --task one of livecodebench"):
        run([{"problem_id": 4000, "code": SUM}], task=None, scorer="contest")  # type: ignore[arg-type]
    # a data dir's copy without the source's ids (as the shared livecodebench_public.jsonl): the error says how
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "livecodebench.jsonl").write_text(json.dumps(
        {"id": "b-0", "problem": "Print 1.", "starter_code": "", "tests": [{"input": "", "output": "1",
                                                                             "testtype": "stdin"}]}) + "\n")
    with pytest.raises(UserError, match=r"row 0: question_id 'abc999_a'; these livecodebench problems carry no "
                                        r"source ids .*give each row its statement \(question_content"):
        run([{"question_id": "abc999_a", "code_list": [SUM]}], data_dir=str(bare))


def test_cli_scores_an_lcb_runner_file_with_scorer_contest(tmp_path: Path, data_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "codegen.json"
    # code_list has the right program thrice; the raw outputs (--response-field output_list, graded with our own
    # extraction) have it once: the figure says which field was graded
    f.write_text(json.dumps([{"question_id": "1999A", "code_list": [REVERSE, REVERSE, REVERSE],
                              "output_list": [fenced(REVERSE), fenced("print(input())"), "no code at all"]}]))
    assert main(["score", str(f), "--scorer", "contest", "--response-field", "output_list", "--data-dir",
                 str(data_dir), "--json", "--grading-workers", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)["tasks"]["livecodebench"]  # the task told from the first row
    assert summary["num_problems"] == 1 and summary["mean"] == pytest.approx(1 / 3)
    assert main(["score", str(f), "--task", "livecodebench", "--answer-field", "x"]) != 0
    assert "--answer-field name a file's own problems" in capsys.readouterr().err


@pytest.mark.real_data("livecodebench_public.jsonl")
def test_lcb_runner_file_against_the_data_dirs_copy_joins_by_statement(tmp_path: Path, real_data_dir: Path) -> None:
    first = json.loads((real_data_dir / "livecodebench_public.jsonl").read_text().splitlines()[0])
    # the data dir's copy has no question ids: lcb_runner's rows are joined by their question_content
    mine = ("for _ in range(int(input())):\n    s = input().strip()\n"
            "    print('YES' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else 'NO')")
    f = tmp_path / "codegen.json"
    f.write_text(json.dumps([{"question_id": "1873A", "question_content": first["problem"],
                              "code_list": [mine, "print('YES')"]}]))
    s = score(str(f), task="livecodebench", data_dir=str(real_data_dir), workers=1, print_table=False)
    assert _correct(s.run_dir) == {first["id"]: [True, False]}


@pytest.mark.real_data("code_contests.jsonl")
def test_plain_rows_against_the_data_dirs_code_contests(tmp_path: Path, real_data_dir: Path) -> None:
    first = json.loads((real_data_dir / "code_contests.jsonl").read_text().splitlines()[0])
    mine = ("import sys\ndata = sys.stdin.read().split()\nn = int(data[0])\nnames = data[2:2 + n]\n"
            "order = sorted(range(n), key=lambda i: [ord(c) if j % 2 == 0 else -ord(c) for j, c in enumerate(names[i])])\n"
            "print(' '.join(str(i + 1) for i in order))")
    f = tmp_path / "gens.jsonl"  # our problem id, and the statement itself: both name the problem
    f.write_text(json.dumps({"id": first["id"], "response": fenced(mine)}) + "\n"
                 + json.dumps({"problem": first["problem"], "code": "print(1)"}) + "\n")
    s = score(str(f), task="code_contests", data_dir=str(real_data_dir), workers=1, print_table=False)
    assert _correct(s.run_dir) == {first["id"]: [True, False]}
