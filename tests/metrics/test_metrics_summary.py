"""task_metrics / aggregate_metrics / breakdown / se_vs_k: shape, hand-computed values, edge cases."""

from __future__ import annotations

import json
import math
import time
from typing import Sequence

import numpy as np
import pytest

from reasoneval.errors import UserError
from reasoneval.metrics import (
    GroupMetrics,
    ProblemOutcome,
    TaskMetrics,
    aggregate_metrics,
    breakdown,
    maj_at_k,
    pass_at_k,
    se_vs_k,
    task_metrics,
)

KEYS = {
    "num_problems", "num_samples", "num_missing", "mean", "stderr", "ci95", "stderr_resample",
    "pass_at_k", "pass_at_k_stderr", "maj_at_k", "tokens", "truncation_rate", "no_answer_rate",
}


def outcome(
    key: str,
    classes: Sequence[int | None],
    correct_classes: set[int] = frozenset({0}),  # type: ignore[assignment]
    tokens: Sequence[int | None] | None = None,
    finish: Sequence[str | None] | None = None,
    task: str = "t",
    missing: int = 0,
) -> ProblemOutcome:
    n = len(classes)
    return ProblemOutcome(
        task=task,
        problem_key=key,
        correct=[c is not None and c in correct_classes for c in classes],
        classes=list(classes),
        correct_classes=frozenset(correct_classes),
        completion_tokens=list(tokens) if tokens is not None else [100] * n,
        finish_reasons=list(finish) if finish is not None else ["stop"] * n,
        num_missing=missing,
    )


def no_nan(obj: object) -> None:
    if isinstance(obj, float):
        assert math.isfinite(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            no_nan(v)
    elif isinstance(obj, list):
        for v in obj:
            no_nan(v)
    else:
        assert obj is None or isinstance(obj, (int, str)), type(obj)


def test_hand_computed_task() -> None:
    # Three problems, K = 4. Accuracies 1, 1/2, 0.
    outs = [
        outcome("a", [0, 0, 0, 0], tokens=[10, 20, 30, 40]),
        outcome("b", [0, 1, 0, None], tokens=[50, 60, None, 80], finish=["stop", "stop", "stop", "length"]),
        outcome("c", [1, 1, 2, None], tokens=[90, 100, 110, 120], finish=["length", "stop", "stop", "length"]),
    ]
    m = task_metrics(outs, 4).to_json_dict()
    assert set(m) == KEYS
    json.dumps(m, allow_nan=False)
    no_nan(m)
    assert m["num_problems"] == 3 and m["num_samples"] == 4 and m["num_missing"] == 0
    assert m["mean"] == pytest.approx(0.5)
    sd = float(np.std([1.0, 0.5, 0.0], ddof=1))  # 0.5
    assert m["stderr"] == pytest.approx(sd / math.sqrt(3))
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, df=2)
    assert m["ci95"] == pytest.approx([max(0.0, 0.5 - half), min(1.0, 0.5 + half)])
    # sum p(1-p)/(K-1) = (0 + 0.25/3 + 0) -> sqrt / Q
    assert m["stderr_resample"] == pytest.approx(math.sqrt(0.25 / 3) / 3)
    assert list(m["pass_at_k"]) == ["1", "2", "3", "4"]
    for k in range(1, 5):
        vals = [pass_at_k(4, 4, k), pass_at_k(4, 2, k), 0.0]
        assert m["pass_at_k"][str(k)] == pytest.approx(np.mean(vals))
        assert m["pass_at_k_stderr"][str(k)] == pytest.approx(np.std(vals, ddof=1) / math.sqrt(3))
    assert m["pass_at_k"]["1"] == pytest.approx(m["mean"])  # mean@K = pass@1
    assert list(m["maj_at_k"]) == ["1", "2", "4"]
    # Problem b at k=4: votes 0,0 vs 1 -> correct; c: no correct class -> 0.
    assert m["maj_at_k"]["4"] == pytest.approx((1 + 1 + 0) / 3)
    assert m["maj_at_k"]["2"] == pytest.approx((1 + maj_at_k([0, 1, 0, None], {0}, 2) + 0) / 3)
    toks = [10, 20, 30, 40, 50, 60, 80, 90, 100, 110, 120]
    assert m["tokens"] == {
        "mean": pytest.approx(np.mean(toks)),
        "median": pytest.approx(60.0),
        "p90": pytest.approx(float(np.percentile(toks, 90))),
        "max": 120,
    }
    assert m["truncation_rate"] == pytest.approx(3 / 12)
    assert m["no_answer_rate"] == pytest.approx(2 / 12)


