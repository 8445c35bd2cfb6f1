"""lm-evaluation-harness's extractions, to report numbers comparable with it (docs/lm-eval.md).

`strict_match` and `flexible_extract` are lm-eval's gsm8k filters followed by its `exact_match` metric
(lm_eval/tasks/gsm8k/gsm8k.yaml, 0.4.13): a regex picks a string out of the response, then the string
and the reference are compared after deleting ",", "$", everything up to "#### " and one trailing ".",
ignoring case.

`exact_match` is lm-eval's minerva_math answer string match (lm_eval/tasks/minerva_math/utils.py):
the answer after "Final Answer: The final answer is" (or, for styles without that line, the last
\\boxed{}), normalised by Minerva's `normalize_final_answer` (Lewkowycz et al. 2022, appendix D) on both
sides, then compared as strings. lm-eval additionally tries sympy's `parse_latex` on the two strings;
that step is not done here (model output is never parsed by sympy outside the grading workers, and
the symbolic comparison is what reasoneval's own `math` grade is for), so this figure is the string
match alone.

`math_verify` is lm-eval's minerva_math `math_verify` column: `verify(gold=parse(solution),
target=parse(response))` with math-verify's defaults, the reference solution (where the task has one;
else `\\boxed{answer}`) against the whole response. It parses model output with sympy, so it runs in
the grading workers (time- and memory-bounded processes), never in-process.

The other scorers run in-process: they apply fixed regexes and string replacements to the response and
never evaluate it. They are "extra" scorers of a task (TaskScoring.extra): their accuracy is reported
beside the primary grade.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import Score, ScoringContext
from reasoneval.scoring.maths.extract import last_boxed
from reasoneval.scoring.maths.scorer import grading_pool

VERSION = "lmeval-0.4.13-1"
# lm_eval/tasks/gsm8k/gsm8k.yaml
GSM8K_STRICT = r"#### (\-?[0-9\.\,]+)"
GSM8K_FLEXIBLE = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"
GSM8K_IGNORE = (",", r"\$", r"(?s).*#### ", r"\.$")
# lm_eval/tasks/minerva_math/utils.py, get_unnormalized_answer
MINERVA_ANSWER = r"Final Answer: The final answer is(.*?). I hope it is correct."
MINERVA_END = "I hope it is correct."
# lm-eval's names for a task's per-subject rows: its group, and the subtask of each MATH subject
# (lm_eval/tasks/benchmarks/minerva_math.yaml, one subtask per EleutherAI/hendrycks_math config).
LMEVAL_GROUPS = {"hendrycks_math": "minerva_math"}
MATH_SUBTASKS = {"Algebra": "minerva_math_algebra", "Counting & Probability": "minerva_math_counting_and_prob",
                 "Geometry": "minerva_math_geometry", "Intermediate Algebra": "minerva_math_intermediate_algebra",
                 "Number Theory": "minerva_math_num_theory", "Prealgebra": "minerva_math_prealgebra",
                 "Precalculus": "minerva_math_precalc"}


def _compile(pattern: str, scorer: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise UserError(f"{scorer} scorer: pattern {pattern!r} is not a valid regex ({e})") from None


def regex_filter(text: str, pattern: re.Pattern[str], group_select: int = 0) -> str | None:
    """lm-eval's RegexFilter: all matches, the `group_select`-th; of a match with several groups, the
    first non-empty one; stripped. None where nothing matches (lm-eval's "[invalid]")."""
    matches = pattern.findall(text)
    if not matches:
        return None
    try:
        m = matches[group_select]
    except IndexError:
        return None
    if isinstance(m, tuple):
        m = next((g for g in m if g), "")
        if not m:
            return None
    return str(m).strip()


def gsm8k_normalize(s: str) -> str:
    """lm-eval gsm8k exact_match's view of a string: regexes_to_ignore (GSM8K_IGNORE) deleted, lower case.

    Same result as re.sub of each pattern in turn; `(?s).*#### ` is done as "cut up to the last '#### '",
    which is what it matches (from the start, greedy), because the regex retries `.*` from every position
    when there is no '#### ': quadratic on a long answer."""
    s = s.replace(",", "").replace("$", "")
    cut = s.rfind("#### ")
    if cut >= 0:
        s = s[cut + len("#### "):]
    return re.sub(r"\.$", "", s).lower()


def string_match_scores(problems: Sequence[Problem], samples: Sequence[SampleRecord],
                        extract: Callable[[str], str | None], normalize: Callable[[str], str]) -> list[Score]:
    """lm-eval's exact_match: the extracted answer, normalised, equal to the normalised reference."""
    out = []
    for p, s in zip(problems, samples):
        answer = extract(s.text or "")
        correct = answer is not None and normalize(answer) == normalize(p.answer)
        out.append(Score(correct=correct, value=correct, answer=answer,
                         status="ok" if answer is not None else "no_answer"))
    return out


# A `pattern` setting of this value means "the last \\boxed{}" (the answer format of boxed styles).
BOXED = "boxed"


class _GsmScorer:
    name = ""
    version = VERSION
    group_select = 0
    default_pattern = GSM8K_STRICT

    def __init__(self, context: ScoringContext, pattern: str | None = None) -> None:
        self.boxed = pattern == BOXED
        self.pattern = _compile(pattern if pattern and not self.boxed else self.default_pattern, self.name)

    def extract(self, text: str) -> str | None:
        if self.boxed:
            return last_boxed(text)
        return regex_filter(text, self.pattern, self.group_select)

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        return string_match_scores(problems, samples, self.extract, gsm8k_normalize)


class StrictMatchScorer(_GsmScorer):
    """lm-eval's gsm8k `strict-match`: the first answer in the prompt style's format (`pattern`, one
    group; default "#### N"), compared as lm-eval's exact_match does."""

    name = "strict_match"
    default_pattern = GSM8K_STRICT


class FlexibleExtractScorer(_GsmScorer):
    """lm-eval's gsm8k `flexible-extract`: the last number-like run in the response (no settings)."""

    name = "flexible_extract"
    default_pattern = GSM8K_FLEXIBLE
    group_select = -1

    def __init__(self, context: ScoringContext) -> None:
        super().__init__(context)


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


class ExactMatchScorer:
    """lm-eval's minerva_math `exact_match` (string part): the answer in the style's format (`pattern`,
    default Minerva's "Final Answer: The final answer is X. I hope it is correct."), or with `pattern`
    "boxed" the last \\boxed{} (hendrycks_math's extraction), Minerva-normalised, equal to the normalised reference as a string."""

    name = "exact_match"
    version = VERSION

    def __init__(self, context: ScoringContext, pattern: str | None = None) -> None:
        self.boxed = pattern == BOXED
        self.pattern = None if self.boxed else _compile(pattern or MINERVA_ANSWER, self.name)

    def extract(self, text: str) -> str | None:
        if self.pattern is None:
            return last_boxed(text)
        # lm-eval appends the closing sentence so that a response stopped right after the answer matches.
        if self.pattern.pattern == MINERVA_ANSWER:
            found = wild_pair_search(text + MINERVA_END, "Final Answer: The final answer is", " I hope it is correct")
            return found.strip() if found is not None else None
        m = self.pattern.search(text + MINERVA_END)
        return m.group(1).strip() if m else None

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        out = string_match_scores(problems, samples, self.extract, normalize_final_answer)
        # lm-eval's is_equiv counts identical strings only when non-empty (an empty one goes to sympy,
        # which cannot parse it).
        return [Score(False, False, s.answer, s.status) if s.correct and not normalize_final_answer(s.answer or "")
                else s for s in out]


def reference_solution(problem: Problem) -> str:
    """What lm-eval's math_verify parses as the gold: the reference solution, else the answer boxed."""
    solution = problem.metadata.get("solution")
    return str(solution) if solution else f"\\boxed{{{problem.answer}}}"


class MathVerifyScorer:
    """lm-eval's minerva_math `math_verify`: math-verify's parse/verify of the reference solution against the
    whole response, in the grading workers (a timeout or a parser error is a wrong answer, as in lm-eval)."""

    name = "math_verify"
    version = VERSION

    def __init__(self, context: ScoringContext) -> None:
        self.context = context

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        jobs = [("lmeval_math_verify", (reference_solution(p), s.text or "")) for p, s in zip(problems, samples)]
        out = []
        for status, value in grading_pool(self.context).run_jobs(jobs):
            correct = status == "ok" and value is True
            out.append(Score(correct=correct, value=correct, answer=None, status=status))
        return out
