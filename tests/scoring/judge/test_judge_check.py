"""`reasoneval judge-check`: the judge's agreement with labelled pairs beside the rule's and the cascade's; and
`score FILE` with a judge (its journal kept across re-imports)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reasoneval.scoring.judge.check import read_pairs
from tests.fixtures.openai_server import problem_text
from tests.reliability._helpers import cli_inprocess

# made-up pairs: the rule accepts the first, rejects the second (a label says equal) and the third (not equal);
# the fourth is a convention row, left out by default
PAIRS = [{"pred": "0.5", "gold": "\\frac12", "equal": True, "category": "math"},
         {"pred": "one half", "gold": "\\frac{1}{2}", "equal": True, "category": "math"},
         {"pred": "3", "gold": "4", "equal": False, "category": "math"},
         {"pred": "x", "gold": "y", "equal": True, "category": "convention"}]
ANSWER = re.compile(r"\[extracted answer\]: (.*)")


def half_judge(body: dict) -> str:
    """Accepts only answers that say "half" (so it is wrong on 0.5 = 1/2 alone)."""
    m = ANSWER.search(problem_text(body))
    assert m is not None
    return json.dumps({"equivalent": "half" in m.group(1)})


def test_judge_check_reports_rule_judge_and_cascade(make_openai_server: Any, tmp_path: Path, capsys: Any) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    judge = make_openai_server(model="judge", responder=half_judge)
    r = cli_inprocess(["judge-check", str(pairs), "--judge-model", "judge", "--judge-base-url", judge.base_url,
                       "--grading-workers", "1", "--json"], capsys)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["pairs"] == 3 and judge.count_requests() == 3
    assert (report["rule"]["agree"], report["rule"]["graded"]) == (2, 3)
    assert (report["judge_alone"]["agree"], report["judge_alone"]["graded"]) == (2, 3)
    assert (report["cascade"]["agree"], report["cascade"]["graded"]) == (3, 3)
    assert len(read_pairs(pairs, every_row=True)) == 4


def test_judge_check_needs_a_judge(tmp_path: Path, capsys: Any) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps(PAIRS[0]) + "\n")
    r = cli_inprocess(["judge-check", str(pairs)], capsys)
    assert r.returncode != 0 and "--judge-model NAME --judge-base-url URL" in r.stderr


def test_score_file_with_a_judge_pays_once(make_openai_server: Any, tmp_path: Path, capsys: Any) -> None:
    gens = tmp_path / "hmmt_feb25.jsonl"
    gens.write_text(json.dumps({"problem": "Compute $1/2$.", "answer": "\\frac{1}{2}",
                                "responses": ["\\boxed{one half}", "\\boxed{\\frac{1}{2}}"]}) + "\n")
    judge = make_openai_server(model="judge", responder=half_judge)
    args = ["score", str(gens), "--judge-model", "judge", "--judge-base-url", judge.base_url, "--grading-workers", "1",
            "--json"]
    first = cli_inprocess(args, capsys)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["tasks"]["hmmt_feb25"]["mean"] == 1.0 and judge.count_requests() == 1
    again = cli_inprocess(args, capsys)  # the file imported afresh: its judgements kept
    assert again.returncode == 0 and judge.count_requests() == 1
