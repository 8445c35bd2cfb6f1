"""The grader: answer extraction, equivalence, and a parallel, time-bounded, cached batch API.

Rules: docs/grading.md. Model output is only ever parsed as mathematics inside worker processes.
"""

from __future__ import annotations

import atexit
import threading

from reasoneval.scoring.maths.extract import extract_answer
from reasoneval.scoring.maths.normalize import DEFAULT_REL_TOL
from reasoneval.scoring.maths.pool import (
    DEFAULT_MAX_SYMBOLIC_CHARS,
    GRADER_VERSION,
    Grade,
    GradeItem,
    GradingPool,
    prepare_reference,
)

__all__ = [
    "extract_answer", "is_equivalent", "grade", "Grade", "GradeItem", "GradingPool", "GRADER_VERSION",
    "DEFAULT_REL_TOL", "DEFAULT_MAX_SYMBOLIC_CHARS",
]

# Per-task numeric tolerance lives with the task (TaskSpec.rel_tol; minerva_math uses 1e-2, see
# docs/grading.md); DEFAULT_REL_TOL (1e-6) applies when a task sets none.

_default_pool: GradingPool | None = None
_default_lock = threading.Lock()


def _pool() -> GradingPool:
    """A shared single-worker pool for the one-off functions below (created on first use)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None:
            _default_pool = GradingPool(workers=1)
            atexit.register(_default_pool.close)
        return _default_pool


def _side(s: str, kind: str) -> str:
    return prepare_reference(s, kind) if kind == "math" else s


def is_equivalent(pred: str, reference: str, kind: str = "math", rel_tol: float | None = None,
                  approx: str | None = None, units: str | None = None) -> bool:
    """Whether two answers are equivalent; a side that still contains \\boxed{} is extracted first.
    approx / units: the per-task policy (docs/grading.md, "Policy"); None = the default."""
    eq, _ = _pool().equivalent_many([(_side(pred, kind), _side(reference, kind), kind, rel_tol, approx, units)])[0]
    return eq


def grade(
    response: str,
    reference: str,
    kind: str = "math",
    finish_reason: str | None = None,
    rel_tol: float | None = None,
    approx: str | None = None,
    units: str | None = None,
) -> Grade:
    """Grade one response; for many, use GradingPool.grade_many (parallel, deduplicated, cached)."""
    return _pool().grade_many([GradeItem(response, reference, kind, finish_reason, rel_tol, approx, units)])[0]
