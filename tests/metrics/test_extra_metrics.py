"""Scorer-specific figures computed from the samples' named values (the IFEval instruction-level hook)."""

from __future__ import annotations

import math

import pytest

from reasoneval.metrics import ProblemOutcome, TaskMetrics, task_metrics, value_metrics


def _o(key: str, values: list[dict[str, float]]) -> ProblemOutcome:
    correct = [v.get("prompt_strict", 0.0) == 1.0 for v in values]
    return ProblemOutcome(task="t", problem_key=key, correct=correct, classes=[None] * len(values),
                          correct_classes=frozenset(), completion_tokens=[None] * len(values),
                          finish_reasons=[None] * len(values), values=values)


def test_means_and_ratios_with_cluster_standard_errors() -> None:
    outs = [
        _o("a", [{"prompt_strict": 1.0, "inst.num": 2.0, "inst.den": 2.0}, {"prompt_strict": 0.0, "inst.num": 1.0, "inst.den": 2.0}]),
        _o("b", [{"prompt_strict": 0.0, "inst.num": 0.0, "inst.den": 1.0}, {"prompt_strict": 0.0, "inst.num": 0.0, "inst.den": 1.0}]),
        _o("c", [{"prompt_strict": 1.0, "inst.num": 3.0, "inst.den": 3.0}, {"prompt_strict": 1.0, "inst.num": 3.0, "inst.den": 3.0}]),
    ]
    ex = value_metrics(outs)
    assert list(ex) == ["prompt_strict", "inst"]
    # per-problem means 0.5, 0, 1 -> mean 0.5, SE = sd/sqrt(3)
    assert ex["prompt_strict"].mean == pytest.approx(0.5)
    assert ex["prompt_strict"].stderr == pytest.approx(0.5 / math.sqrt(3))
    # instructions followed / instructions over all samples: (3 + 0 + 6) / (4 + 2 + 6)
    r = 9 / 12
    assert ex["inst"].mean == pytest.approx(r)
    x, y = [3, 0, 6], [4, 2, 6]
    se = math.sqrt(3 / 2 * sum((xi - r * yi) ** 2 for xi, yi in zip(x, y))) / 12
    assert ex["inst"].stderr == pytest.approx(se)


def test_task_metrics_carry_extra_and_it_round_trips_through_json() -> None:
    outs = [_o("a", [{"prompt_strict": 1.0, "inst.num": 1.0, "inst.den": 1.0}]),
            _o("b", [{"prompt_strict": 0.0, "inst.num": 1.0, "inst.den": 2.0}])]
    m = task_metrics(outs, 1)
    assert m.mean == pytest.approx(0.5) and m.extra["inst"].mean == pytest.approx(2 / 3)
    assert TaskMetrics.from_json_dict(m.to_json_dict()) == m


def test_scorers_without_named_values_get_no_extra() -> None:
    o = ProblemOutcome(task="t", problem_key="k", correct=[True], classes=[0], correct_classes=frozenset({0}),
                       completion_tokens=[5], finish_reasons=["stop"])
    m = task_metrics([o], 1)
    assert m.extra == {} and "extra" not in m.to_json_dict()
