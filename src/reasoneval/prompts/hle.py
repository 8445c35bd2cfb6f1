"""HLE's answer format (centerforaisafety/hle: its system prompts, one per answer type), as the user message's
opening: registered in PROMPTS as "hle". The question follows verbatim (a multiple-choice question lists its
lettered choices itself)."""

from __future__ import annotations

from reasoneval.records import Problem

EXACT_ANSWER_FORMAT = ("Your response should be in the following format:\nExplanation: {your explanation for your "
                       "final answer}\nExact Answer: {your succinct, final answer}\nConfidence: {your confidence score "
                       "between 0% and 100% for your answer}")
CHOICE_FORMAT = ("Your response should be in the following format:\nExplanation: {your explanation for your answer "
                 "choice}\nAnswer: {your chosen answer}\nConfidence: {your confidence score between 0% and 100% for "
                 "your answer}")


def hle_chat(problem: Problem) -> str:
    fmt = CHOICE_FORMAT if problem.payload.get("answer_type") == "multipleChoice" else EXACT_ANSWER_FORMAT
    return f"{fmt}\n\n{problem.problem}"


def hle_completion(problem: Problem) -> str:
    return f"{hle_chat(problem)}\n\nExplanation:"
