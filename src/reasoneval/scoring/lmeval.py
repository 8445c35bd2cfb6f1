"""lm-evaluation-harness's extractions, to report numbers comparable with it (docs/lm-eval.md).

`strict_match` and `flexible_extract` are lm-eval's gsm8k filters followed by its `exact_match` metric
(lm_eval/tasks/gsm8k/gsm8k.yaml, 0.4.13): a regex picks a string out of the response, then the string
and the reference are compared after deleting ",", "$", everything up to "#### " and one trailing ".",
ignoring case.

`exact_match` is lm-eval's minerva_math `is_equiv` (lm_eval/tasks/minerva_math/utils.py): the answer
after "Final Answer: The final answer is" (or, for styles without that line, the last \\boxed{}),
normalised by Minerva's `normalize_final_answer` (Lewkowycz et al. 2022, appendix D) on both sides; equal
when the two strings are identical and non-empty, else (with `sympy`, as lm-eval) when sympy's
`parse_latex` reads both and `simplify(a - b) == 0` within 5 s. That sympy step parses model output, so it
runs in the grading workers (`lmeval_minerva_sympy`: time- and memory-bounded processes), never here.
With the `hendrycks_math` prompt style (`pattern` HENDRYCKS) it is lm-eval's `hendrycks_math` task
instead (lm_eval/tasks/hendrycks_math/utils.py `process_results`): the text between the first and the last
`$` of the response (the whole response with fewer than two), compared by Hendrycks' `is_equiv`
(`strip_string` on both sides, then string equality) with `remove_boxed(last_boxed_only_string(solution))`.

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
from reasoneval.scoring.base import Score, ScoringContext, TaskScoring
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
# lm-eval's names for a task's per-subject rows: its group (minerva_math with Minerva's prompt, hendrycks_math with
# that style) and one subtask per MATH subject (EleutherAI/hendrycks_math's configs), `<group>_<suffix>`.
LMEVAL_GROUP_TASKS = ("hendrycks_math",)
MATH_SUBJECT_SUFFIXES = {"Algebra": "algebra", "Counting & Probability": "counting_and_prob", "Geometry": "geometry",
                         "Intermediate Algebra": "intermediate_algebra", "Number Theory": "num_theory",
                         "Prealgebra": "prealgebra", "Precalculus": "precalc"}


def lmeval_group(task: str, scoring: TaskScoring | None) -> str | None:
    """lm-eval's group name for a task it reports per subject, under the style the task was scored with (its
    exact_match setting records it); None for other tasks."""
    if task not in LMEVAL_GROUP_TASKS:
        return None
    exact = scoring.extra.get("exact_match") if scoring is not None else None
    return HENDRYCKS if exact is not None and exact.settings.get("pattern") == HENDRYCKS else "minerva_math"


def lmeval_subtask(group: str, subject: str) -> str:
    """`minerva_math_counting_and_prob` for ("minerva_math", "Counting & Probability")."""
    return f"{group}_{MATH_SUBJECT_SUFFIXES.get(subject, subject)}"


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


class ExactMatchScorer:
    """lm-eval's `exact_match` for MATH: minerva_math's by default (the answer in the style's format, `pattern`,
    default Minerva's "Final Answer: The final answer is X. I hope it is correct."; with `pattern` "boxed" the
    last \\boxed{}; both sides Minerva-normalised; identical strings, then with `sympy` lm-eval's sympy step in
    the grading workers), or with `pattern` HENDRYCKS lm-eval's hendrycks_math `process_results`.

    `sympy` defaults to False so that a run scored before the step existed (its config.json records no
    `sympy`) reports what it reported; the shipped tasks set it (tasks/catalog.py)."""

    name = "exact_match"
    version = VERSION  # with sympy, each instance's is VERSION+sympy

    def __init__(self, context: ScoringContext, pattern: str | None = None, sympy: bool = False) -> None:
        self.context = context
        self.hendrycks = pattern == HENDRYCKS
        self.boxed = pattern == BOXED
        self.pattern = None if self.boxed or self.hendrycks else _compile(pattern or MINERVA_ANSWER, self.name)
        self.sympy = sympy and not self.hendrycks
        self.version = VERSION + ("+sympy" if self.sympy else "")
        if self.sympy:
            check_parse_latex_runtime()

    def extract(self, text: str) -> str | None:
        if self.hendrycks:
            return hendrycks_answer(text)
        return minerva_answer(text, self.pattern)

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        if self.hendrycks:
            out = []
            for p, s in zip(problems, samples):
                answer = hendrycks_answer(s.text or "")
                correct = hendrycks_is_equiv(answer, hendrycks_reference(p))
                out.append(Score(correct=correct, value=correct, answer=answer, status="ok"))
            return out
        answers = [self.extract(s.text or "") for s in samples]
        normalized = [(normalize_final_answer(MINERVA_INVALID if a is None else a), normalize_final_answer(p.answer))
                      for a, p in zip(answers, problems)]
        # lm-eval's is_equiv: identical non-empty strings are equal; any other pair goes to sympy.
        equal = [bool(x) and x == y for x, y in normalized]
        todo = [i for i, ok in enumerate(equal) if not ok] if self.sympy else []
        statuses = ["ok"] * len(samples)
        if todo:
            jobs = [("lmeval_minerva_sympy", normalized[i]) for i in todo]
            for i, (status, value) in zip(todo, grading_pool(self.context).run_jobs(jobs)):
                # lm-eval counts a timeout or a failure of sympy as not equal; so does this.
                equal[i] = status == "ok" and value is True
                if status == "timeout":
                    statuses[i] = "timeout"
        return [Score(correct=ok, value=ok, answer=a, status=st if a is not None else "no_answer")
                for ok, a, st in zip(equal, answers, statuses)]


# lm_eval/tasks/hendrycks_math/utils.py (0.4.13): the `hendrycks_math` task's answer and Hendrycks' is_equiv.
# A `pattern` of this value (the `hendrycks_math` prompt style's answer format) selects it.
HENDRYCKS = "hendrycks_math"


def lmeval_last_boxed_only_string(string: str) -> str | None:
    """last_boxed_only_string of lm-eval's minerva_math and hendrycks_math utils.py (the same code), unchanged in
    behaviour: the last `\\boxed{...}` (or `\\fbox{...}`) with its braces, or the text after a `\\boxed ` up to the
    next `$`."""
    idx = string.rfind("\\boxed")
    if "\\boxed " in string:
        return "\\boxed " + string.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    depth = 0
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
        if string[i] == "}":
            depth -= 1
            if depth == 0:
                return string[idx:i + 1]
    return None


def lmeval_remove_boxed(s: str) -> str | None:
    """remove_boxed of the same files; None where lm-eval's asserts would fail (`\\fbox`)."""
    if "\\boxed " in s:
        return s[len("\\boxed "):] if s.startswith("\\boxed ") else None
    if s.startswith("\\boxed{") and s.endswith("}"):
        return s[len("\\boxed{"):-1]
    return None


