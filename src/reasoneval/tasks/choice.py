"""Multiple-choice problems: a fixed per-problem shuffle of the choices, answer = letter."""

from __future__ import annotations

import hashlib
import random
from typing import Sequence

from reasoneval.records import CHOICE_LETTERS as LETTERS
from reasoneval.tasks.keys import normalize_ws

__all__ = ["LETTERS", "choice_seed", "shuffle_choices"]


def choice_seed(problem_text: str) -> int:
    # A stable hash (not Python's salted hash()) so every process and run shows the same order.
    digest = hashlib.sha256(normalize_ws(problem_text).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def shuffle_choices(problem_text: str, correct: str, distractors: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """Shuffle [correct, *distractors] with the problem's own seed; return (choices, letter).

    The input order is canonical (correct first, distractors in the source's order), so the Hub
    layout and a data-dir row with the same choices give the same presentation order.
    """
    choices = [correct, *distractors]
    order = list(range(len(choices)))
    random.Random(choice_seed(problem_text)).shuffle(order)
    shuffled = tuple(choices[i] for i in order)
    return shuffled, LETTERS[order.index(0)]
