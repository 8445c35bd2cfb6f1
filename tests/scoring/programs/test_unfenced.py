"""Which part of an unfenced HumanEval answer is the program: at most three parses, in a worker under a time
budget; an answer past the budget is that sample's harness error, never a stall (issue 31)."""

from __future__ import annotations

import ast
import time
from typing import Sequence

import pytest

from reasoneval.records import Problem
from reasoneval.scoring.programs.unfenced import HUMANEVAL_STOPS, ParseBudgetExceeded, UnfencedParser, unfenced_code
from reasoneval.tasks.loading import load_task
from tests.scoring.programs.judging import score_counting_runs


@pytest.fixture(scope="module")
def humaneval() -> list[Problem]:
    return load_task("humaneval")[1]


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def longest_parsing_cut(prompt: str, text: str, entry: str, stops: Sequence[str] = HUMANEVAL_STOPS) -> str:
    """The rule before issue 31, as the reference for the new one: every stop boundary tried from the last, one
    parse each (up to 320 parses: the stall)."""
    import re

    if re.search(rf"^[^\S\n]*def\s+{re.escape(entry)}\s*\(", text, re.MULTILINE) and _parses(text):
        return text
    if _parses(prompt + text):
        return text
    cuts = sorted({m.start() for s in stops for m in re.finditer(re.escape(s), text)})
    for i in reversed(cuts):
        if _parses(prompt + text[:i]):
            return text[:i]
    first = min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))
    return text[:first]


def _variants(p: Problem) -> dict[str, str]:
    body, prompt, entry = p.payload["canonical_solution"], p.payload["prompt"], p.payload["entry_point"]
    return {
        "body": body,
        "body_then_prose": f"{body}\nThis returns the answer.\n",
        "body_then_usage_and_prose": f"{body}\nprint({entry}())\nThat is all.\n",
        "body_then_helper": f"{body}\n\ndef helper(x):\n    return x\n",
        "body_then_broken_helper": f"{body}\n\ndef helper(x):\n    return (x\n",
        "body_then_comment_then_prose": f"{body}\n# done\nNow the tests:\n",
        "complete_function": f"{prompt}{body}",
        "complete_function_then_prose": f"{prompt}{body}\nExplanation: it works.\n",
        "guard_then_prose": f"{body}\nif __name__ == '__main__':\n    print(1)\nDone.\n",
        "two_helpers_then_unclosed": f"{body}\ndef a():\n    return 1\n\ndef b():\n    return [\n",
        "class_then_prose": f"{body}\nclass Helper:\n    pass\nThat's it.\n",
    }


def test_the_cut_agrees_with_the_longest_parsing_boundary_on_every_humaneval_problem(humaneval: list[Problem]) -> None:
    """The new rule (three parses at most) against the old one (every boundary from the last): the same program on
    each of 164 problems x 11 kinds of unfenced answer, none of them designed to make the two differ."""
    differ = []
    for p in humaneval:
        for name, text in _variants(p).items():
            prompt, entry = p.payload["prompt"], p.payload["entry_point"]
            if unfenced_code(prompt, text, entry) != longest_parsing_cut(prompt, text, entry):
                differ.append((p.id, name))
    assert differ == [], differ


def test_the_worker_gives_what_the_rule_gives(humaneval: list[Problem]) -> None:
    parser = UnfencedParser()
    try:
        for p in humaneval[:10]:
            for text in _variants(p).values():
                got = parser.code(p.payload["prompt"], text, p.payload["entry_point"])
                assert got == unfenced_code(p.payload["prompt"], text, p.payload["entry_point"])
    finally:
        parser.close()


# CPython 3.11 parses an f-string of many fields in quadratic time (about 1 s at 100 KB, 112 s at 1 MB)
F_STRING_BOMB = "    return f'" + "{numbers}" * 40000 + "'\nand then some prose\n"


def test_an_answer_past_the_budget_is_cut_off_and_the_next_one_is_found(humaneval: list[Problem]) -> None:
    p = humaneval[0]
    parser = UnfencedParser(budget_s=0.5)
    try:
        t = time.monotonic()
        with pytest.raises(ParseBudgetExceeded, match="took over 0.5 s"):
            parser.code(p.payload["prompt"], F_STRING_BOMB, p.payload["entry_point"])
        assert time.monotonic() - t < 3.0
        body = p.payload["canonical_solution"]
        assert parser.code(p.payload["prompt"], body + "\n# done\nProse.\n", p.payload["entry_point"]) == body
    finally:
        parser.close()


def test_such_an_answer_is_its_samples_harness_error_and_the_others_are_scored(mode: str,
                                                                              humaneval: list[Problem]) -> None:
    p = humaneval[0]
    t = time.monotonic()
    scores, runs = score_counting_runs([p, p], [F_STRING_BOMB, p.payload["canonical_solution"]])
    assert time.monotonic() - t < 30
    assert scores[0].status == "error" and scores[0].details["result"].startswith(
        "harness_error: ParseBudgetExceeded"), scores[0].details
    assert scores[1].details["result"] == "passed" and runs == 1