def test_incomplete_problems_use_the_samples_present() -> None:
    outs = [
        outcome("a", [0, 1, 1, 0]),
        outcome("b", [0, 1], missing=2),  # only 2 of K=4 samples
    ]
    m = task_metrics(outs, 4).to_json_dict()
    assert m["num_missing"] == 2
    assert m["mean"] == pytest.approx(0.5)  # (2/4 + 1/2) / 2
    # pass@k and maj@k over both problems, so only up to k = 2 (b's samples): above it they would be a's alone.
    assert m["pass_at_k"] == {"1": pytest.approx(0.5), "2": pytest.approx((pass_at_k(4, 2, 2) + pass_at_k(2, 1, 2)) / 2)}
    assert list(m["maj_at_k"]) == ["1", "2"] and list(m["pass_at_k_stderr"]) == ["1", "2"]
    assert m["samples_per_problem"] == [2, 4]  # the header says "2–4 per problem", not K = 4
    no_nan(m)


def test_problem_with_no_samples_and_single_problem_give_none_not_nan() -> None:
    outs = [outcome("a", [0, 0, 1]), outcome("b", [], missing=3)]
    m = task_metrics(outs, 3).to_json_dict()
    assert m["num_problems"] == 2 and m["num_missing"] == 3
    assert m["mean"] == pytest.approx(2 / 3)
    assert m["stderr"] is None and m["ci95"] is None
    assert m["pass_at_k_stderr"]["1"] is None
    json.dumps(m, allow_nan=False)
    empty = task_metrics([outcome("b", [], missing=2)], 2).to_json_dict()
    assert empty["mean"] is None and empty["stderr_resample"] is None
    assert empty["pass_at_k"] == {} and empty["maj_at_k"] == {}  # no problem has a sample: no k is defined
    assert empty["tokens"] == {"mean": None, "median": None, "p90": None, "max": None}
    assert empty["truncation_rate"] is None and empty["no_answer_rate"] is None
    json.dumps(empty, allow_nan=False)


def test_no_token_counts_give_none() -> None:
    m = task_metrics([outcome("a", [0, 1], tokens=[None, None]), outcome("b", [1, 1], tokens=[None, None])], 2).to_json_dict()
    assert m["tokens"] == {"mean": None, "median": None, "p90": None, "max": None}
    assert m["stderr"] == pytest.approx(0.25)  # SD of (0.5, 0) / sqrt(2)


def test_k1_resample_stderr_uses_the_pooled_bound() -> None:
    outs = [outcome(str(i), [0 if i < 3 else 1]) for i in range(4)]  # 3 of 4 right, K=1
    m = task_metrics(outs, 1).to_json_dict()
    assert m["stderr_resample"] == pytest.approx(math.sqrt(4 * 0.75 * 0.25) / 4)
    assert m["maj_at_k"] == {"1": pytest.approx(0.75)}


def test_bad_input_is_a_one_line_user_error() -> None:
    bad = ProblemOutcome("t", "x", [True, False], [0], frozenset({0}), [1, 2], ["stop", "stop"])
    with pytest.raises(UserError, match="one entry per present sample") as e:
        task_metrics([bad], 2)
    assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="K=2"):
        task_metrics([outcome("a", [0, 0, 0])], 2)
    with pytest.raises(UserError, match="K >= 1"):
        task_metrics([], 0)


