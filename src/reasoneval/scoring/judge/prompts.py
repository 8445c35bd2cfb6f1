"""What a judge is asked and how its reply is read: each prompt is a template and a strict parser.

A judge sees the question, the reference answer and the answer the rule extracted from the response, never the
response's reasoning (docs/grading.md, "The judge"). Its reply must be exactly the structured verdict the prompt asks
for; anything else is out of format (the parser returns None) and the call is retried, then counted ungraded: a
loose reading ("the answer looks correct") would turn a confused judge into a silent verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Callable

# A reasoning judge may think aloud before its verdict in the content itself.
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)
_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.S)


def _json_object(reply: str) -> dict[str, object] | None:
    """The reply as one JSON object (a ```json fence and a leading <think> block allowed), else None."""
    text = _THINK.sub("", reply, count=1).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def parse_equivalence(reply: str) -> bool | None:
    """`{"equivalent": true|false}` (an optional "reason" string beside it, nothing else) -> the verdict."""
    data = _json_object(reply)
    if data is None or not set(data) <= {"equivalent", "reason"} or not isinstance(data.get("equivalent"), bool):
        return None
    if "reason" in data and not isinstance(data["reason"], str):
        return None
    return bool(data["equivalent"])


def parse_hle(reply: str) -> bool | None:
    """HLE's judge fields as a JSON object: `correct` is "yes" or "no" (extracted_final_answer, reasoning and
    confidence may be there too, as HLE's structured output has them) -> the verdict."""
    data = _json_object(reply)
    if data is None or not set(data) <= {"extracted_final_answer", "reasoning", "correct", "confidence", "strict"}:
        return None
    correct = data.get("correct")
    if correct not in ("yes", "no"):
        return None
    return correct == "yes"


EQUIVALENCE_TEMPLATE = """You are grading the final answer to a problem against the reference answer.

[question]: {question}

[reference answer]: {reference}

[extracted answer]: {answer}

Decide whether the extracted answer is mathematically or semantically equivalent to the reference answer: the same
value, set, expression or statement, possibly written in another form. Do not solve the problem and do not judge the
reference: compare the two answers only. An answer that is only approximately equal to an exact reference, or that
adds or leaves out parts, is not equivalent.

Reply with exactly one JSON object and nothing else: {{"equivalent": true}} or {{"equivalent": false}}."""

# HLE's judge instructions (centerforaisafety/hle, hle_eval/run_judge_results.py), with the extracted answer as the
# [response] (never the reasoning) and its structured output asked for as a JSON object.
HLE_TEMPLATE = (
    'Judge whether the following [response] to [question] is correct or not based on the precise and '
    'unambiguous [correct_answer] below.\n'
    '\n'
    '[question]: {question}\n'
    '\n'
    '[response]: {answer}\n'
    '\n'
    'Your judgement must be in the format and criteria specified below:\n'
    '\n'
    'extracted_final_answer: The final exact answer extracted from the [response]. Put the extracted '
    "answer as 'None' if there is no exact, final answer to extract from the response.\n"
    '\n'
    '[correct_answer]: {reference}\n'
    '\n'
    'reasoning: Explain why the extracted_final_answer is correct or incorrect based on '
    '[correct_answer], focusing only on if there are meaningful differences between [correct_answer] and '
    'the extracted_final_answer. Do not comment on any background to the problem, do not attempt to '
    'solve the problem, do not argue for any answer different than [correct_answer], focus only on '
    'whether the answers match.\n'
    '\n'
    "correct: Answer 'yes' if extracted_final_answer matches the [correct_answer] given above, or is "
    "within a small margin of error for numerical problems. Answer 'no' otherwise, i.e. if there if "
    'there is any inconsistency, ambiguity, non-equivalency, or if the extracted answer is incorrect.\n'
    '\n'
    '\n'
    'confidence: The extracted confidence score between 0|\\%| and 100|\\%| from [response]. Put 100 if '
    'there is no confidence score available.\n'
    '\n'
    'Reply with exactly one JSON object with the keys "extracted_final_answer" (a string), "reasoning" '
    '(a string), "correct" ("yes" or "no") and "confidence" (an integer), and nothing else.'
)


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    template: str
    parse: Callable[[str], bool | None]

    def render(self, question: str, reference: str, answer: str) -> str:
        return self.template.format(question=question, reference=reference, answer=answer)

    @property
    def sha(self) -> str:
        """The template's hash: in config.json and the cache key, so an edited prompt is never served old verdicts."""
        return hashlib.sha256(self.template.encode()).hexdigest()[:16]


JUDGE_PROMPTS: dict[str, JudgePrompt] = {
    "equivalence": JudgePrompt("equivalence", EQUIVALENCE_TEMPLATE, parse_equivalence),
    "hle": JudgePrompt("hle", HLE_TEMPLATE, parse_hle),
}
