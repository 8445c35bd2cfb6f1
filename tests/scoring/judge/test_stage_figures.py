"""The cascade's stage figures (how many verdicts the rule, the judge and neither decided; the rule/judge agreement
over the samples both decided) in the table, summary.json and report.html, each checked against a recomputation from
the run's samples and judgements.jsonl."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.results.schema import load_config
from reasoneval.results.store.problems import read_problems
from reasoneval.results.store.sample_store import iter_samples
from reasoneval.run.score import score_run
from reasoneval.scoring.base import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.judge.client import JudgeItem, JudgeSettings, judgement_key
from tests.fixtures.openai_server import Reply, problem_text
from tests.scoring.judge.test_cascade import ANSWER_LINE, data, model_server, run  # noqa: F401 (data: a fixture)


def half_or_prose(body: dict) -> Reply | str:
    """A judge that accepts "one half" and answers anything else out of format (that sample stays ungraded)."""
    m = ANSWER_LINE.search(problem_text(body))
    assert m is not None
    return json.dumps({"equivalent": True}) if "half" in m.group(1) else "I cannot tell."


def recount(run_dir: Path) -> dict[str, int]:
    """The stages counted afresh: the math rule on each stored sample, the journal's verdict where it cannot decide."""
    problems = {p.key: p for p in read_problems(run_dir)}
    samples = [SampleRecord.from_json_dict(d) for d in iter_samples(run_dir / "samples.jsonl")]
    ordered: list[Problem] = [problems[s.problem_key] for s in samples]
    with ScoringContext(workers=1) as context:
        rule = create_scorer(TaskScoring("math"), context).score_many(ordered, samples)
    settings = JudgeSettings.from_json(load_config(run_dir).scoring["aime24"].settings["judge"])
    journal = {d["key"]: d["verdict"] for d in map(json.loads, (run_dir / "judgements.jsonl").read_text().splitlines())}
    n = {"samples": len(samples), "rule": 0, "judge": 0, "ungraded": 0, "both": 0, "agree": 0}
    for p, r in zip(ordered, rule):
        if r.correct or r.answer is None:
            n["rule"] += 1
            continue
        verdict = journal.get(judgement_key(settings, JudgeItem(p.problem, p.answer, str(r.answer))))
        if verdict is None:
            n["ungraded"] += 1
            continue
        n["judge"] += 1
        n["both"] += 1  # the rule rejected an answer it read, and the judge decided
        n["agree"] += verdict is False
    return n


def test_stage_counts_and_agreement_agree_with_a_recount_everywhere_they_are_shown(
        make_openai_server: Any, tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    judge = make_openai_server(model="judge", responder=half_or_prose)
    result = run(model_server(make_openai_server), judge.base_url, data, tmp_path)
    n = recount(result.run_dir)
    assert n == {"samples": 4, "rule": 2, "judge": 1, "ungraded": 1, "both": 1, "agree": 0}

    extra = json.loads((result.run_dir / "summary.json").read_text())["tasks"]["aime24"]["extra"]
    for key, count in (("decided_by_rule", n["rule"]), ("decided_by_judge", n["judge"]), ("ungraded", n["ungraded"])):
        assert (extra[key]["count"], extra[key]["of"]) == (count, n["samples"])
        assert extra[key]["mean"] == pytest.approx(count / n["samples"])
    agreement = extra["rule_judge_agreement"]
    assert (agreement["count"], agreement["of"]) == (n["agree"], n["both"])
    assert agreement["mean"] == pytest.approx(n["agree"] / n["both"])

    line = (f"aime24: verdicts of {n['samples']} samples: the rule {n['rule']} (50.0%), the judge {n['judge']} (25.0%), "
            f"ungraded {n['ungraded']} (25.0%); rule and judge agree on {n['agree']} of the {n['both']} samples both "
            "decided (0.0%)")
    capsys.readouterr()
    score_run(result.run_dir)
    table = capsys.readouterr().out
    assert line in " ".join(table.split())
    assert f"({n['judge']}/{n['samples']})" in table and f"({n['agree']}/{n['both']})" in table
    page = html.unescape((result.run_dir / "report.html").read_text())
    assert line in page
