"""`reasoneval run --tasks codeforces` end to end on the loopback server: the fixture in open-r1/codeforces' schema,
scripted programs (right, wrong) judged in the real sandbox, the rating bands and contest years in summary.json,
`analyze --rating` and the report's rating table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reasoneval.cli.main import main
from tests.tasks.test_codeforces import _recount

FIXTURES = Path(__file__).parent / "fixtures" / "hub"


def fence(code: str, language: str = "python") -> str:
    return f"<think>the plan</think>\n```{language}\n{code}\n```\n"


LARGEST_CPP = ("#include <bits/stdc++.h>\nint main(){int n;std::cin>>n;long long m=LLONG_MIN,x;"
               "for(int i=0;i<n;i++){std::cin>>x;m=std::max(m,x);}std::cout<<m<<\"\\n\";}")
SCRIPT = {
    "Given two integers a and b": fence("a, b = map(int, input().split())\nprint(a + b)"),
    "Print the largest of the n numbers": fence(LARGEST_CPP, "cpp"),
    "Count pairs i < j": fence("print(0)"),  # wrong on the first (public) test
    # several right answers (unrated: the rating below stays the two rated problems'), judged by the row's
    # generated_checker: a right permutation that is not the reference's
    "Print any permutation p of 1..n": fence("n = int(input())\nprint(*([n] + list(range(1, n))))"),
}


@pytest.mark.slow
def test_codeforces_run_rating_bands_analyze_rating_and_report(make_openai_server: Any, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(FIXTURES / "codeforces.jsonl", data / "codeforces.jsonl")
    server = make_openai_server(script=SCRIPT, default="no code")
    out = tmp_path / "results"
    assert main(["run", "--tasks", "codeforces", "--n", "2", "--base-url", server.base_url, "--model", "test-model",
                 "--data-dir", str(data), "--output-dir", str(out), "--no-progress", "--grading-workers", "2",
                 "--retry-backoff", "0.01", "--task-arg", "codeforces:language=any"]) == 0
    run_dir = next((out / "test-model").iterdir())
    table = capsys.readouterr().out
    assert "codeforces [rating_band=<1200 (newbie-pupil)]" in table
    assert "codeforces: Codeforces rating 1600 (95% CI" in table and "(2 unrated left out)" in table
    summary = json.loads((run_dir / "summary.json").read_text())
    cf = summary["tasks"]["codeforces"]
    assert cf["num_problems"] == 4 and cf["mean"] == pytest.approx(3 / 4)
    assert cf["breakdown"]["rating_band"]["<1200 (newbie-pupil)"]["mean"] == pytest.approx(1.0)
    assert cf["breakdown"]["rating_band"][">=2400 (grandmaster)"]["mean"] == pytest.approx(0.0)
    assert set(cf["breakdown"]["contest_year"]) == {"2021", "2025"}
    config = json.loads((run_dir / "config.json").read_text())
    assert config["datasets"]["codeforces"]["options"] == {"language": "any"}
    # what the rating rests on: problems per judging method, and those left out, as recounted from the fixture's rows
    judged, left = _recount([json.loads(x) for x in (FIXTURES / "codeforces.jsonl").read_text().splitlines()])
    assert config["datasets"]["codeforces"]["judged_by"] == judged and config["datasets"]["codeforces"]["left_out"] == left
    assert ("codeforces: 4 problems judged by plain text compare 3, testlib checker 0, open-r1 generated checker 1, "
            "interactive 0; 3 left out before the run: official tests incomplete 1; reads a file, not stdin 1; "
            "interactive (the dataset ships no interactor) 1") in table.replace("\n", " ")
    # the calibration its CPU limits were scaled by, measured at generation and recorded (scoring.needs_calibration)
    assert config["calibration"]["factor"] > 0
    assert json.loads((run_dir / "calibration.json").read_text())["factor"] == config["calibration"]["factor"]
    import pyarrow.parquet as pq
    rows = {r["id"]: [json.loads(d) for d in r["details"]]
            for r in pq.read_table(run_dir / "results.parquet", columns=["id", "details"]).to_pylist()}
    assert [d["language"] for d in rows["9003/E"]] == ["cpp", "cpp"]
    assert all(d["verdict"] == "passed" for d in rows["9003/E"])
    assert all(d["verdict"] == "wrong_answer" and d["first_failure"]["kind"] == "public" for d in rows["9003/F"])
    assert all(d["verdict"] == "passed" and d["tests_passed"] == 4 for d in rows["9001/B"])  # by its checker
    # two rated problems, 800 solved every time and 2400 never: the Elo curve puts the model half way
    rating = cf["rating"]
    assert rating["rating"] == pytest.approx(1600, abs=1) and rating["num_problems"] == 2
    assert rating["num_unrated"] == 2 and rating["num_samples"] == 4

    assert main(["analyze", str(run_dir), "--rating"]) == 0
    text = capsys.readouterr().out
    assert "Codeforces rating" in text and "1600" in text and "<1200 (newbie-pupil)" in text
    assert "codeforces: judged by plain text compare 3, testlib checker 0, open-r1 generated checker 1" in text
    assert main(["analyze", str(run_dir), "--rating", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["codeforces"]
    assert got["judged_by"] == judged and got["left_out"] == left
    assert got["rating"]["rating"] == pytest.approx(1600, abs=1)
    assert got["human_percentile"]["rating"] == "77" and "blog/entry/126802" in got["human_percentile"]["source"]
    assert [b["band"] for b in got["bands"]] == ["<1200 (newbie-pupil)", ">=2400 (grandmaster)"]
    assert got["bands"][0]["observed"] == 1.0 and got["bands"][0]["predicted"] == pytest.approx(0.99, abs=0.01)

    html = (run_dir / "report.html").read_text()
    assert 'id="rating"' in html and "1600 (95% CI" in html
    assert '<ul id="judged-by"><li>codeforces: 4 problems judged by plain text compare 3' in html

    # `report` re-scores from the run's verdict cache (codeforces_runs.jsonl): no program runs again
    cached = (run_dir / "codeforces_runs.jsonl").read_text().splitlines()
    assert len(cached) == 4  # one per distinct program (both samples of a problem got the same response)
    assert main(["report", str(run_dir)]) == 0
    assert "percentile 77 (CI" in capsys.readouterr().out  # 1600 among active Codeforces users (metrics/rating.py)
    assert (run_dir / "codeforces_runs.jsonl").read_text().splitlines() == cached

    # export --correct-only: distillation rows with the prompt as sent (the language the run asked for)
    exported = tmp_path / "sft.jsonl"
    assert main(["export", str(run_dir), "-o", str(exported), "--correct-only"]) == 0
    rows = [json.loads(x) for x in exported.read_text().splitlines()]
    assert sorted(r["problem_id"] for r in rows) == ["9001/A", "9001/A", "9001/B", "9001/B", "9003/E", "9003/E"]
    assert all("a Python 3 or C++17 program" in r["messages"][0]["content"] for r in rows)


@pytest.mark.slow
def test_score_a_file_of_codeforces_responses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`reasoneval score FILE --task codeforces`: each row joined to its problem by id, judged, rated."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(FIXTURES / "codeforces.jsonl", data / "codeforces.jsonl")
    rows = [{"id": "9001/A", "response": SCRIPT["Given two integers a and b"]},
            {"problem_id": "9003/F", "response": SCRIPT["Count pairs i < j"]},
            {"id": "9003/E", "response": SCRIPT["Print the largest of the n numbers"]}]
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["score", str(path), "--task", "codeforces", "--data-dir", str(data), "--json"]) == 0
    run_dir = tmp_path / "gens.jsonl.reasoneval"
    summary = json.loads((run_dir / "summary.json").read_text())
    cf = summary["tasks"]["codeforces"]
    assert cf["num_problems"] == 3 and cf["mean"] == pytest.approx(2 / 3)
    assert cf["rating"]["num_problems"] == 2 and cf["rating"]["rating"] == pytest.approx(1600, abs=1)
    # the problems the file answers, per judging method (the task's left-out problems as loading counted them)
    dataset = json.loads((run_dir / "config.json").read_text())["datasets"]["codeforces"]
    assert dataset["judged_by"] == {"plain text compare": 3, "testlib checker": 0, "open-r1 generated checker": 0,
                                    "interactive": 0} and sum(dataset["left_out"].values()) == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "1/Z", "response": "x"}) + "\n")
    assert main(["score", str(bad), "--task", "codeforces", "--data-dir", str(data)]) == 2
    assert "id '1/Z' matches no problem of task codeforces" in capsys.readouterr().err
