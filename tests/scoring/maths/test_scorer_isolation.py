"""Issue 41.9: a verdict never depends on what a grading worker graded before. reasoneval's math rule (its own
numeric comparison, percent-aware) and lm-eval's `math_verify` metric (math-verify exactly as lm-eval runs it) are
graded by the same workers; neither may change the other's verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from reasoneval.scoring.maths.pool import GradingPool

# MATH test/prealgebra/1233: the solution ends "decreased by $\boxed{10}$ percent"; the response writes 10.0. lm-eval
# 0.4.13's math_verify gives 0 (math-verify reads the gold as 10% = 1/10); reasoneval's rule is percent-aware.
SOLUTION = r"The price went from $\$50$ to $\$45$, so it decreased by $\boxed{10}$ percent."
RESPONSE = "The final answer is $10.0$"
PROBES = [  # (solution, response) pairs where the two numeric rules differ, and some where they agree
    (SOLUTION, RESPONSE),
    (r"So the answer is $\boxed{25}$ percent.", "The final answer is $25$"),
    (r"The answer is $\boxed{50\%}$.", "The final answer is $0.5$"),
    (r"Thus $x = \boxed{\frac{1}{3}}$.", "The final answer is $0.333$"),
    (r"Thus $x = \boxed{\frac{1}{2}}$.", "The final answer is $0.5$"),
    (r"It is $\boxed{3}$.", "The final answer is $3$"),
]
OURS = [("verify", ("10", "10\\%", None, 2000)), ("verify", ("0.333", "\\frac{1}{3}", None, 2000)),
        ("verify", ("10.0", "10", None, 2000)), ("verify", ("25", "25\\%", None, 2000))]


def _lmeval(pool: GradingPool) -> list[Any]:
    out = pool.run_jobs([("lmeval_math_verify", pair) for pair in PROBES])
    assert all(status == "ok" for status, _ in out), out
    return [v for _, v in out]


def _ours(pool: GradingPool) -> list[Any]:
    out = pool.run_jobs(OURS)
    assert all(status == "ok" for status, _ in out), out
    return [v for _, v in out]


@pytest.fixture(scope="module")
def fresh() -> tuple[list[Any], list[Any]]:
    """Each rule's verdicts in a worker that graded nothing before."""
    with GradingPool(workers=1) as pool:
        lmeval = _lmeval(pool)
    with GradingPool(workers=1) as pool:
        ours = _ours(pool)
    return lmeval, ours


def test_lmeval_math_verify_is_the_same_before_and_after_our_rule_ran_in_the_worker(fresh: Any) -> None:
    lmeval, ours = fresh
    # lm-eval's verdict on the response: 0, as lm-eval gives it (it was 1 in every worker: the worker's
    # warm-up ran our rule, which replaced math-verify's for good); reasoneval's own rule on the answers: 1.
    assert lmeval[0] is False and ours[2] is True
    with GradingPool(workers=1) as pool:
        assert _lmeval(pool) == lmeval
        assert _ours(pool) == ours
        assert _lmeval(pool) == lmeval  # after our rule ran in this very worker
        assert _ours(pool) == ours


def test_our_rule_is_the_same_whichever_ran_first(fresh: Any) -> None:
    lmeval, ours = fresh
    with GradingPool(workers=1) as pool:
        assert _ours(pool) == ours
        assert _lmeval(pool) == lmeval
        assert _ours(pool) == ours  # after lm-eval's job ran in this worker
