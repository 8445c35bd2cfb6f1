"""Scorers: how a task's responses are scored, one module per scorer, registered in SCORERS.

Entries: `math` and `choice` (scoring/math.py); lm-eval's `strict_match`, `flexible_extract` and
`exact_match`, `math_verify` (scoring/lmeval.py), reported beside a task's own grade (TaskScoring.extra); `code`
(scoring/code.py, HumanEval/MBPP in the sandbox) and `ifeval` (scoring/ifeval.py). A new scorer is a module that registers a factory
`(context, **settings) -> Scorer` and is imported here. See docs/architecture.md.
"""

from __future__ import annotations

from . import code as _code  # noqa: F401  (registers code)
from . import ifeval as _ifeval  # noqa: F401  (registers ifeval)
from . import lmeval as _lmeval  # noqa: F401  (registers strict_match, flexible_extract, exact_match, math_verify)
from . import math as _math  # noqa: F401  (registers math, choice)
from .base import (
    FROM_PROMPT_STYLE,
    SCORERS,
    AnswerClusterer,
    Score,
    Scorer,
    ScoringContext,
    TaskScoring,
    cluster,
    cluster_by_text,
    create_scorer,
)

__all__ = ["FROM_PROMPT_STYLE", "SCORERS", "AnswerClusterer", "Score", "Scorer", "ScoringContext", "TaskScoring", "cluster",
           "cluster_by_text", "create_scorer"]
