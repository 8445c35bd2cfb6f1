"""lm-eval's minerva_math rules (lm_eval/tasks/minerva_math/utils.py, 0.4.13): Minerva's normalisation of a final
answer (Lewkowycz et al. 2022, appendix D) in linear time, and the answer a response gives. The scorer that applies
them is scoring/lmeval.py's ExactMatchScorer (docs/lm-eval.md)."""

from __future__ import annotations

import re

from reasoneval.errors import UserError
from reasoneval.scoring.maths.extract import last_boxed

# lm_eval/tasks/minerva_math/utils.py, get_unnormalized_answer
MINERVA_ANSWER = r"Final Answer: The final answer is(.*?). I hope it is correct."
MINERVA_END = "I hope it is correct."


# Minerva's normalisation (Lewkowycz et al. 2022, appendix D) as lm-eval 0.4.13 ships it.
SUBSTITUTIONS = [("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), (r"\ ", ""), (" ", ""), ("mbox", "text"),
                 (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}")]
REMOVED_EXPRESSIONS = [
    "square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units", "\\ldots", "sue",
    "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals", "edges",
    "students", "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2",
    "\\text{}^3", "\\text{\n}", "\\text{}", r"\mathrm{th}", r"^\circ", r"^{\circ}", r"\;", r",\!", "{,}", '"',
    "\\dots",
]

# lm-eval removes each alpha expression in turn with re.sub(rf"(?<!\\)\b{expr}\b", "", s); removing a whole
# word between non-word characters never makes another one match or stop matching, so one pass with all of
# them is the same (and a 1 MB answer takes one regex pass instead of 27).
_REMOVED_WORDS_RE = re.compile(r"(?<!\\)\b(?:" + "|".join(e for e in REMOVED_EXPRESSIONS if e.isalpha()) + r")\b")


def normalize_final_answer(final_answer: str) -> str:
    """lm_eval/tasks/minerva_math/utils.py normalize_final_answer, unchanged in behaviour."""
    final_answer = final_answer.split("=")[-1]
    final_answer = _REMOVED_WORDS_RE.sub("", final_answer)
    for before, after in SUBSTITUTIONS:
        final_answer = final_answer.replace(before, after)
    for expr in REMOVED_EXPRESSIONS:
        if expr.isalpha():
            if expr not in final_answer:  # (nothing to remove: skip a split of a long answer)
                continue
            segments = re.split(r"(\\[a-zA-Z]+)", final_answer)
            for i in range(0, len(segments), 2):
                segments[i] = segments[i].replace(expr, "")
            final_answer = "".join(segments)
        else:
            final_answer = final_answer.replace(expr, "")
    final_answer = _first_dollar_pair_per_line(final_answer)
    final_answer = _unwrap(final_answer, "\\text{")
    final_answer = _unwrap(final_answer, "\\textbf{")
    final_answer = _unwrap(final_answer, "\\overline{")
    final_answer = _unwrap(final_answer, "\\boxed{", greedy=True)
    final_answer = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", final_answer)
    final_answer = _brace_sqrt_index(final_answer)
    final_answer = re.sub(r"(sqrt)(?!\[)([^{])", "sqrt{\\2}", final_answer)
    final_answer = final_answer.replace("$", "")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", final_answer):
        final_answer = final_answer.replace(",", "")
    return final_answer


# lm-eval's normalize_final_answer uses regexes that retry a scan to the end of the line from every position
# (`(.*?)(\$)(.*?)(\$)(.*)` on a line without two $, `(\\text\{)(.*?)(\})` with no closing brace, ...):
# quadratic on a long answer, in the harness process. These give the same results in linear time
# (tests/scoring/test_pathological.py compares them with the regexes on random strings).

# Tried only at line starts (each line scanned once), where `(.*?)(\$)(.*?)(\$)(.*)` is retried from every position.
_DOLLAR_PAIR_LINE_RE = re.compile(r"^[^\n$]*\$([^\n$]*)\$[^\n]*", re.MULTILINE)


def _first_dollar_pair_per_line(s: str) -> str:
    r"""re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$", s): a line (`.` stops at "\n") holding two $ becomes
    "$" + the text between its first two $ + "$"."""
    return _DOLLAR_PAIR_LINE_RE.sub(r"$\1$", s) if s.count("$") >= 2 else s


def _unwrap(s: str, opener: str, *, greedy: bool = False) -> str:
    r"""re.sub(rf"({re.escape(opener)})(.*?)(\\}})", "\\2", s) (greedy: `(.*)`): `opener` ... the first (greedy:
    the last) "}" after it on its line becomes what is between. Linear: each line is scanned once."""
    out: list[str] = []
    pos = 0
    while True:
        i = s.find(opener, pos)
        if i < 0:
            break
        start = i + len(opener)
        eol = s.find("\n", start)
        end = eol if eol >= 0 else len(s)
        close = s.rfind("}", start, end) if greedy else s.find("}", start, end)
        if close < 0:  # no "}" on this line: no other opener on it matches either
            if eol < 0:
                break
            out.append(s[pos:eol])
            pos = eol
            continue
        out.append(s[pos:i])
        out.append(s[start:close])
        pos = close + 1
    out.append(s[pos:])
    return "".join(out)


def _brace_sqrt_index(s: str) -> str:
    r"""re.sub(r"(sqrt)(\[[^\]]*\])(\w)", "\\1\\2{\\3}", s): `sqrt[n]x` -> `sqrt[n]{x}`."""
    out: list[str] = []
    pos = 0
    while True:
        i = s.find("sqrt[", pos)
        if i < 0:
            break
        close = s.find("]", i + 5)
        if close < 0:  # no "]" after this one: none after the later ones either
            break
        if close + 1 < len(s) and _WORD_CHAR.match(s, close + 1):
            out.append(s[pos:close + 1])
            out.append("{" + s[close + 1] + "}")
            pos = close + 2
        else:  # every "sqrt[" before this "]" ends at it too, and fails the same way
            out.append(s[pos:close + 1])
            pos = close + 1
    out.append(s[pos:])
    return "".join(out)


_WORD_CHAR = re.compile(r"\w")


def wild_pair_search(text: str, prefix: str, suffix: str) -> str | None:
    r"""Group 1 of re.search(re.escape(prefix) + "(.*?)." + re.escape(suffix) + ".", text) (Minerva's answer
    pattern), in linear time: the regex rescans the rest of the line from every `prefix` on it. The first
    prefix of a line decides for the line (a later one's candidates are a subset of its)."""
    cursor = 0
    while True:
        p = text.find(prefix, cursor)
        if p < 0:
            return None
        start = p + len(prefix)
        line_end = text.find("\n", start)
        if line_end < 0:
            line_end = len(text)
        r = text.find(suffix, start + 1, line_end)
        if r >= 0 and r + len(suffix) < line_end:
            return text[start:r - 1]
        cursor = line_end + 1


def check_parse_latex_runtime() -> None:
    """sympy's parse_latex (the sympy step) runs only on antlr4-python3-runtime 4.11: say so before scoring, not
    as every pair quietly counted unequal."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("antlr4-python3-runtime")
    except PackageNotFoundError:
        found = "none"
    if not found.startswith("4.11"):
        raise UserError(f"lm-eval's minerva_math exact_match needs sympy's parse_latex, which needs "
                        f"antlr4-python3-runtime 4.11 (installed: {found}): pip install 'antlr4-python3-runtime>=4.11,<4.12'")


# lm-eval's minerva_math answer when the response has no "Final Answer: ..." sentence (get_unnormalized_answer).
MINERVA_INVALID = "[invalidanswer]"


def minerva_answer(text: str, pattern: re.Pattern[str] | None) -> str | None:
    """The unnormalised answer: Minerva's sentence (lm-eval appends "I hope it is correct." so that a response
    stopped right after the answer matches), another style's `pattern` (one group), or the last \\boxed{}
    (pattern None); None where there is none."""
    if pattern is None:
        return last_boxed(text)
    if pattern.pattern == MINERVA_ANSWER:
        found = wild_pair_search(text + MINERVA_END, "Final Answer: The final answer is", " I hope it is correct")
        return found.strip() if found is not None else None
    m = pattern.search(text + MINERVA_END)
    return m.group(1).strip() if m else None
