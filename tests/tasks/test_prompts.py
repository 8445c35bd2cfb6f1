"""reasoneval.prompts: default chat/completion prompts, MC prompts, templates, system prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoneval.errors import UserError
from reasoneval.prompts import PromptConfig, build_messages, build_prompt, read_template
from reasoneval.records import Problem
from reasoneval.tasks import problem_key

LATEX = "Let $f(x)=\\frac{x^{2}}{\\{x\\}}$ and {problem} {choices} {0}. Find $f(2)$."
MATH = Problem(task="t", id="t-0", problem=LATEX, answer="4", key=problem_key(LATEX, "4"))
MC = Problem(task="g", id="g-0", problem="Which is a noble gas?", answer="B", key="k",
             payload={"choices": ["Oxygen", "Argon", "Nitrogen", "Hydrogen"]})


def test_default_chat_prompt_is_the_standard_wording() -> None:
    msgs = build_messages(MATH, PromptConfig())
    assert msgs == ({"role": "user", "content": LATEX + "\nPlease reason step by step, and put your final "
                     "answer within \\boxed{}."},)


def test_system_prompt_comes_first() -> None:
    msgs = build_messages(MATH, PromptConfig(system_prompt="You are a careful mathematician."))
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == "You are a careful mathematician."


def test_multiple_choice_prompt_has_lettered_choices_and_answer_line() -> None:
    (msg,) = build_messages(MC, PromptConfig(style="choice"))
    text = msg["content"]
    assert text.startswith("Which is a noble gas?\n\nA) Oxygen\nB) Argon\nC) Nitrogen\nD) Hydrogen\n\n")
    assert "Answer: LETTER" in text and "A, B, C, D" in text


def test_template_substitution_is_plain_and_single_pass() -> None:
    cfg = PromptConfig(template="Q: {problem}\nOptions: {choices}\nA {x} stays {0}.")
    (msg,) = build_messages(MATH, cfg)
    # The problem's own braces and literal "{problem}"/"{choices}" text are not touched.
    assert msg["content"] == f"Q: {LATEX}\nOptions: \nA {{x}} stays {{0}}."
    (mc,) = build_messages(MC, cfg)
    assert mc["content"].startswith("Q: Which is a noble gas?\nOptions: A) Oxygen\nB) Argon")


def test_mc_template_without_choices_placeholder_still_shows_choices() -> None:
    (msg,) = build_messages(MC, PromptConfig(template="{problem}\nAnswer: LETTER"))
    assert msg["content"] == "Which is a noble gas?\n\nA) Oxygen\nB) Argon\nC) Nitrogen\nD) Hydrogen\nAnswer: LETTER"


def test_template_without_problem_placeholder_is_rejected() -> None:
    with pytest.raises(UserError, match=r"\{problem\}"):
        PromptConfig(template="Solve: {question}")


def test_completion_prompts() -> None:
    p = build_prompt(MATH, PromptConfig())
    assert p.startswith(f"Problem: {LATEX}\n") and p.endswith("\n\nSolution:") and "\\boxed{}" in p
    assert build_prompt(MATH, PromptConfig(template="<q>{problem}</q>")) == f"<q>{LATEX}</q>"
    assert build_prompt(MATH, PromptConfig(system_prompt="SYS")).startswith("SYS\n\nProblem: ")
    mc = build_prompt(MC, PromptConfig(style="choice"))
    assert "D) Hydrogen" in mc and "Answer: LETTER" in mc and mc.endswith("Solution:")


def test_read_template(tmp_path: Path) -> None:
    f = tmp_path / "t.txt"
    f.write_text("{problem}\nThink.")
    assert PromptConfig(template=read_template(f)).template == "{problem}\nThink."
    with pytest.raises(UserError, match="cannot read --prompt-template"):
        read_template(tmp_path / "missing.txt")
