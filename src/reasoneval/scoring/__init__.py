"""Scorers: how a task's responses are scored, one module per scorer, registered in SCORERS.

"""

from __future__ import annotations

from reasoneval.scoring import lmeval as _lmeval  # noqa: F401  (registers strict_match, flexible_extract, exact_match, math_verify)
from reasoneval.scoring.base import (
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
from reasoneval.scoring.code import scorer as _code  # noqa: F401  (registers code)
from reasoneval.scoring.ifeval import scorer as _ifeval  # noqa: F401  (registers ifeval)
from reasoneval.scoring.math import scorer as _math  # noqa: F401  (registers math, choice)

__all__ = ["FROM_PROMPT_STYLE", "SCORERS", "AnswerClusterer", "Score", "Scorer", "ScoringContext", "TaskScoring", "cluster",
           "cluster_by_text", "create_scorer"]
