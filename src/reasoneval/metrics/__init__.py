"""Metrics: pure functions of graded samples (pass@k, maj@k, mean with honest error bars, lengths).

The formulas and why they are what they are: docs/statistics.md.
"""

from reasoneval.metrics.estimators import mean_stderr_ci, stderr_resample
from reasoneval.metrics.majority import maj_at_k, maj_at_k_method, maj_ks
from reasoneval.metrics.passk import pass_at_k, pass_at_k_curve, pass_at_k_matrix
from reasoneval.metrics.summary import (
    GroupMetrics,
    ProblemOutcome,
    SEAtK,
    TaskMetrics,
    TokenStats,
    aggregate_metrics,
    breakdown,
    defined_k,
    extra_metrics,
    se_vs_k,
    task_metrics,
    value_metrics,
)

__all__ = [
    "GroupMetrics",
    "ProblemOutcome",
    "SEAtK",
    "TaskMetrics",
    "TokenStats",
    "aggregate_metrics",
    "breakdown",
    "defined_k",
    "extra_metrics",
    "maj_at_k",
    "maj_at_k_method",
    "maj_ks",
    "mean_stderr_ci",
    "pass_at_k",
    "pass_at_k_curve",
    "pass_at_k_matrix",
    "se_vs_k",
    "stderr_resample",
    "task_metrics",
    "value_metrics",
]
