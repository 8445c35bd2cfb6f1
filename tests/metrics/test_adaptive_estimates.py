"""metrics.adaptive_estimates: the estimates of an adaptive run's tasks live with the other estimates (metrics), as
pure functions of scored outcomes and config.adaptive's settings."""

from __future__ import annotations

import pytest

from reasoneval.metrics import ProblemOutcome
from reasoneval.metrics.adaptive_estimates import DESIGN, adaptive_summary, plan_se_of, with_estimates
from reasoneval.results.adaptive import ADAPTIVE_DESIGN


def test_the_design_is_the_one_config_json_records() -> None:
    assert DESIGN == ADAPTIVE_DESIGN


def _outcome(key: str, verdicts: list[bool]) -> ProblemOutcome:
    n = len(verdicts)
    return ProblemOutcome(task="t", problem_key=key, correct=verdicts, classes=[None] * n, correct_classes=frozenset(),
                          completion_tokens=[None] * n, finish_reasons=["stop"] * n, indices=list(range(n)))


def test_a_two_stage_runs_estimates_and_summary() -> None:
    settings = {"design": DESIGN, "target_se": 10.0, "max_n": 16, "stopped": {"t": "target"}}
    outcomes = {"t": [_outcome("a", [True, True, False, True]), _outcome("b", [False, False, False, False]),
                      _outcome("c", [True, True, True, True])]}
    estimated = with_estimates(outcomes, settings)
    assert all(o.estimate is not None and o.estimate_var is not None for o in estimated["t"])
    assert [o.estimate for o in estimated["t"]][1] == pytest.approx(0.0, abs=0.2)
    summary = adaptive_summary(estimated["t"], settings, "t", plan_se_of(estimated, settings).get("t"))
    assert summary["samples"] == 12 and summary["stopped"] == "target" and summary["n_histogram"] == {"4": 3}
    assert summary["se"] is not None and summary["met"] == (summary["se"] <= 10.0 + 1e-9)


def test_a_run_before_the_design_reports_with_the_cross_fit_flag() -> None:
    estimated = with_estimates({"t": [_outcome("a", [True, False])]}, {"target_se": 5.0})
    assert estimated["t"][0].crossfit and estimated["t"][0].estimate is None
    assert plan_se_of(estimated, {"target_se": 5.0}) == {}