def lmeval_boxed_answer(solution: str) -> str | None:
    """remove_boxed(last_boxed_only_string(solution)): the reference both MATH tasks of lm-eval compare with,
    and hendrycks_math's few-shot target; None where lm-eval would fail on the row."""
    boxed = lmeval_last_boxed_only_string(solution)
    return lmeval_remove_boxed(boxed) if boxed is not None else None


def hendrycks_reference(problem: Problem) -> str:
    """What lm-eval's hendrycks_math compares a response with: the boxed answer of the problem's solution where
    the task has solutions (the Hub's MATH), else its answer."""
    solution = problem.metadata.get("solution")
    found = lmeval_boxed_answer(str(solution)) if solution else None
    return problem.answer if found is None else found


def hendrycks_answer(text: str) -> str:
    """process_results' answer: the text between the first and the last `$`, or all of it with fewer than two."""
    first, last = text.find("$"), text.rfind("$")
    return text if first == last else text[first + 1:last]


def hendrycks_is_equiv(str1: str, str2: str) -> bool:
    """Hendrycks' is_equiv: strip_string on both, then equality; where strip_string raises (as it does on some
    strings: `a/b` with non-integers, a trailing `\\sqrt`, two `\\text{ `), the strings themselves."""
    try:
        return _strip_string(str1) == _strip_string(str2)
    except Exception:
        return str1 == str2


def _fix_fracs(string: str) -> str:
    substrs = string.split("\\frac")
    new_str = substrs[0]
    if len(substrs) > 1:
        for substr in substrs[1:]:
            new_str += "\\frac"
            if substr[0] == "{":  # (an empty one raises IndexError, as in lm-eval: is_equiv falls back)
                new_str += substr
            else:
                if len(substr) < 2:
                    return string
                a, b = substr[0], substr[1]
                if b != "{":
                    new_str += "{" + a + "}{" + b + "}" + substr[2:]
                else:
                    new_str += "{" + a + "}" + b + substr[2:]
    return new_str


def _fix_a_slash_b(string: str) -> str:
    if len(string.split("/")) != 2:
        return string
    a_text, b_text = string.split("/")
    a, b = int(a_text), int(b_text)  # a ValueError propagates, as in lm-eval (only AssertionError is caught)
    if string != f"{a}/{b}":
        return string
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


def _remove_right_units(string: str) -> str:
    if "\\text{ " in string:
        splits = string.split("\\text{ ")
        if len(splits) != 2:
            raise ValueError("more than one \\text{ ")  # lm-eval's assert
        return splits[0]
    return string


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    new_string = splits[0]
    for split in splits[1:]:
        if split[0] != "{":  # (an empty one raises IndexError, as in lm-eval)
            new_string += "\\sqrt{" + split[0] + "}" + split[1:]
        else:
            new_string += "\\sqrt" + split
    return new_string


def _strip_string(string: str) -> str:
    """Hendrycks' strip_string, step for step (each step a replace or a split: linear in the length)."""
    string = string.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    string = string.replace("tfrac", "frac").replace("dfrac", "frac")
    string = string.replace("\\left", "").replace("\\right", "")
    string = string.replace("^{\\circ}", "").replace("^\\circ", "")
    string = string.replace("\\$", "")
    string = _remove_right_units(string)
    string = string.replace("\\%", "")
    string = string.replace(" .", " 0.").replace("{.", "{0.")
    if len(string) == 0:
        return string
    if string[0] == ".":
        string = "0" + string
    if len(string.split("=")) == 2 and len(string.split("=")[0]) <= 2:
        string = string.split("=")[1]
    string = _fix_sqrt(string)
    string = string.replace(" ", "")
    string = _fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    return _fix_a_slash_b(string)


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
