"""HLE: the text-only questions from a fixture in cais/hle's layout, its gated message, its answer format, the rule
(exact match; multiple choice final), the judge with HLE's prompt for short answers, and its calibration error."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.errors import UserError
from reasoneval.prompts import PROMPTS
from reasoneval.scoring.judge.hle import answer_line, calibration_error, stated_confidence
from reasoneval.tasks import TASKS, hub_client, load_task
from reasoneval.tasks.loading import convert_hub_rows
from tests.fixtures.openai_server import problem_text
from tests.tasks.conftest import HUB_FIXTURES

RESPONSES = {  # question -> the model's reply
    "Which of these numbers is prime": "Explanation: 23 has no divisor.\nAnswer: B\nConfidence: 90%",
    "smallest perfect number": "Explanation: 1+2+3 = 6.\nExact Answer: six\nConfidence: 60%",
    "Fixture Treaty": "Explanation: I recall it.\nExact Answer: 1848\nConfidence: 30%",
}


def data_dir(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in (HUB_FIXTURES / "hle.jsonl").read_text().splitlines()]
    d = tmp_path / "dd"
    d.mkdir()
    (d / "hle.jsonl").write_text("".join(json.dumps(r) + "\n" for r in convert_hub_rows(TASKS.get("hle"), rows)))
    return d


def test_text_only_problems_with_their_answer_type(tmp_path: Path) -> None:
    spec, problems = load_task("hle", data_dir=data_dir(tmp_path))
    assert [p.id for p in problems] == ["66fixture0000000000000a1", "66fixture0000000000000b2",
                                        "66fixture0000000000000d4"]  # the question with an image is left out
    assert [p.payload["answer_type"] for p in problems] == ["multipleChoice", "exactMatch", "exactMatch"]
    assert problems[0].metadata["subject"] == "Math"
    prompt = PROMPTS.get(spec.prompt).chat(problems[0])
    assert prompt.startswith("Your response should be in the following format:\nExplanation:") and "Answer: {" in prompt
    assert "Exact Answer: {" in PROMPTS.get(spec.prompt).chat(problems[1])
    assert spec.hub is not None and spec.hub.gated and spec.hub.dataset_id == "cais/hle"


def test_gated_dataset_says_how_to_get_access(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def refuse(*a: Any, **k: Any) -> Any:
        raise PermissionError("Dataset 'cais/hle' is a gated dataset on the Hub. You must be authenticated")

    monkeypatch.delenv("REASONEVAL_OFFLINE")
    monkeypatch.setattr(hub_client, "check_hub_reachable", lambda timeout_s=5.0: None)
    monkeypatch.setattr(datasets, "load_dataset", refuse)
    with pytest.raises(UserError) as e:
        load_task("hle")
    msg = str(e.value)
    assert "\n" not in msg and "accept the terms at https://huggingface.co/datasets/cais/hle and set HF_TOKEN" in msg


def test_answer_format_reading() -> None:
    assert answer_line("Explanation: x\n**Exact Answer:** 42\nConfidence: 80%") == "42"
    assert answer_line("no format at all") is None
    assert stated_confidence("Confidence: 85%") == pytest.approx(0.85) and stated_confidence("sure") is None


def test_calibration_error_is_hles() -> None:
    # 300 samples: bins of 100 by confidence; HLE's loop leaves the last bin out of the sum
    conf = [0.9] * 100 + [0.5] * 100 + [0.1] * 100
    hit = [True] * 50 + [False] * 50 + [True] * 50 + [False] * 50 + [True] * 100
    # sorted by confidence: bin 0 = the 0.1s (all right: gap 0.9), bin 1 = the 0.5s (gap 0), bin 2 left out
    assert calibration_error(conf, hit) == pytest.approx(math.sqrt(100 / 300 * 0.81))
    assert calibration_error([0.5] * 99, [True] * 99) is None


def test_run_short_answers_by_the_judge_multiple_choice_by_exact_match(make_openai_server: Any, tmp_path: Path) -> None:
    model = make_openai_server(script=RESPONSES)

    def judge_reply(body: dict) -> str:
        prompt = problem_text(body)
        assert "[correct_answer]: 6" in prompt or "[correct_answer]: 1848" in prompt  # never the multiple choice
        assert "Explanation" not in prompt  # the extracted answer only, not the reasoning
        return json.dumps({"extracted_final_answer": "six", "reasoning": "six is 6", "correct": "yes",
                           "confidence": 100})

    judge = make_openai_server(model="judge", responder=judge_reply)
    result = reasoneval.evaluate(base_url=model.base_url, model="test-model", data_dir=str(data_dir(tmp_path)),
                                 tasks=["hle"], n=1, output_dir=str(tmp_path / "results"), grading_workers=1,
                                 progress=False, print_table=False, retry_backoff=0.01, judge_model="judge",
                                 judge_base_url=judge.base_url)
    m = result.tasks["hle"]
    assert judge.count_requests() == 1  # "six" for 6; 1848 exact, the letter by the rule
    assert m.mean == pytest.approx(1.0)
    assert m.extra["decided_by_judge"].mean == pytest.approx(1 / 3)
    scoring = json.loads((result.run_dir / "config.json").read_text())["scoring"]["hle"]
    assert scoring["settings"]["judge"]["prompt"] == "hle" and scoring["settings"]["rule"]["scorer"] == "hle"


def test_without_a_judge_short_answers_the_rule_rejects_are_ungraded(make_openai_server: Any, tmp_path: Path) -> None:
    model = make_openai_server(script=RESPONSES)
    result = reasoneval.evaluate(base_url=model.base_url, model="test-model", data_dir=str(data_dir(tmp_path)),
                                 tasks=["hle"], n=1, output_dir=str(tmp_path / "results"), grading_workers=1,
                                 progress=False, print_table=False, retry_backoff=0.01)
    m = result.tasks["hle"]
    assert m.mean == pytest.approx(2 / 3) and m.extra["ungraded"].mean == pytest.approx(1 / 3)


def test_calibration_error_of_a_run(make_openai_server: Any, tmp_path: Path) -> None:
    """201 samples (67 per question) with stated confidences 90%, 60% and 30%, all correct: HLE's bins of 100 by
    confidence (the last one left out, as HLE's code does) give one bin of 67 at 30% and 33 at 60%."""
    model = make_openai_server(script=RESPONSES)
    judge = make_openai_server(model="judge", responder=lambda body: json.dumps({"correct": "yes"}))
    result = reasoneval.evaluate(base_url=model.base_url, model="test-model", data_dir=str(data_dir(tmp_path)),
                                 tasks=["hle"], n=67, output_dir=str(tmp_path / "results"), grading_workers=1,
                                 progress=False, print_table=False, retry_backoff=0.01, concurrency=32,
                                 judge_model="judge", judge_base_url=judge.base_url)
    m = result.tasks["hle"]
    assert m.mean == pytest.approx(1.0) and judge.count_requests() == 1  # "six" asked once for its 67 samples
    gap = 1 - (67 * 0.3 + 33 * 0.6) / 100
    assert m.extra["calibration_error"].mean == pytest.approx(math.sqrt(100 / 201 * gap ** 2))
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["tasks"]["hle"]["extra"]["calibration_error"]["num_problems"] == 201


@pytest.mark.parametrize("server_takes_it", [True, False])
def test_the_judge_asks_for_hles_structured_output_where_the_server_takes_it(make_openai_server: Any, tmp_path: Path,
                                                                            server_takes_it: bool) -> None:
    """HLE's judge script asks for structured output (its ExtractedAnswer schema): sent as a json_schema response
    format; a server that refuses the field is asked again at once with the prompt alone, which asks for the JSON."""
    model = make_openai_server(script=RESPONSES)
    judge = make_openai_server(model="judge", responder=lambda body: json.dumps(
        {"extracted_final_answer": "six", "reasoning": "six is 6", "correct": "yes", "confidence": 60, "strict": True}),
        refused_fields=() if server_takes_it else ("response_format",))
    result = reasoneval.evaluate(base_url=model.base_url, model="test-model", data_dir=str(data_dir(tmp_path)),
                                 tasks=["hle"], n=1, output_dir=str(tmp_path / "results"), grading_workers=1,
                                 progress=False, print_table=False, retry_backoff=0.01, judge_model="judge",
                                 judge_base_url=judge.base_url)
    assert result.tasks["hle"].mean == pytest.approx(1.0) and result.tasks["hle"].extra["ungraded"].count == 0
    calls = [r for r in judge.requests() if r.path.endswith("/chat/completions")]
    assert calls[0].body is not None
    schema = calls[0].body["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["name"] == "ExtractedAnswer"
    assert schema["json_schema"]["schema"]["properties"]["correct"]["enum"] == ["yes", "no"]
    if server_takes_it:
        assert [c.status for c in calls] == [200]
    else:
        assert [c.status for c in calls] == [400, 200] and "response_format" not in (calls[1].body or {})
