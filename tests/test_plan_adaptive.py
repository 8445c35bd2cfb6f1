"""The allocation rule of `run --target-se` (reasoneval.plan_adaptive) and its simulation check."""

from __future__ import annotations

import numpy as np

from reasoneval.metrics.summary import stderr_resample
from reasoneval.plan_adaptive import FIRST_ROUND, estimated_se, greedy_neyman, next_round, posterior_sd


def test_posterior_sd_never_writes_off_a_problem_seen_all_correct() -> None:
    sd = posterior_sd(np.array([4, 4, 4]), np.array([4, 3, 2]))
    assert 0.2 < sd[0] < sd[1] < sd[2] <= 0.5  # 4/4 still gets a share, less than 3/4, less than 2/4


def test_first_round_then_nothing_more_once_the_target_is_met() -> None:
    n = np.zeros(5, dtype=np.int64)
    r = next_round(n, n, target=0.01, max_n=64)
    assert list(r.add) == [FIRST_ROUND] * 5 and not r.done
    # all solved 4/4 or failed 0/4: the re-run SE of the finished samples is 0, the target is met
    r = next_round(np.full(5, 4), np.array([4, 0, 4, 0, 4]), target=0.01, max_n=64)
    assert r.done and r.reason == "target" and r.add.sum() == 0


def test_the_estimate_is_summary_json_stderr_resample() -> None:
    n, c = np.array([4, 8, 16]), np.array([1, 4, 15])
    assert estimated_se(n, c) == float(stderr_resample(c / n, n))


def test_neyman_gives_uncertain_problems_more() -> None:
    n = np.array([8, 8, 8])
    c = np.array([4, 8, 0])  # 50%, all right, all wrong
    add = greedy_neyman(n, n, c, 30, max_n=256)
    assert add.sum() == 30 and add[0] > add[1] and add[0] > add[2] and add[1] + add[2] > 0


def test_max_n_and_budget_stop_the_run_and_say_why() -> None:
    n, c = np.full(4, 8), np.array([4, 4, 4, 4])
    r = next_round(n, c, target=0.001, max_n=8)
    assert r.done and r.reason == "max_n"
    r = next_round(n, c, target=0.001, max_n=64, budget=0)
    assert r.done and r.reason == "budget"
    r = next_round(n, c, target=0.001, max_n=64, budget=5)
    assert r.add.sum() == 5


def test_pending_samples_count_as_drawn() -> None:
    n, c = np.full(4, 4), np.array([2, 2, 2, 2])
    free = next_round(n, c, target=0.05, max_n=64)
    assert free.add.sum() > 0 and not free.done
    # what is in flight already reaches the projection: wait for it instead of asking for more
    busy = next_round(n, c, target=0.05, max_n=64, pending=np.full(4, 40))
    assert busy.add.sum() == 0 and not busy.done
