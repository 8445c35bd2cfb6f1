"""The allocation rule of `run --target-se` (reasoneval.run.plan_adaptive) and its simulation check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from reasoneval.metrics.summary import crossfit, stderr_resample_adaptive
from reasoneval.run.plan_adaptive import estimated_se, greedy_neyman, next_round, posterior_sd

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/run/this file)


def test_posterior_sd_never_writes_off_a_problem_seen_all_correct() -> None:
    sd = posterior_sd(np.array([4, 4, 4]), np.array([4, 3, 2]))
    assert 0.2 < sd[0] < sd[1] < sd[2] <= 0.5  # 4/4 still gets a share, less than 3/4, less than 2/4


def test_first_round_then_nothing_more_once_the_target_is_met() -> None:
    n = np.zeros((5, 2), dtype=np.int64)
    r = next_round(n, n, target=0.01, max_n=64)
    assert r.add.tolist() == [[2, 2]] * 5 and not r.done  # 4 per problem, 2 per stream
    # all solved 4/4 or failed 0/4: the re-run SE of the finished samples is 0, the target is met
    c = np.array([[2, 2], [0, 0], [2, 2], [0, 0], [2, 2]])
    r = next_round(np.full((5, 2), 2), c, target=0.01, max_n=64)
    assert r.done and r.reason == "target" and r.add.sum() == 0


def test_the_estimate_is_summary_json_stderr_resample_of_the_crossfit() -> None:
    n, c = np.array([[2, 2], [4, 4], [8, 7]]), np.array([[1, 0], [2, 2], [8, 6]])
    p, n_eff = crossfit(n, c)
    assert p.tolist() == [0.25, 0.5, (1 + 6 / 7) / 2]
    assert n_eff[1] == 8 and abs(n_eff[2] - 4 / (1 / 8 + 1 / 7)) < 1e-12
    assert estimated_se(n, c) == stderr_resample_adaptive(n.sum(axis=1), c.sum(axis=1), n_eff)


def test_each_stream_is_allocated_from_the_other_streams_outcomes() -> None:
    n = np.array([[4, 4], [4, 4]])
    c = np.array([[4, 2], [2, 4]])  # problem 0: stream 1 says 50%; problem 1: stream 0 says 50%
    add = greedy_neyman(n, n, c, 10, max_n=256)
    assert add[0, 0] > add[0, 1] and add[1, 1] > add[1, 0]


def test_neyman_gives_uncertain_problems_more() -> None:
    n = np.full((3, 2), 4)
    c = np.array([[2, 2], [4, 4], [0, 0]])  # 50%, all right, all wrong
    add = greedy_neyman(n, n, c, 30, max_n=256).sum(axis=1)
    assert add.sum() == 30 and add[0] > add[1] and add[0] > add[2] and add[1] + add[2] > 0


def test_max_n_and_budget_stop_the_run_and_say_why() -> None:
    n, c = np.full((4, 2), 4), np.full((4, 2), 2)
    r = next_round(n, c, target=0.001, max_n=8)
    assert r.done and r.reason == "max_n"
    r = next_round(n, c, target=0.001, max_n=64, budget=0)
    assert r.done and r.reason == "budget"
    r = next_round(n, c, target=0.001, max_n=64, budget=5)
    assert r.add.sum() == 5


def test_pending_samples_count_as_drawn() -> None:
    n, c = np.full((4, 2), 2), np.full((4, 2), 1)
    free = next_round(n, c, target=0.05, max_n=64)
    assert free.add.sum() > 0 and not free.done
    # what is in flight already reaches the projection: wait for it instead of asking for more
    busy = next_round(n, c, target=0.05, max_n=64, pending=np.full((4, 2), 20))
    assert busy.add.sum() == 0 and not busy.done


def test_simulation_small_size_bias_and_coverage() -> None:
    """scripts/adaptive_simulation.py --fixed-rounds (rounds like a run's) at small size: |bias| within 3 of its
    standard errors of 0 and coverage near 95% (the full-size figures, 1,000 runs per cell, are in
    docs/statistics.md)."""
    sys.path.insert(0, str(ROOT))
    from scripts.adaptive_simulation import simulate

    for profile, k in (("aime-like", 16), ("math500-like", 16), ("uniform", 16)):
        cell = simulate(profile, k, runs=60 if profile != "math500-like" else 30, seed=7, fixed_rounds=True)
        assert abs(cell.bias_points) < max(0.2, 3 * cell.bias_se_points), cell
        assert 0.85 <= cell.coverage <= 1.0, cell
        assert cell.met == 1.0 and cell.samples < cell.uniform_samples, cell


def test_simulation_oracle_stop_meets_the_true_se_with_fixed_rounds() -> None:
    """--fixed-rounds --oracle-stop (the docs' bias attribution): each run stops once the allocation's true re-run
    SE is at the target, with rounds of Q/8."""
    sys.path.insert(0, str(ROOT))
    from scripts.adaptive_simulation import PROFILES, expected_uniform_se, run_adaptive

    rng = np.random.default_rng(3)
    p = PROFILES["uniform"][0](rng, 40)
    target = expected_uniform_se(p, 16)
    n, c, why = run_adaptive(p, target, rng, fixed_rounds=True, oracle_stop=True)
    n_eff = 4.0 / (1.0 / n[:, 0] + 1.0 / n[:, 1])
    assert why == "target"
    assert np.sqrt(np.sum(p * (1 - p) / n_eff)) / len(p) <= target
    assert (c <= n).all() and n.sum() < 40 * 16 * 1.3


def test_simulation_script_runs() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "adaptive_simulation.py"), "--runs", "20",
                        "--profiles", "uniform", "--k", "16"], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert "| uniform | 100 | K = 16 | 20 |" in r.stdout, r.stdout + r.stderr
