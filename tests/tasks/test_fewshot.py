"""Few-shot prompt styles: prompts byte for byte against hand-written files, chat form, style choice, stops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.errors import UserError
from reasoneval.plan import LoadedTask, plan
from reasoneval.prompts import FEWSHOT_STYLES, PromptConfig, build_messages, build_prompt
from reasoneval.tasks import TASKS
from reasoneval.types import Problem, SamplingParams

EXPECTED = Path(__file__).parent / "fewshot_expected"
GSM = Problem("gsm8k", "gsm8k-0", "Janet's ducks lay 16 eggs per day. How many does she sell?", "18", "k-gsm")
MATH = Problem("math500", "math500-0", "What is $\\frac{1}{2} + \\frac{1}{3}$?", "\\frac{5}{6}", "k-math")


@pytest.mark.parametrize("style, k, problem, expected", [
    ("gsm8k_cot", 8, GSM, "gsm8k_cot_8shot.txt"),
    ("gsm8k", 2, GSM, "gsm8k_2shot.txt"),
    ("minerva", 4, MATH, "minerva_4shot.txt"),
    ("qwen", 2, MATH, "qwen_2shot.txt"),
])
def test_completion_prompt_is_byte_for_byte_the_hand_written_one(style: str, k: int, problem: Problem,
                                                                 expected: str) -> None:
    assert build_prompt(problem, PromptConfig(style=style, num_fewshot=k)) == (EXPECTED / expected).read_text()


def test_default_shots_and_zero_shot() -> None:
    assert build_prompt(GSM, PromptConfig(style="gsm8k_cot")) == (EXPECTED / "gsm8k_cot_8shot.txt").read_text()
    assert build_prompt(GSM, PromptConfig(style="gsm8k", num_fewshot=0)) == f"Question: {GSM.problem}\nAnswer:"
    assert FEWSHOT_STYLES["minerva"].default_shots == 4 and FEWSHOT_STYLES["gsm8k"].default_shots == 5


def test_chat_form_is_one_user_and_assistant_turn_per_exemplar() -> None:
    msgs = build_messages(GSM, PromptConfig(style="gsm8k_cot", num_fewshot=2, system_prompt="Be brief."))
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[1]["content"] == ("Q: There are 15 trees in the grove. Grove workers will plant trees in the grove "
                                  "today. After they are done, there will be 21 trees. How many trees did the grove "
                                  "workers plant today?\nA:")
    assert msgs[4]["content"] == "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."
    assert msgs[5]["content"] == f"Q: {GSM.problem}\nA:"


def test_exemplar_files_cite_their_sources() -> None:
    for name, style in FEWSHOT_STYLES.items():
        assert style.source and all(s.strip() for s in style.source), name
    assert any("2201.11903" in s for s in FEWSHOT_STYLES["gsm8k_cot"].source)
    assert any("2206.14858" in s for s in FEWSHOT_STYLES["minerva"].source)
    for e in FEWSHOT_STYLES["minerva"].exemplars:
        assert e.answer.endswith(". I hope it is correct.") and "Final Answer: The final answer is" in e.answer
    for e in FEWSHOT_STYLES["gsm8k_cot"].exemplars:
        assert e.answer.rsplit(". ", 1)[-1].startswith("The answer is ")
    for e in FEWSHOT_STYLES["qwen"].exemplars:
        assert e.answer.rstrip(".$").endswith("}") and "\\boxed{" in e.answer


def test_style_choice_per_task() -> None:
    cfg = PromptConfig(num_fewshot=4)
    assert cfg.for_task("gsm8k", "boxed", TASKS.get("gsm8k").fewshot).style == "gsm8k"
    assert cfg.for_task("math500", "boxed", TASKS.get("math500").fewshot).style == "minerva"
    assert PromptConfig().for_task("gsm8k", "boxed", "gsm8k").style == "boxed"  # no few-shot asked
    assert PromptConfig(style_override="qwen").for_task("gsm8k", "boxed", "gsm8k").style == "qwen"
    with pytest.raises(UserError, match="gpqa_diamond has no few-shot prompt style"):
        cfg.for_task("gpqa_diamond", "choice", TASKS.get("gpqa_diamond").fewshot)
    with pytest.raises(UserError, match="unknown --prompt-style 'nope'"):
        PromptConfig(style_override="nope")
    with pytest.raises(UserError, match="--num-fewshot 9 is out of range"):
        build_prompt(GSM, PromptConfig(style="gsm8k_cot", num_fewshot=9))
    with pytest.raises(UserError, match="--prompt-template replaces the prompt style"):
        PromptConfig(template="{problem}", num_fewshot=2)


def test_plan_sends_the_style_stop_sequences_after_the_users() -> None:
    task = LoadedTask(TASKS.get("gsm8k"), [GSM])
    sampling = SamplingParams(stop=("\n\n\n",))
    (req,) = plan([task], n=1, seed=0, sampling=sampling, api="completions",
                  prompt=PromptConfig(num_fewshot=2)).requests
    assert req.params.stop == ("\n\n\n", "Question:", "</s>", "<|im_end|>")
    assert req.prompt == (EXPECTED / "gsm8k_2shot.txt").read_text()
    (req,) = plan([task], n=1, seed=0, sampling=sampling, api="completions",
                  prompt=PromptConfig(num_fewshot=2, style_stop=False)).requests
    assert req.params.stop == ("\n\n\n",)
    (req,) = plan([task], n=1, seed=0, sampling=sampling, api="completions", prompt=PromptConfig()).requests
    assert req.params.stop == ("\n\n\n",) and req.prompt.startswith("Problem: ")


def _gsm_data(d: Path, rows: list[tuple[str, str]]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "gsm8k.jsonl", "w") as f:
        for i, (q, a) in enumerate(rows):
            f.write(json.dumps({"id": f"gsm8k-{i}", "problem": q, "answer": a}) + "\n")


def test_stop_sequence_ends_generation_at_the_next_exemplar_on_the_server(make_openai_server: Any,
                                                                         tmp_path: Path) -> None:
    # A base model goes on to write the next exemplar; the style's stop ("Question:") cuts it there.
    rambling = ("She sells 16 - 3 - 4 = 9 eggs.\n#### 9\n\nQuestion: A robe takes 2 bolts of blue fiber. "
                "How many bolts in total?\nAnswer: 2 + 1 = 3.\n#### 3")
    server = make_openai_server(script={"Janet's ducks": rambling})
    _gsm_data(tmp_path / "data", [("Janet's ducks lay 16 eggs per day. How many does she sell?", "9")])
    result = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="completions", tasks=["gsm8k"],
                                 num_fewshot=3, greedy=True, data_dir=str(tmp_path / "data"),
                                 output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                 print_table=False)
    (rec,) = [r for r in server.requests() if r.path == "/v1/completions"]
    assert rec.body["stop"] == ["Question:", "</s>", "<|im_end|>"]
    assert rec.body["temperature"] == 0 and rec.body["prompt"].count("Question: ") == 4
    samples = [json.loads(line) for line in open(result.run_dir / "samples.jsonl")]
    assert samples[0]["text"] == "She sells 16 - 3 - 4 = 9 eggs.\n#### 9\n\n"
    m = result.tasks["gsm8k"]
    assert m.mean == 1.0 and m.extra["strict-match"].mean == 1.0 and m.extra["flexible-extract"].mean == 1.0
    # Without the style's stop the next exemplar's number is the last one: flexible-extract reads 3.
    again = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="completions", tasks=["gsm8k"],
                                num_fewshot=3, greedy=True, style_stop=False, data_dir=str(tmp_path / "data"),
                                output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                print_table=False)
    assert again.run_id != result.run_id
    assert again.tasks["gsm8k"].extra["flexible-extract"].mean == 0.0
    assert again.tasks["gsm8k"].extra["strict-match"].mean == 1.0  # the first "#### N"


def test_chat_models_get_the_exemplars_as_turns(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(script={"Janet's ducks": "16 - 7 = 9. The answer is 9.\n\nQ: next"})
    _gsm_data(tmp_path / "data", [("Janet's ducks lay 16 eggs per day. How many does she sell?", "9")])
    result = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="chat", tasks=["gsm8k"],
                                 prompt_style="gsm8k_cot", num_fewshot=3, greedy=True, data_dir=str(tmp_path / "data"),
                                 output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                 print_table=False)
    (rec,) = [r for r in server.requests() if r.path == "/v1/chat/completions"]
    assert [m["role"] for m in rec.body["messages"]] == ["user", "assistant"] * 3 + ["user"]
    assert rec.body["messages"][-1]["content"] == "Q: Janet's ducks lay 16 eggs per day. How many does she sell?\nA:"
    assert rec.body["stop"] == ["Q:", "</s>", "<|im_end|>"]
    # strict-match follows the style: gsm8k_cot's "The answer is N."
    m = result.tasks["gsm8k"]
    assert m.extra["strict-match"].mean == 1.0
    assert result.config.scoring["gsm8k"].extra["strict-match"].settings == {
        "pattern": FEWSHOT_STYLES["gsm8k_cot"].strict_pattern}
