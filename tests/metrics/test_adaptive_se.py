"""The re-run SE of an adaptive run: posterior variances under a Beta prior fitted to the task
(metrics.estimators.beta_prior / posterior_variance / stderr_resample_adaptive; docs/statistics.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from reasoneval.metrics.estimators import beta_prior, posterior_variance, stderr_resample, stderr_resample_adaptive


def test_beta_prior_is_the_maximum_of_the_beta_binomial_likelihood() -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 5.0, 3000)
    n = rng.integers(2, 40, len(p))  # unequal counts, as an adaptive run has
    c = rng.binomial(n, p)
    a, b = beta_prior(n, c)
    assert a == pytest.approx(2.0, rel=0.15) and b == pytest.approx(5.0, rel=0.15)

    def loglik(ab: np.ndarray) -> float:
        return float(np.sum(stats.betabinom.logpmf(c, n, ab[0], ab[1])))

    ref = optimize.minimize(lambda x: -loglik(np.exp(x)), np.zeros(2), method="Nelder-Mead",
                            options={"xatol": 1e-9, "fatol": 1e-9, "maxiter": 4000})
    assert loglik(np.array([a, b])) >= loglik(np.exp(ref.x)) - 1e-6  # scipy's own beta-binomial, other optimizer


def test_a_task_of_only_all_right_or_all_wrong_problems_fits_at_the_bounds_and_stays_finite() -> None:
    n = np.full(20, 4)
    a, b = beta_prior(n, np.where(np.arange(20) % 2 == 0, 4, 0))
    assert a == pytest.approx(math.exp(-5)) and b == pytest.approx(math.exp(-5))
    v = posterior_variance(n, np.full(20, 4), (a, b))
    assert (v > 0).all() and (v < 0.01).all()  # finite and small (a 2/4 problem has 0.19)
    assert beta_prior(np.zeros(0), np.zeros(0)) == (0.5, 0.5)


def test_a_problem_seen_all_right_keeps_variance_as_its_task_says() -> None:
    # On an easy task (most problems near 1) a 4/4 problem keeps some variance; the plug-in would give it 0.
    rng = np.random.default_rng(1)
    p = rng.beta(4.0, 0.45, 500)
    n = np.full(500, 4)
    c = rng.binomial(n, p)
    prior = beta_prior(n, c)
    v = posterior_variance(np.array([4, 4, 4]), np.array([4, 3, 2]), prior)
    assert 0 < v[0] < v[1] < v[2] <= 0.25
    # and on average over the task it is what the true accuracies give: E[posterior var] = E[p(1-p)]
    assert float(np.mean(posterior_variance(n, c, prior))) == pytest.approx(float(np.mean(p * (1 - p))), rel=0.1)


def test_stderr_resample_adaptive_is_the_resample_formula_with_posterior_variances() -> None:
    n, c, n_eff = np.array([8, 4, 6]), np.array([6, 4, 3]), np.array([8.0, 4.0, 5.5])
    v = posterior_variance(n, c, beta_prior(n, c))
    assert stderr_resample_adaptive(n, c, n_eff) == pytest.approx(math.sqrt(float(np.sum(v / n_eff))) / 3)
    # at many samples per problem the prior no longer matters: it meets the plug-in formula
    big = np.array([4000, 4000, 4000])
    hits = np.array([3000, 2000, 1000])
    assert stderr_resample_adaptive(big, hits, big.astype(float)) == pytest.approx(
        float(stderr_resample(hits / big, big)), rel=1e-3)
