"""`reasoneval run --tasks livecodebench,code_contests` end to end: the OpenAI engine on the loopback server with
scripted programs (right, wrong, crashing, memory-hungry, hostile), the real sandbox, then the table, summary.json,
results.parquet details, report.html, analyze and export --correct-only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reasoneval.cli.main import main
from reasoneval.report.html_page import _verdict_text

FIXTURES = Path(__file__).parent / "fixtures" / "hub"


def fence(code: str) -> str:
    return f"<think>the plan</think>Here it is:\n```python\n{code}\n```\n"


CARDS = fence("t = int(input())\nfor _ in range(t):\n    s = input().strip()\n"
              "    print('YES' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else 'NO')")
CARDS_WRONG_CASE = fence("t = int(input())\nfor _ in range(t):\n    s = input().strip()\n"
                         "    print('yes' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else 'no')")
SLAVIC = fence("import sys\ndata = sys.stdin.buffer.read().split()\nt = int(data[0]); pos = 1\nout = []\n"
               "for _ in range(t):\n    n = int(data[pos]); a = sorted(map(int, data[pos + 1:pos + 1 + n])); pos += 1 + n\n"
               "    a[0] += 1\n    p = 1\n    for x in a:\n        p *= x\n    out.append(str(p))\nprint('\\n'.join(out))")
STRIP_MEMORY = fence("x = [0] * (10 ** 10)")
SENIORS = fence("class Solution:\n    def countSeniors(self, details: List[str]) -> int:\n"
                "        return sum(int(d[11:13]) > 60 for d in details)")
# a crash of the interpreter itself (the C stack overflows: SIGSEGV). Not a fork bomb: under the run's 6 s limit
# a fork bomb ends at the wall-clock guard (ten times the CPU limit: 111 s here, the whole test's time); the
# hostile programs are contained in tests/scoring/programs/test_contest.py, under a 1 s limit
STACK_CRASH = fence("import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(n):\n    return f(n + 1) + 1\nprint(f(0))")

# the fixture problems (Hub schema, with difficulty and platform)
SUM_PAIR = fence("a, b = map(int, input().split())\nprint(a + b)")
TAKE_K = fence("class Solution:\n    def takeK(self, nums, k):\n        return nums[:k]")
ECHO_WRONG = fence("print(input())")  # not reversed: wrong on the first (public) test
DOUBLE = fence("print(2 * int(input()))")
SUM_LINE_RTE = fence("print(sum(map(int, input().split())) / 0)")

SCRIPT: dict[str, Any] = {
    "three cards with letters": [CARDS, CARDS_WRONG_CASE], "Slavic is preparing a present": SLAVIC,
    "strip of paper": [STRIP_MEMORY, STACK_CRASH], "strictly more than 60 years old": SENIORS,
    "Read two integers A and B": SUM_PAIR, "first k elements of nums": TAKE_K, "input line reversed": ECHO_WRONG,
    "Print twice the integer": DOUBLE, "sum of the numbers on the line": SUM_LINE_RTE,
}


def _run(server: Any, tmp_path: Path, data_dir: Path, tasks: str, limit: int, extra: list[str] = ()) -> Path:
    out = tmp_path / "results"
    args = ["run", "--tasks", tasks, "--limit", str(limit), "--n", "2", "--base-url", server.base_url,
            "--model", "test-model", "--data-dir", str(data_dir), "--output-dir", str(out), "--no-progress",
            "--grading-workers", "2", "--retry-backoff", "0.01", *extra]
    assert main(args) == 0
    return next((out / "test-model").iterdir())


def _details(run_dir: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    t = pq.read_table(run_dir / "results.parquet", columns=["task", "id", "details"]).to_pylist()
    return {(r["task"], r["id"]): [json.loads(d) for d in r["details"]] for r in t}


@pytest.mark.slow
@pytest.mark.real_data("livecodebench_public.jsonl", "code_contests.jsonl")
def test_shared_data_run_livecodebench_and_code_contests(make_openai_server: Any, tmp_path: Path, real_data_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    server = make_openai_server(script=SCRIPT, default="I cannot solve this one.")
    run_dir = _run(server, tmp_path, real_data_dir, "livecodebench,code_contests", 10)
    out = capsys.readouterr().out
    assert "livecodebench" in out and "code_contests" in out
    summary = json.loads((run_dir / "summary.json").read_text())
    lcb = summary["tasks"]["livecodebench"]
    samples = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    cards_right = sum(1 for s in samples if s["text"] == CARDS)  # the seed picks the right or the wrong-case answer
    # problems 0 (cards, by seed), 1 (Slavic: right) and 9 (seniors: right) of 10
    assert lcb["mean"] == pytest.approx((cards_right + 2 + 2) / 20)
    details = _details(run_dir)
    cards = details[("livecodebench", "livecodebench_public-0")]
    assert {d["verdict"] for d in cards} <= {"passed", "wrong_answer"}
    wrong = [d for d in cards if d["verdict"] == "wrong_answer"]
    assert all(d["first_failure"] == {"index": 0, "kind": "public", "number": 0} for d in wrong)
    strip = details[("livecodebench", "livecodebench_public-2")]
    assert {d["verdict"] for d in strip} <= {"memory_limit", "time_limit", "runtime_error"} and strip[0]["verdict"]
    assert all(d["verdict"] == "passed" for d in details[("livecodebench", "livecodebench_public-9")])
    assert all(d["verdict"] == "no_code" for d in details[("livecodebench", "livecodebench_public-3")])
    # config.json: the calibration the CPU limits were scaled by, measured once for the run
    config = json.loads((run_dir / "config.json").read_text())
    assert config["calibration"]["factor"] > 0 and config["calibration"]["reference_cpu_s"] > 0
    assert json.loads((run_dir / "calibration.json").read_text())["factor"] == config["calibration"]["factor"]
    assert config["datasets"]["livecodebench"]["num_problems"] == 10
    assert all(d["cpu_limit_s"] == pytest.approx(6.0 * config["calibration"]["factor"], abs=0.01)
               for d in details[("livecodebench", "livecodebench_public-9")])

    # analyze: the verdicts per task
    assert main(["analyze", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "livecodebench: verdicts" in text and "no_code" in text

    # export --correct-only: the prompt as sent (LiveCodeBench's format), the response and the verdict detail
    exported = tmp_path / "sft.jsonl"
    assert main(["export", str(run_dir), "-o", str(exported), "--correct-only"]) == 0
    rows = [json.loads(x) for x in exported.read_text().splitlines()]
    assert rows and all(r["correct"] for r in rows)
    assert {r["task"] for r in rows} <= {"livecodebench", "code_contests"}
    seniors = [r for r in rows if r["problem_id"] == "livecodebench_public-9"]
    assert len(seniors) == 2
    assert seniors[0]["messages"][0]["content"].startswith("### Question:\n")
    assert "class Solution:" in seniors[0]["messages"][0]["content"]
    assert json.loads(seniors[0]["details"])["verdict"] == "passed"


@pytest.mark.slow
def test_hub_schema_run_has_difficulty_rows_and_verdicts(make_openai_server: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for task in ("livecodebench", "code_contests"):
        shutil.copy(FIXTURES / f"{task}.jsonl", data / f"{task}.jsonl")
    server = make_openai_server(script=SCRIPT, default="no code")
    run_dir = _run(server, tmp_path, data, "livecodebench,code_contests", 10,
                   ["--task-arg", "livecodebench:since=2024-01-01", "--task-arg", "livecodebench:until=2025-02-01"])
    out = capsys.readouterr().out
    # the table: a row per difficulty and platform, and what the window covered
    assert "livecodebench [difficulty=easy]" in out and "livecodebench [difficulty=medium]" in out
    assert "livecodebench [platform=leetcode]" in out and "code_contests [platform=codeforces]" in out
    assert "livecodebench: 2 problems" in out and "2024-01-01 to 2025-02-01" in out
    summary = json.loads((run_dir / "summary.json").read_text())
    lcb, cc = summary["tasks"]["livecodebench"], summary["tasks"]["code_contests"]
    assert lcb["num_problems"] == 2 and lcb["mean"] == pytest.approx(1.0)  # the window left out the 2023 problem
    assert set(lcb["breakdown"]["difficulty"]) == {"easy", "medium"}
    assert cc["breakdown"]["difficulty"]["A"]["mean"] == pytest.approx(1.0)
    assert cc["breakdown"]["platform"]["aizu"]["mean"] == pytest.approx(0.0)
    config = json.loads((run_dir / "config.json").read_text())
    assert config["datasets"]["livecodebench"]["options"] == {"since": "2024-01-01", "until": "2025-02-01"}
    details = _details(run_dir)
    double = details[("code_contests", "code_contests-0")]
    assert all(d["verdict"] == "passed" and d["tests_passed"] == 4 for d in double)
    assert all(d["cpu_limit_s"] == pytest.approx(2.5 * config["calibration"]["factor"], abs=0.01) for d in double)
    rte = details[("code_contests", "code_contests-1")]
    assert all(d["verdict"] == "runtime_error" and "ZeroDivisionError" in d["detail"] for d in rte)
    # the report: the drill-down shows each sample's verdict and first failing test
    html = (run_dir / "report.html").read_text()
    assert "verdict: " in html
    assert _verdict_text(json.dumps(rte[0])) == ("runtime_error at public test 0 (index 0): "
                                                 + rte[0]["detail"][:200])
