"""lm-eval's extractions on crafted responses, each with its known quirks (docs/lm-eval.md)."""

from __future__ import annotations

import pytest

from reasoneval.errors import UserError
from reasoneval.prompts import FEWSHOT_STYLES
from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.lmeval_minerva import normalize_final_answer
from reasoneval.tasks import TASKS


def verdicts(scoring: TaskScoring, answer: str, responses: list[str]) -> list[tuple[bool, str | None]]:
    scorer = create_scorer(scoring, ScoringContext())
    p = Problem("t", "t-0", "q", answer, "k")
    samples = [SampleRecord("t", "k", "t-0", i, 0, "ok", text=r) for i, r in enumerate(responses)]
    return [(s.correct, s.answer) for s in scorer.score_many([p] * len(samples), samples)]


STRICT = TaskScoring("strict_match")
FLEX = TaskScoring("flexible_extract")
COT = TaskScoring("strict_match", {"pattern": FEWSHOT_STYLES["gsm8k_cot"].strict_pattern})


@pytest.mark.parametrize("ref, response, strict, flexible", [
    ("7", "3 + 4 = 7\n#### 7", (True, "7"), (True, "7")),
    # a number after the answer: strict takes the first "#### N", flexible the last number in the text
    ("7", "#### 7\n\nQuestion: how many legs do 2 ducks have?\nAnswer: 2 * 2 = 4\n#### 4", (True, "7"), (False, "4")),
    # thousands separator: "," is deleted on both sides before comparing
    ("1234", "The total is 1,000 + 234.\n#### 1,234", (True, "1,234"), (True, "1,234")),
    # a trailing period: one final "." is deleted ("\.$"); flexible reads "1234."
    ("1234", "So she has 1234.", (False, None), (True, "1234.")),
    # a currency sign is part of flexible's number class and deleted before comparing
    ("1234", "She pays $1234", (False, None), (True, "$1234")),
    # no "#### ": strict finds nothing; no number: flexible neither
    ("7", "I am not sure.", (False, None), (False, None)),
])
def test_gsm8k_strict_and_flexible(ref: str, response: str, strict: tuple[bool, str | None],
                                   flexible: tuple[bool, str | None]) -> None:
    assert verdicts(STRICT, ref, [response]) == [strict]
    assert verdicts(FLEX, ref, [response]) == [flexible]


def test_negative_and_decimal_answers() -> None:
    assert verdicts(STRICT, "-3", ["It drops by 3.\n#### -3"]) == [(True, "-3")]
    assert verdicts(FLEX, "-3", ["The change is -3"]) == [(True, "-3")]
    # a single digit matches only flexible's second alternative, which keeps the sign
    assert verdicts(FLEX, "-5", ["so -5"]) == [(True, "-5")]
    # "18.00" is not "18": lm-eval compares strings after its deletions
    assert verdicts(STRICT, "18", ["#### 18.00"]) == [(False, "18.00")]
    # case is ignored and "The answer is N." is the gsm8k_cot style's strict format
    assert verdicts(COT, "8", ["23 - 15 is 8. The answer is 8.", "The answer is 8"]) == [(True, "8"), (False, None)]


def test_exact_match_minerva_and_boxed() -> None:
    minerva = TaskScoring("exact_match")
    responses = [
        "... = \\boxed{\\frac{5}{6}}.\nFinal Answer: The final answer is $\\frac{5}{6}$. I hope it is correct.",
        "Final Answer: The final answer is $\\frac56$. I hope it is correct.",  # \frac56 -> \frac{5}{6}
        "Final Answer: The final answer is $\\dfrac{5}{6}$. I hope it is correct.",  # \dfrac is a different string
        "The answer is \\boxed{\\frac{5}{6}}.",  # no Final Answer line: nothing extracted
        "Final Answer: The final answer is $\\frac{5}{6}$. ",  # cut before the closing sentence: still found
        "Final Answer: The final answer is $\\frac{5}{6}$",  # cut right after the answer: lm-eval's regex misses it
    ]
    assert [c for c, _ in verdicts(minerva, "\\frac{5}{6}", responses)] == [True, True, False, False, True, False]
    boxed = TaskScoring("exact_match", {"pattern": "boxed"})
    assert verdicts(boxed, "\\frac{5}{6}", ["so \\boxed{\\frac{5}{6}}", "so $x = 5/6$"]) == [
        (True, "\\frac{5}{6}"), (False, None)]
    # units and "x =" go, as in Minerva's normalisation
    assert normalize_final_answer("x = 16 \\text{ pounds}") == normalize_final_answer("16")
    assert normalize_final_answer("100,000") == "100000" and normalize_final_answer("0,1") == "0,1"


def test_bad_pattern_is_one_line() -> None:
    with pytest.raises(UserError, match="strict_match scorer: pattern '\\(' is not a valid regex"):
        create_scorer(TaskScoring("strict_match", {"pattern": "("}), ScoringContext())


def test_task_extras_follow_the_prompt_style() -> None:
    gsm = TASKS.get("gsm8k").scoring
    assert set(gsm.extra) == {"strict-match", "flexible-extract"}
    cot = gsm.with_style_pattern(FEWSHOT_STYLES["gsm8k_cot"].strict_pattern)
    assert cot.extra["strict-match"].settings == {"pattern": "The answer is (\\-?[0-9\\.\\,]+)."}
    assert gsm.with_style_pattern(None).extra["strict-match"].settings == {}  # lm-eval's default "#### N"
    assert TaskScoring.from_json_dict(cot.to_json_dict()) == cot
    assert set(TASKS.get("math500").scoring.extra) == {"exact_match", "math_verify"}  # lm-eval's minerva_math500
    assert set(TASKS.get("aime24").scoring.extra) == {"exact_match"}