def test_aggregate_micro_and_macro() -> None:
    t1 = [outcome("a", [0, 0], task="t1"), outcome("b", [0, 0], task="t1"), outcome("c", [0, 0], task="t1")]
    t2 = [outcome("d", [1, 1], task="t2")]
    agg = aggregate_metrics({"t1": t1, "t2": t2}, 2).to_json_dict()
    assert set(agg) == KEYS | {"macro_mean"}
    assert agg["num_problems"] == 4
    assert agg["mean"] == pytest.approx(0.75)  # micro: 3 of 4 problems pooled
    assert agg["macro_mean"] == pytest.approx(0.5)  # mean of task means 1 and 0
    assert agg == {**task_metrics(t1 + t2, 2).to_json_dict(), "macro_mean": agg["macro_mean"]}
    json.dumps(agg, allow_nan=False)
    assert aggregate_metrics({}, 2).macro_mean is None


def test_breakdown_by_level() -> None:
    outs = [outcome("a", [0, 1]), outcome("b", [0, 0]), outcome("c", [1, 1]), outcome("d", [0]), outcome("e", [0])]
    meta = {
        "a": {"level": "Level 2"}, "b": {"level": "Level 2"}, "c": {"level": "Level 10"},
        "d": {"subject": "Algebra"},
    }
    b = breakdown(outs, meta, "level")
    assert list(b) == ["Level 2", "Level 10"]  # natural order; d (no level) and e (no metadata) left out
    assert b["Level 2"].num_problems == 2 and b["Level 2"].mean == pytest.approx(0.75)
    assert b["Level 2"].stderr == pytest.approx(0.25)
    assert b["Level 10"] == GroupMetrics(num_problems=1, mean=0.0, stderr=None)
    assert breakdown(outs, meta, "subject") == {"Algebra": GroupMetrics(num_problems=1, mean=1.0, stderr=None)}


def test_se_vs_k_matches_subsampling_and_shrinks() -> None:
    rng = np.random.default_rng(5)
    K, q = 16, 60
    p_true = rng.beta(2, 2, q)
    outs = [outcome(str(i), [0 if rng.random() < p else 1 for _ in range(K)]) for i, p in enumerate(p_true)]
    curve = se_vs_k(outs, K)
    assert list(curve) == [1, 2, 4, 8, 16]
    full = task_metrics(outs, K).to_json_dict()
    assert curve[16].stderr == pytest.approx(full["stderr"])
    assert curve[16].stderr_resample == pytest.approx(full["stderr_resample"])
    ses = [curve[k].stderr for k in curve]
    assert ses == sorted(ses, reverse=True)
    # The formula is the expected SE^2 over random size-k subsamples: check it by subsampling.
    correct = np.array([o.correct for o in outs], dtype=float)
    for k in (1, 4):
        sims = []
        for _ in range(3000):
            idx = np.argsort(rng.random((q, K)), axis=1)[:, :k]
            sub = np.take_along_axis(correct, idx, axis=1).mean(axis=1)
            sims.append(np.var(sub, ddof=1) / q)
        assert curve[k].stderr ** 2 == pytest.approx(np.mean(sims), rel=0.02)


def test_fast_for_500_problems_k64() -> None:
    from reasoneval.metrics import majority

    rng = np.random.default_rng(0)
    outs = []
    for i in range(500):
        p = rng.beta(0.7, 0.7)
        probs = rng.dirichlet(np.ones(int(rng.integers(1, 10))))
        classes: list[int | None] = [
            None if rng.random() < 0.05 else (0 if rng.random() < p else int(1 + rng.choice(len(probs), p=probs)))
            for _ in range(64)
        ]
        outs.append(outcome(str(i), classes, tokens=list(rng.integers(100, 5000, 64))))
    majority._maj_from_counts.cache_clear()
    start = time.process_time()
    m = task_metrics(outs, 64).to_json_dict()
    elapsed = time.process_time() - start
    assert len(m["pass_at_k"]) == 64 and list(m["maj_at_k"]) == ["1", "2", "4", "8", "16", "32", "64"]
    # ~0.3 s CPU on a 2-core dev box; the bound leaves room for slower machines.
    assert elapsed < 1.5, elapsed


def test_task_metrics_round_trip_through_json() -> None:
    outs = [outcome("a", [0, 1]), outcome("b", [1, 1], tokens=[5, 7])]
    m = task_metrics(outs, 2)
    assert TaskMetrics.from_json_dict(json.loads(json.dumps(m.to_json_dict()))) == m
