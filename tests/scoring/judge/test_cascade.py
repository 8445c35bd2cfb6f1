"""The rule-then-judge cascade end to end: a run on the loopback server, judged by a second loopback server that
answers right, wrong, out of format or not at all; resume and re-score pay for no judgement twice."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import reasoneval
from reasoneval.results.schema import load_config
from reasoneval.run.score import score_run
from reasoneval.scoring.judge.prompts import parse_equivalence, parse_hle
from tests.fixtures.openai_server import OpenAIServer, Reply, problem_text

# problem -> (reference, the model's reply); the rule accepts P1, finds no answer in P2, rejects P0 and P3.
PROBLEMS = {
    "What is half of one?": ("\\frac{1}{2}", "It is \\boxed{\\text{one half}}."),
    "Which city is the capital of France?": ("Paris", "\\boxed{Paris}"),
    "How many sides has a triangle?": ("3", "Let me think. First, the triangle. Then more.\n\nStill thinking about it"),
    "Compute $3^2$.": ("9", "\\boxed{7}"),
}
ANSWER_LINE = re.compile(r"\[extracted answer\]: (.*)")


def judge_responder(mode: str) -> Callable[[dict], Reply | str]:
    """A judge: `right` accepts an answer only if it says "half" (the one right answer the rule rejected), `wrong`
    says the opposite, `out_of_format` answers in prose."""
    def respond(body: dict) -> Reply | str:
        m = ANSWER_LINE.search(problem_text(body))
        assert m is not None, "the judge must be shown the extracted answer"
        right = "half" in m.group(1)
        if mode == "out_of_format":
            return "The extracted answer looks equivalent to me."
        verdict = right if mode == "right" else not right
        return json.dumps({"equivalent": verdict})
    return respond


@pytest.fixture
def data(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    with open(d / "aime24.jsonl", "w") as f:
        for i, (q, (a, _)) in enumerate(PROBLEMS.items()):
            f.write(json.dumps({"id": f"p{i}", "problem": q, "answer": a}) + "\n")
    return d


def model_server(make: Callable[..., OpenAIServer]) -> OpenAIServer:
    return make(script={q: reply for q, (_, reply) in PROBLEMS.items()})


def run(model: OpenAIServer, judge_url: str, data: Path, tmp_path: Path, n: int = 1) -> Any:
    return reasoneval.evaluate(base_url=model.base_url, model="test-model", data_dir=str(data), tasks=["aime24"], n=n,
                               output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                               print_table=False, retry_backoff=0.01, judge_model="judge", judge_base_url=judge_url)


def test_judge_decides_what_the_rule_cannot_and_nothing_is_judged_twice(make_openai_server: Any, tmp_path: Path,
                                                                        data: Path) -> None:
    model = model_server(make_openai_server)
    judge = make_openai_server(model="judge", responder=judge_responder("right"))
    result = run(model, judge.base_url, data, tmp_path)
    m = result.tasks["aime24"]
    assert m.mean == pytest.approx(0.5)  # P1 by the rule, P0 by the judge
    assert m.extra["decided_by_rule"].mean == pytest.approx(0.5)  # P1 (correct), P2 (no answer)
    assert m.extra["decided_by_judge"].mean == pytest.approx(0.5)  # P0, P3
    assert m.extra["ungraded"].mean == 0
    assert m.extra["rule_judge_agreement"].mean == pytest.approx(0.5)  # P3 agreed, P0 overturned
    assert judge.count_requests() == 2
    prompts = [problem_text(r.body) for r in judge.requests() if r.path.endswith("/chat/completions")]
    assert all("Still thinking" not in p and "It is" not in p for p in prompts)  # the extracted answer only
    config = load_config(result.run_dir)
    scoring = config.scoring["aime24"]
    assert scoring.scorer == "cascade" and scoring.settings["rule"] == {"scorer": "math", "settings": {}}
    assert scoring.settings["judge"]["model"] == "judge" and scoring.settings["judge"]["prompt"] == "equivalence"
    assert len(scoring.settings["judge"]["prompt_sha"]) == 16
    assert (result.run_dir / "judgements.jsonl").read_text().count("\n") == 2

    # re-score: every verdict read from the journal
    again = score_run(result.run_dir, print_table=False)
    assert again.tasks["aime24"].mean == pytest.approx(0.5) and judge.count_requests() == 2
    # resume with a second sample per problem: the same answers, judged before
    more = run(model, judge.base_url, data, tmp_path, n=2)
    assert more.run_dir == result.run_dir and more.tasks["aime24"].num_samples == 2
    assert more.tasks["aime24"].mean == pytest.approx(0.5) and judge.count_requests() == 2


def test_a_wrong_judge_is_seen_in_the_agreement(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    judge = make_openai_server(model="judge", responder=judge_responder("wrong"))
    m = run(model_server(make_openai_server), judge.base_url, data, tmp_path).tasks["aime24"]
    assert m.mean == pytest.approx(0.5)  # P1 by the rule, P3 wrongly accepted by the judge
    assert m.extra["rule_judge_agreement"].mean == pytest.approx(0.5)  # P0 agreed (wrongly), P3 overturned


@pytest.mark.parametrize("failure", ["out_of_format", "http500", "down"])
def test_a_judge_that_fails_leaves_samples_ungraded_and_says_so(make_openai_server: Any, tmp_path: Path, data: Path,
                                                               failure: str, capsys: pytest.CaptureFixture[str]) -> None:
    if failure == "down":  # nothing listens there
        judge_url, judge = "http://127.0.0.1:9/v1", None
    else:
        judge = make_openai_server(model="judge", responder=judge_responder("out_of_format"),
                                   fault_rates={"http500": 1.0} if failure == "http500" else None)
        judge_url = judge.base_url
    result = run(model_server(make_openai_server), judge_url, data, tmp_path)
    m = result.tasks["aime24"]
    assert m.mean == pytest.approx(0.25)  # only the rule's P1; P0 and P3 ungraded, counted wrong
    assert m.extra["ungraded"].mean == pytest.approx(0.5) and m.extra["decided_by_judge"].mean == 0
    if judge is not None:
        assert judge.count_requests() == 2 * 3  # each tried once and retried twice
    assert not (result.run_dir / "judgements.jsonl").exists() or \
        (result.run_dir / "judgements.jsonl").read_text() == ""
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["tasks"]["aime24"]["extra"]["ungraded"]["mean"] == pytest.approx(0.5)
    score_run(result.run_dir)  # the headline's table says so
    assert "aime24: 50.0% of samples ungraded" in capsys.readouterr().out


def test_strict_verdict_parsing() -> None:
    assert parse_equivalence('{"equivalent": true}') is True
    assert parse_equivalence('```json\n{"equivalent": false, "reason": "differs"}\n```') is False
    assert parse_equivalence('<think>hmm</think>{"equivalent": true}') is True
    for bad in ('{"equivalent": "yes"}', "equivalent: true", '{"equivalent": true, "score": 1}', "[true]",
                'Sure. {"equivalent": true}', ""):
        assert parse_equivalence(bad) is None, bad
    assert parse_hle('{"extracted_final_answer": "4", "reasoning": "same", "correct": "yes", "confidence": 80}')
    assert parse_hle('{"correct": "no"}') is False
    assert parse_hle('{"correct": "Yes"}') is None and parse_hle('{"correct": true}') is None


def test_the_cache_key_is_the_judge_its_prompt_its_settings_and_the_item() -> None:
    from reasoneval.scoring.judge.client import JudgeItem, JudgeSettings, judgement_key

    base = JudgeSettings.make("judge", "http://a/v1")
    item = JudgeItem("q", "1/2", "0.5")
    key = judgement_key(base, item)
    assert judgement_key(JudgeSettings.make("judge", "http://elsewhere/v1"), item) == key  # where it is served: not
    for other in (JudgeSettings.make("judge-2", "http://a/v1"), JudgeSettings.make("judge", "http://a/v1", "hle"),
                  JudgeSettings.make("judge", "http://a/v1", temperature=0.7),
                  JudgeSettings.make("judge", "http://a/v1", max_tokens=16)):
        assert judgement_key(other, item) != key
    for other_item in (JudgeItem("q2", "1/2", "0.5"), JudgeItem("q", "1/3", "0.5"), JudgeItem("q", "1/2", "0.50")):
        assert judgement_key(base, other_item) != key


def test_only_free_form_answers_get_a_judge() -> None:
    from reasoneval.scoring import TaskScoring
    from reasoneval.scoring.judge.cascade import cascade_scoring
    from reasoneval.scoring.judge.client import JudgeSettings

    judge = JudgeSettings.make("judge", "http://a/v1")
    for decided_by_the_rule in (TaskScoring("code"), TaskScoring("choice"), TaskScoring("ifeval")):
        assert cascade_scoring(decided_by_the_rule, judge) == decided_by_the_rule
    math = cascade_scoring(TaskScoring("math", {"approx": "exact"}), judge)
    assert math.scorer == "cascade" and math.settings["rule"] == {"scorer": "math", "settings": {"approx": "exact"}}
    hle = cascade_scoring(TaskScoring("cascade", {"rule": {"scorer": "hle", "settings": {}}, "judge_prompt": "hle"}),
                          judge)
    assert hle.settings["judge"]["prompt"] == "hle" and hle.settings["rule"]["scorer"] == "hle"


def test_report_adds_a_judge_later_and_moves_it(make_openai_server: Any, tmp_path: Path, data: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A run generated without a judge, judged by `report --judge-model --judge-base-url`; the judge served elsewhere
    later (`report --judge-base-url`): its verdicts still read from the journal."""
    from tests.reliability._helpers import cli_inprocess

    model = model_server(make_openai_server)
    plain = reasoneval.evaluate(base_url=model.base_url, model="test-model", data_dir=str(data), tasks=["aime24"], n=1,
                                output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                print_table=False, retry_backoff=0.01)
    assert plain.tasks["aime24"].mean == pytest.approx(0.25) and "ungraded" not in plain.tasks["aime24"].extra
    judge = make_openai_server(model="judge", responder=judge_responder("right"))
    r = cli_inprocess(["report", str(plain.run_dir), "--judge-model", "judge", "--judge-base-url", judge.base_url,
                       "--grading-workers", "1", "--json"], capsys)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tasks"]["aime24"]["mean"] == pytest.approx(0.5) and judge.count_requests() == 2
    assert load_config(plain.run_dir).scoring["aime24"].scorer == "cascade"
    moved = make_openai_server(model="judge", responder=judge_responder("right"))
    again = score_run(plain.run_dir, print_table=False, judge_base_url=moved.base_url)
    assert again.tasks["aime24"].mean == pytest.approx(0.5)
    assert moved.count_requests() == 0 and judge.count_requests() == 2
    assert load_config(plain.run_dir).scoring["aime24"].settings["judge"]["base_url"] == moved.base_url
