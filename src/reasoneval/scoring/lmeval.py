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
from reasoneval.scoring.lmeval_hendrycks import HENDRYCKS, hendrycks_answer, hendrycks_is_equiv, hendrycks_reference
from reasoneval.scoring.lmeval_minerva import (
    MINERVA_ANSWER,
    MINERVA_INVALID,
    check_parse_latex_runtime,
    minerva_answer,
    normalize_final_answer,
)
from reasoneval.scoring.maths.extract import last_boxed
from reasoneval.scoring.maths.scorer import grading_pool

VERSION = "lmeval-0.4.13-1"
# lm_eval/tasks/gsm8k/gsm8k.yaml
GSM8K_STRICT = r"#### (\-?[0-9\.\,]+)"
GSM8K_FLEXIBLE = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"
GSM8K_IGNORE = (",", r"\$", r"(?s).*#### ", r"\.$")
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
