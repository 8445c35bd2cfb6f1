"""Extraction rules of docs/grading.md ("Extraction"), each with a positive and a negative case."""

from __future__ import annotations

import pytest

from reasoneval.scoring.maths import extract_answer
from reasoneval.scoring.maths.extract import SHORT_RESPONSE_CHARS


def test_last_complete_boxed_with_nested_braces() -> None:
    r = "First \\boxed{1}. Then $\\boxed{\\frac{1}{\\sqrt{2}}}$."
    assert extract_answer(r) == "\\frac{1}{\\sqrt{2}}"


def test_fbox_counts_as_box() -> None:
    assert extract_answer("so the result is \\fbox{42} indeed, after a long derivation of it") == "42"


def test_unclosed_last_box_falls_back_to_the_earlier_complete_one() -> None:
    r = "We get \\boxed{7} at first. " + "x" * 60 + " Finally \\boxed{\\frac{1}{2}"
    assert extract_answer(r) == "7"


def test_boxes_joined_only_by_connectors_form_one_answer() -> None:
    assert extract_answer("The roots are \\boxed{1} and \\boxed{2}.") == "1, 2"
    # Many words between boxes: separate statements, the last box alone is the answer.
    assert extract_answer("\\boxed{1} no no no no no \\boxed{2}") == "2"


def test_final_answer_phrase() -> None:
    r = ("Lots of reasoning here that is long enough to be a real response.\n"
         "Final Answer: The final answer is $28\\%$. I hope it is correct.")
    assert extract_answer(r) == "28\\%"
    r2 = "Lots of reasoning here that is long enough to be a real response. Therefore, the answer is 12,000,023."
    assert extract_answer(r2) == "12,000,023"


def test_answer_phrase_in_prose_takes_its_value_not_a_named_quantity() -> None:
    r = "Work work work work work work work work work.\nFinal Answer: The largest $n$ is 34."
    assert extract_answer(r) == "34"


def test_phrase_after_last_box_wins_and_box_after_phrase_wins() -> None:
    r = "so $\\boxed{255}$ interest; total $10,455. Final Answer: The final answer is $10,455$. I hope it is correct."
    assert extract_answer(r) == "10,455"
    r2 = "The answer is clearly the following expression: $\\boxed{7}$ and nothing else at all here."
    assert extract_answer(r2) == "7"


def test_math_delimiters_do_not_span_lines_for_inline_math() -> None:
    assert extract_answer("Answer $$ \n 9 \n $$") == "9"
    assert extract_answer("Answer $ \n 9 \n $") is None


def test_bold_answer() -> None:
    r = "要解决这个问题，我们可以按照以下步骤进行：很长的推理过程在这里写出来，然后计算。 因此，弗兰克一共有**858颗**糖果。"
    assert extract_answer(r) == "858"
    # A bold phrase without a number is not an answer.
    assert extract_answer("**Note** that the value we computed over all these steps is 12 in total.") == "12"


def test_short_response_is_the_answer_itself() -> None:
    assert extract_answer("\\frac{3}{4}") == "\\frac{3}{4}"
    assert extract_answer("Evelyn") == "Evelyn"
    long_text = "We consider the problem carefully and say many words " * 3
    assert len(long_text) > SHORT_RESPONSE_CHARS
    assert extract_answer(long_text) is None


def test_short_prose_response_yields_its_math() -> None:
    assert extract_answer("Therefore $x \\geq 5$ is the solution.") == "x \\geq 5"
    assert extract_answer("the number is not 10 which is 1,000.99") == "1,000.99"


def test_only_text_after_last_think_is_searched() -> None:
    assert extract_answer("<think> The answer is \\boxed{42} </think> Here's a wrong answer: \\boxed{43}.") == "43"
    assert extract_answer("<think> My answer is \\boxed{42} </think> Some other text.") == "Some other text."


def test_cut_off_inside_think_has_no_answer() -> None:
    assert extract_answer("<think> so the answer is \\boxed{5} but wait, let me check") is None
    assert extract_answer("reasoning without an opening tag </think> \\boxed{5}") == "5"


def test_long_response_without_markers_takes_the_last_value() -> None:
    r = "Let us compute the probability step by step. " * 3 + "Therefore the probability that Alice wins is 2/3."
    assert extract_answer(r) == "2/3"


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("thinking about it I think the correct answer is C", "C"),
        ("Let's think step by step. It's not A because it doesn't make sense, therefore I think it's B", "B"),
        ("The answer is for sure D, it can't be A or B", "D"),
        ("D. it can't be A or B", "D"),
        ("réponse est C non A", "C"),
        ("B。不是 A", "B"),
        ("Alina and the answer is\n(C) Cecile", "C"),
        ("Final: $\\boxed{\\text{(E)}}$", "E"),
        ("答案是 J", "J"),
    ],
)
def test_choice_letter_in_usual_phrasings(response: str, letter: str) -> None:
    assert extract_answer(response, "choice") == letter


def test_choice_without_a_chosen_letter_has_no_answer() -> None:
    assert extract_answer("I am not sure which option applies to this question at all.", "choice") is None
    assert extract_answer("The answer is a number we have not found yet.", "choice") is None  # prose "a"


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("The answer is K", "K"),
        ("After checking all 26 options, the answer is (P).", "P"),
        ("Final: $\\boxed{\\text{(Z)}}$", "Z"),
        ("**T**", "T"),
        ("M. the last of them", "M"),
        ("so I choose Q", "Q"),
    ],
)
def test_choice_letters_k_to_z(response: str, letter: str) -> None:
    assert extract_answer(response, "choice") == letter


def test_a_capital_letter_in_prose_is_not_a_choice() -> None:
    assert extract_answer("I think it is not clear which option is right.", "choice") is None
    assert extract_answer("We Then Compare The Options Carefully.", "choice") is None


def test_boxed_answer_inside_answer_tags() -> None:
    assert extract_answer("Reasoning that is long enough to matter here.\n<answer>\\boxed{5}</answer>") == "5"
    assert extract_answer("<think>x</think><answer>The final answer is $\\boxed{\\frac{1}{2}}$</answer>") == "\\frac{1}{2}"
    assert extract_answer("<answer> 42 </answer>") == "42"
    assert extract_answer("<answer>The answer is (K)</answer>", "choice") == "K"


def test_last_boxed_is_the_one_public_box_parser() -> None:
    from reasoneval.scoring.maths.extract import last_boxed

    assert last_boxed("a \\boxed{1}. Then we see \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{1} and \\boxed{2}") == "1, 2"
    assert last_boxed("no box here") is None
    assert last_boxed("\\boxed{unclosed") is None


def test_extraction_is_linear_on_a_huge_response() -> None:
    import time

    r = "{" * 200_000 + "\\boxed{" * 1000 + "$" * 100_000 + "1" * 300_000
    t = time.monotonic()
    extract_answer(r)
    extract_answer(r, "choice")
    assert time.monotonic() - t < 5.0
