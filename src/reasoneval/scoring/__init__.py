"""Scorers: how a task's responses are scored, one module per scorer, registered in SCORERS.

Importing this package imports no scorer: SCORERS holds each shipped scorer as a lazy "module:attr"
reference (scoring/base.py), imported on first use, so a scorer module can import from here.
"""

from __future__ import annotations

from reasoneval.scoring.base import (
    FROM_PROMPT_STYLE,
    SCORERS,
    AnswerClusterer,
    Score,
    Scorer,
    ScoringContext,
    TaskScoring,
    check_scorers,
    cluster,
    cluster_by_text,
    create_scorer,
)

__all__ = ["FROM_PROMPT_STYLE", "SCORERS", "AnswerClusterer", "Score", "Scorer", "ScoringContext", "TaskScoring", "check_scorers",
           "cluster", "cluster_by_text", "create_scorer"]
