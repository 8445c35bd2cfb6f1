"""Estimators of a task's mean over problems and of its standard error, as pure functions of arrays of per-problem
counts and rates (docs/statistics.md): the t interval, the cross-fit estimate, the resampling standard errors and the
beta prior of the adaptive design. metrics/summary.py assembles a task's metrics from them."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import optimize, special, stats


def finite_or_none(x: float | np.floating | np.ndarray | None) -> float | None:
    """A plain float for JSON, None for undefined (NaN, infinite) values; x: a number or a 0-d array."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def _se(values: np.ndarray) -> float | None:
    """Standard error of the mean of per-problem values (sample SD / sqrt(Q)); None below 2 problems."""
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


def mean_stderr_ci(per_problem: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard error and 95% CI of per-problem accuracies along the last axis.

    Vectorised so a simulation can score thousands of runs with the very code the reports use.
    SE = sample SD / sqrt(Q) (NaN for Q < 2); CI = mean -/+ t(0.975, Q-1) * SE, clipped to [0, 1]
    (Student t: the normal quantile is too narrow for small Q).
    """
    x = np.asarray(per_problem, dtype=np.float64)
    q = x.shape[-1]
    mean = x.mean(axis=-1)
    if q < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan.copy(), nan.copy()
    se = x.std(axis=-1, ddof=1) / math.sqrt(q)
    half = float(stats.t.ppf(0.975, q - 1)) * se
    return mean, se, np.clip(mean - half, 0.0, 1.0), np.clip(mean + half, 0.0, 1.0)


def _per_sample_var(p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Estimate of each problem's Bernoulli variance p_i (1-p_i) along the last axis.

    n_i >= 2: the unbiased p_hat (1-p_hat) n/(n-1). n_i = 1: one sample cannot estimate its own
    variance (p_hat is 0 or 1); use pbar (1-pbar) of the pool instead, which on average bounds
    p_i (1-p_i) from above (Jensen), so the SE errs on the wide side.
    """
    p = np.asarray(p, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), p.shape)
    pbar = p.mean(axis=-1, keepdims=True)
    unbiased = p * (1.0 - p) * n / np.maximum(n - 1.0, 1.0)
    return np.where(n >= 2, unbiased, pbar * (1.0 - pbar))


def crossfit(n: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per problem, from (Q, 2) stream counts: the estimate (rate of stream 0 + rate of stream 1) / 2 and its
    effective number of samples 1/Σw² = 4/(1/n_0 + 1/n_1) (Var = p(1-p)/n_eff). A problem with one empty
    stream uses the other alone."""
    n = np.asarray(n, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    rate = c / np.maximum(n, 1.0)
    both = (n[:, 0] > 0) & (n[:, 1] > 0)
    p = np.where(both, (rate[:, 0] + rate[:, 1]) / 2, np.where(n[:, 0] > 0, rate[:, 0], rate[:, 1]))
    inv = np.where(n > 0, 1.0 / np.maximum(n, 1.0), 0.0)
    n_eff = np.where(both, 4.0 / np.maximum(inv[:, 0] + inv[:, 1], 1e-300), n.sum(axis=1))
    return p, n_eff


def crossfit_one(indices: Sequence[int], correct: Sequence[bool]) -> tuple[float, float]:
    """One problem of an adaptive run, from its samples' indices and verdicts: (`crossfit` estimate, n_eff)."""
    sn = np.zeros((1, 2))
    sc = np.zeros((1, 2))
    for j, x in zip(indices, correct):
        sn[0, j % 2] += 1
        sc[0, j % 2] += bool(x)
    p, n_eff = crossfit(sn, sc)
    return float(p[0]), float(n_eff[0])


def stderr_resample(per_problem: np.ndarray, n: np.ndarray) -> np.ndarray:
    """SE of the mean over re-running the same problems (sampling noise only), along the last axis.

    Var(p_hat_i) = p_i (1-p_i) / n_i, estimated per problem, summed, over Q^2.
    """
    p = np.asarray(per_problem, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), p.shape)
    return np.sqrt(np.sum(_per_sample_var(p, n) / n, axis=-1)) / p.shape[-1]


def beta_prior(n: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """Beta(a, b) fitted to a task's problems by maximum beta-binomial likelihood of their counts (empirical
    Bayes: the task's own spread of accuracies). Adaptively drawn counts have the likelihood of fixed ones:
    which sample came next depended on outcomes only through what was observed (the likelihood principle),
    so the fit needs no correction for `run --target-se`. a and b are bounded to [e^-5, e^9] (a task whose
    problems are all 0/n or n/n has its maximum at the edge). About 1 ms for 500 problems: `run --target-se`
    refits at every refill."""
    if len(n) == 0:
        return 0.5, 0.5
    # Problems with the same (n, c) have the same likelihood term: one term each, weighted by its count.
    pairs, w = np.unique(np.stack([np.asarray(n), np.asarray(c)], axis=1).astype(np.int64), axis=0,
                         return_counts=True)
    nn, cc = pairs[:, 0].astype(np.float64), pairs[:, 1].astype(np.float64)

    def nll(t: np.ndarray) -> tuple[float, np.ndarray]:  # and its gradient in (log a, log b)
        a, b = np.exp(t)
        f = -float(w @ (special.betaln(a + cc, b + nn - cc) - special.betaln(a, b)))
        dab = special.digamma(a + b + nn) - special.digamma(a + b)
        ga = -float(w @ (special.digamma(a + cc) - special.digamma(a) - dab))
        gb = -float(w @ (special.digamma(b + nn - cc) - special.digamma(b) - dab))
        return f, np.array([ga * a, gb * b])

    r = optimize.minimize(nll, np.zeros(2), jac=True, method="L-BFGS-B", bounds=[(-5.0, 9.0), (-5.0, 9.0)])
    a, b = np.exp(r.x)
    return float(a), float(b)


def posterior_variance(n: np.ndarray, c: np.ndarray, prior: tuple[float, float]) -> np.ndarray:
    """E[p(1-p)] per problem under its Beta(a + c, b + n - c) posterior: never 0, so a problem seen 4/4 still
    carries variance (as much as problems like it do on average under the fitted prior)."""
    a = np.asarray(c, dtype=np.float64) + prior[0]
    b = np.asarray(n, dtype=np.float64) - np.asarray(c, dtype=np.float64) + prior[1]
    return a * b / ((a + b) * (a + b + 1.0))


def stderr_resample_adaptive(n: np.ndarray, c: np.ndarray, n_eff: np.ndarray) -> float:
    """`stderr_resample` of an adaptive run: √(Σ_i E[p_i(1-p_i)] / n_eff,i) / Q, each problem's variance its
    posterior mean under the task's fitted Beta prior (`beta_prior`), n_eff its cross-fit effective samples.

    The plug-in p̂(1-p̂) that uniform runs use is unbiased only at a fixed n: a run that stops once its SE
    estimate is low stops preferentially after draws that made it low, and then 4/4 problems add 0. Measured
    (docs/statistics.md, adaptive sampling): the plug-in interval covered 91-92% on tasks with many problems
    near 0 or 1; the posterior one is within 93-97%."""
    n = np.asarray(n, dtype=np.float64)
    if len(n) == 0:
        return math.inf
    v = posterior_variance(n, c, beta_prior(n, c))
    return float(math.sqrt(float(np.sum(v / np.asarray(n_eff, dtype=np.float64))))) / len(n)
