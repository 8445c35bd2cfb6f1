"""Parsers of model output are linear: degenerate responses (blank-line runs, unclosed fences, `\\boxed{`
repeated and nested, long digit runs, ...) cannot stall the harness; and the linear rewrites give the same
results as the regexes they replace (compared on random strings)."""

from __future__ import annotations

import random
import re
import time

import pytest
from bench.pathological_outputs import BOUNDED, INPUTS, PARSERS

from reasoneval.scoring import lmeval, lmeval_minerva
from reasoneval.scoring.maths.extract import boxed_spans, extract_answer
from reasoneval.scoring.programs.scorer import extract_code, fenced_blocks
from reasoneval.scoring.programs.unfenced import defines


def _best(f: object, text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(text)  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize("input_name", list(INPUTS))
def test_every_parser_grows_linearly_on_degenerate_responses(input_name: str) -> None:
    # 10x the text: about 10x the time when linear, 100x when quadratic. The bound is generous and each time the
    # best of 3 (timer noise and pauses on a shared machine), and times under 0.2 s are not compared (a quadratic
    # parser takes seconds at 50 KB). A parser under a time budget (BOUNDED) is held to its budget instead, plus
    # 0.5 s for killing and restarting its worker; its growth is CPython's parser's.
    make = INPUTS[input_name]
    small, big = make(5_000), make(50_000)
    slow = []
    for name, parse in PARSERS.items():
        t_small, t_big = _best(parse, small), _best(parse, big)
        if name in BOUNDED:
            if t_big > BOUNDED[name] + 0.5:
                slow.append(f"{name}: {t_big:.4f} s at 50 KB, over its {BOUNDED[name]} s budget")
        elif t_big > max(0.2, 30 * t_small):
            slow.append(f"{name}: {t_small:.4f} s at 5 KB, {t_big:.4f} s at 50 KB")
    assert not slow, slow


def test_a_bounded_parser_is_stopped_at_its_budget() -> None:
    """The unfenced-answer worker on 1 MB of f-string fields (CPython's parser is quadratic there): the answer is
    given up at the budget, never a stall."""
    [name] = BOUNDED
    text = INPUTS["f-string fields"](1_000_000)
    t0 = time.perf_counter()
    assert PARSERS[name](text) is None  # ParseBudgetExceeded: that sample's harness_error
    assert time.perf_counter() - t0 < BOUNDED[name] + 1.0


# ---- the rewrites against the regexes they replace ----

_OLD_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:\n?```|\Z)", re.DOTALL)


def _random_text(rng: random.Random, alphabet: list[str], n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(n)))


def test_fenced_blocks_equal_the_fence_regex() -> None:
    rng = random.Random(0)
    alphabet = ["```", "`", "\n", " ", "\t", "python", "py3", "c++", "x", "def f(", "\n```", "``"]
    for _ in range(3000):
        t = _random_text(rng, alphabet, 14)
        assert fenced_blocks(t) == [(m.group(1), m.group(2)) for m in _OLD_FENCE.finditer(t)], repr(t)


def test_defines_equals_the_multiline_def_regex() -> None:
    rng = random.Random(1)
    alphabet = ["\n", " ", "\t", "def", " f", "f", "(", "g(", "x", "\n\n"]
    for _ in range(3000):
        t = _random_text(rng, alphabet, 12)
        assert defines(t, "f") == (re.search(r"^\s*def\s+f\s*\(", t, re.MULTILINE) is not None), repr(t)


def _old_boxed_contents(text: str) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    pos = 0
    box_re = re.compile(r"\\(?:boxed|fbox)\s*\{")
    while True:
        m = box_re.search(text, pos)
        if m is None:
            return out
        depth, i, n = 1, m.end(), len(text)
        while i < n and depth:
            c = text[i]
            if c == "\\" and i + 1 < n and text[i + 1] in "{}":
                i += 2
                continue
            depth += (c == "{") - (c == "}")
            i += 1
        if depth:
            return out
        out.append((m.start(), i, text[m.end():i - 1]))
        pos = m.end()


def test_boxed_spans_equal_the_box_by_box_scan() -> None:
    rng = random.Random(2)
    alphabet = ["\\boxed{", "\\fbox {", "{", "}", "\\{", "\\}", "\\", "1", " and ", "x"]
    for _ in range(5000):
        t = _random_text(rng, alphabet, 12)
        assert [(a, b, t[c:b - 1]) for a, b, c in boxed_spans(t)] == _old_boxed_contents(t), repr(t)


def test_choice_leading_letter_unchanged() -> None:
    old = re.compile(r"^\s*[\(\[]?\s*\**([A-Z])\**\s*(?:[\)\]\.:。．、,，]|$|(?=[^\sA-Za-z])|\s+(?=[A-Z\n]))")
    from reasoneval.scoring.maths.extract import _CHOICE_LEADING_RE

    rng = random.Random(3)
    alphabet = [" ", "\n", "(", "[", "*", "A", "B", "b", ")", ".", "x", "I am"]
    for _ in range(5000):
        t = _random_text(rng, alphabet, 8)
        a, b = old.match(t), _CHOICE_LEADING_RE.match(t)
        assert (a and a.group(1)) == (b and b.group(1)), repr(t)


def test_choice_phrases_unchanged_on_short_texts() -> None:
    from reasoneval.scoring.maths import extract

    old_letter = r"\(?\s*\**((?-i:[A-Z])|(?<=\()(?-i:[a-j])(?=\)))\**\s*\)?"
    old_phrase = re.compile(
        r"(?:answer|option|choice|réponse|respuesta|antwort|risposta|resposta|ответ|答案|选项|答|उत्तर|الإجابة)"
        r"(?:\s+(?:is|est|es|ist|è|é|would\s+be|should\s+be|must\s+be))?\s*(?:[:：是为]\s*)?"
        r"(?:(?:for\s+sure|definitely|clearly|probably|therefore|likely|option|choice)\s*,?\s*)*"
        + old_letter + r"(?![A-Za-z])", re.IGNORECASE)
    old_it_is = re.compile(r"\b(?:it'?s|it\s+is|choose|pick|select|go\s+with)\s+" + old_letter + r"(?![A-Za-z])")
    rng = random.Random(7)
    alphabet = ["answer", " is", " ", "  ", "\n", ":", ",", "option", "clearly", "(", ")", "*", "B", "c", "a", "x",
                "it is", "choose"]
    for _ in range(20000):
        t = _random_text(rng, alphabet, 12)
        for old, new in ((old_phrase, extract._CHOICE_PHRASE_RE), (old_it_is, extract._CHOICE_IT_IS_RE)):
            assert [(m.start(), m.group(1)) for m in old.finditer(t)] == \
                [(m.start(), m.group(1)) for m in new.finditer(t)], repr(t)


def _old_gsm8k_normalize(s: str) -> str:
    for r in lmeval.GSM8K_IGNORE:
        s = re.sub(r, "", s)
    return s.lower()


def _old_minerva_regexes(s: str) -> str:
    s = re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$", s)
    s = re.sub(r"(\\text\{)(.*?)(\})", "\\2", s)
    s = re.sub(r"(\\textbf\{)(.*?)(\})", "\\2", s)
    s = re.sub(r"(\\overline\{)(.*?)(\})", "\\2", s)
    s = re.sub(r"(\\boxed\{)(.*)(\})", "\\2", s)
    s = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", s)
    s = re.sub(r"(sqrt)(\[[^\]]*\])(\w)", "\\1\\2{\\3}", s)
    return s


def _new_minerva_regexes(s: str) -> str:
    s = lmeval_minerva._first_dollar_pair_per_line(s)
    for opener in ("\\text{", "\\textbf{", "\\overline{"):
        s = lmeval_minerva._unwrap(s, opener)
    s = lmeval_minerva._unwrap(s, "\\boxed{", greedy=True)
    s = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", s)
    return lmeval_minerva._brace_sqrt_index(s)


def _lm_eval_normalize_final_answer(final_answer: str) -> str:
    """lm_eval/tasks/minerva_math/utils.py (0.4.13) as written there."""
    final_answer = final_answer.split("=")[-1]
    for expr in lmeval_minerva.REMOVED_EXPRESSIONS:
        if expr.isalpha():
            final_answer = re.sub(rf"(?<!\\)\b{expr}\b", "", final_answer)
    for before, after in lmeval_minerva.SUBSTITUTIONS:
        final_answer = final_answer.replace(before, after)
    for expr in lmeval_minerva.REMOVED_EXPRESSIONS:
        if expr.isalpha():
            segments = re.split(r"(\\[a-zA-Z]+)", final_answer)
            for i in range(0, len(segments), 2):
                segments[i] = segments[i].replace(expr, "")
            final_answer = "".join(segments)
        else:
            final_answer = final_answer.replace(expr, "")
    final_answer = _old_minerva_regexes(final_answer)
    final_answer = re.sub(r"(sqrt)(?!\[)([^{])", "sqrt{\\2}", final_answer)
    final_answer = final_answer.replace("$", "")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", final_answer):
        final_answer = final_answer.replace(",", "")
    return final_answer


def test_normalize_final_answer_equals_lm_evals() -> None:
    rng = random.Random(5)
    alphabet = ["ft", "feet", "in", "units", "sue", "ways", "\\", "\\text{", "}", "{", "$", " ", "\n", "x", "2",
                ",", "=", "s", "square", "cm", "\\cm", "_", "é", "^\\circ", "\\;", "sqrt", "frac", "mbox", "a "]
    for _ in range(20000):
        t = _random_text(rng, alphabet, 14)
        assert lmeval_minerva.normalize_final_answer(t) == _lm_eval_normalize_final_answer(t), repr(t)


def test_minerva_answer_search_equals_the_regex() -> None:
    rng = random.Random(6)
    rx = re.compile(r"ab(.*?). cd.")
    for _ in range(20000):
        t = _random_text(rng, ["ab", "a", "b", " cd", " c", "d", ".", "\n", "x", " "], 14)
        m = rx.search(t)
        assert lmeval_minerva.wild_pair_search(t, "ab", " cd") == (m.group(1) if m else None), repr(t)
    scorer = lmeval.ExactMatchScorer(None)  # type: ignore[arg-type]
    assert scorer.extract("Final Answer: The final answer is $4$. I hope it is correct.") == "$4$"
    assert scorer.extract("Final Answer: The final answer is 7. ") == "7"  # the appended end completes it
    assert scorer.extract("Final Answer: The final answer is 7") is None  # as the regex: no ". " before it


def test_lmeval_normalisers_equal_lm_evals_regexes() -> None:
    rng = random.Random(4)
    alphabet = ["$", "\n", "\\text{", "\\textbf{", "\\overline{", "\\boxed{", "}", "{", "sqrt[", "]", "x", "2",
                "frac", "#### ", "#", ",", ".", " ", "é"]
    for _ in range(8000):
        t = _random_text(rng, alphabet, 12)
        assert lmeval.gsm8k_normalize(t) == _old_gsm8k_normalize(t), repr(t)
        assert _new_minerva_regexes(t) == _old_minerva_regexes(t), repr(t)


def test_extraction_results_on_ordinary_responses_are_unchanged() -> None:
    assert extract_answer("so \\boxed{\\frac{1}{2}} and \\boxed{3}", "math") == "\\frac{1}{2}, 3"
    assert extract_answer("\\boxed{\\boxed{4}}", "math") == "\\boxed{4}"
    assert extract_answer("\n\n  (B) because", "choice") == "B"
    assert extract_code("text\n```python\ndef f(x):\n    return x\n```\nmore") == ("def f(x):\n    return x", True)
    assert extract_code("```\n\n\n\n   def f(x): pass\n```", "f") == ("\n\n\n   def f(x): pass", True)
