"""A Codeforces-style rating from which problems of known rating a model solves, with a 95% interval
(docs/statistics.md, "A Codeforces rating").

The model: a player of rating R solves a problem of rating r with probability

    P(R, r) = 1 / (1 + 10^((r - R) / 400))

(the Elo curve; Codeforces defines a problem's rating as the rating of a participant expected to solve it with
probability 1/2, which is this curve's midpoint). Problem i has n_i graded samples, c_i of them right.

- The estimate R_hat solves  sum_i (c_i - n_i P(R, r_i)) = 0: the binomial maximum likelihood of the Elo curve, which
  is also the rating whose expected solves on these problems equal the model's. Where problems differ from the curve
  (some problems easier for a model than their rating says, a problem-level random effect) the estimand stays
  defined: the rating R* at which a player expected to solve problems of this rating distribution as often as the
  model does. With a random effect R* depends on the problems' rating mix; without one it is the curve's R.
- The interval inverts a one-sample t-test on the per-problem score contributions u_i(R) = c_i - n_i P(R, r_i):
  R is in the interval when the mean of u_i(R) over problems is not significantly different from 0 (two-sided 5%,
  t with Q - 1 degrees of freedom). Each u_i carries both the draw of the problem (its rating and its own
  difficulty for this model) and the binomial noise of its samples, so the interval accounts for both without
  assuming the Elo curve fits each problem; problems are assumed drawn independently from a population of problems,
  and a problem's samples independently given the problem.
- Every sample right (or every one wrong): R_hat is infinite. The interval is one-sided, from the rating at which
  solving every problem (each counted once: as if K = 1, which only widens it) has probability 5%: a one-sided 95%
  bound, stated as such.
- Where the t-test never rejects on one side (too few problems near the model's level), that end is open (None).

The statistics are kept per distinct rating (sums of c, n, c^2, c n, n^2), so each rating tried costs
O(distinct ratings) whatever the number of problems: the simulation (scripts/rating_simulation.py) runs
thousands of replicates in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy import stats

from reasoneval.serial import JsonRecord, json_field

ELO_SCALE = 400.0
# The ratings searched: Codeforces' problem ratings lie in 800..3500; models far outside stay bounded by this range.
GRID_LOW, GRID_HIGH, GRID_STEP = -1000.0, 6000.0, 10.0
ONE_SIDED_TAIL = 0.05
METHOD = "elo-mle, t-inverted score interval over problems"

@dataclass(frozen=True)
class RatingEstimate(JsonRecord):
    """A model's rating from problems of known rating. rating None: every sample right (or wrong), no finite
    estimate; low/high None: that end of the 95% interval is open (one-sided)."""

    rating: float | None
    low: float | None
    high: float | None
    num_problems: int  # rated problems with samples (the estimate's)
    num_samples: int
    solve_rate: float  # right samples / samples over those problems
    num_unrated: int = json_field(default=0, omit_default=True)  # problems left out: no rating
    note: str = json_field(default="", omit_default=True)  # why an end is open, in words
    method: str = METHOD

    def describe(self) -> str:
        """'1712 (95% CI 1603-1820)', '>= 2731 (one-sided 95%)', ..."""
        lo = "-inf" if self.low is None else f"{self.low:.0f}"
        hi = "+inf" if self.high is None else f"{self.high:.0f}"
        if self.rating is None:
            bound = f">= {lo}" if self.high is None else f"<= {hi}"
            return f"{bound} (one-sided 95%; {self.note})"
        return f"{self.rating:.0f} (95% CI {lo} to {hi})" + (f"; {self.note}" if self.note else "")


def elo_probability(player: np.ndarray | float, problem: np.ndarray | float) -> np.ndarray:
    """P(solve) of a player of rating `player` on a problem of rating `problem` (arrays broadcast)."""
    return 1.0 / (1.0 + np.power(10.0, (np.asarray(problem, dtype=np.float64) - np.asarray(player, dtype=np.float64))
                                 / ELO_SCALE))


@dataclass(frozen=True)
class _Groups:
    """Per distinct rating: the sums the estimate and the variance of u_i need."""

    ratings: np.ndarray
    count: np.ndarray  # problems
    c: np.ndarray
    n: np.ndarray
    cc: np.ndarray
    cn: np.ndarray
    nn: np.ndarray


def _groups(ratings: np.ndarray, n: np.ndarray, c: np.ndarray) -> _Groups:
    values, inverse = np.unique(ratings, return_inverse=True)

    def s(x: np.ndarray) -> np.ndarray:
        return np.bincount(inverse, weights=x, minlength=len(values))

    return _Groups(values, s(np.ones_like(n)), s(c), s(n), s(c * c), s(c * n), s(n * n))


def _t_statistic(g: _Groups, q: int, grid: np.ndarray) -> np.ndarray:
    """t of the mean of u_i(R) = c_i - n_i P(R, r_i) over the q problems, at each R of the grid."""
    p = elo_probability(grid[:, None], g.ratings[None, :])
    total = (g.c[None, :] - g.n[None, :] * p).sum(axis=1)
    squares = (g.cc[None, :] - 2 * p * g.cn[None, :] + p * p * g.nn[None, :]).sum(axis=1)
    mean = total / q
    var = np.maximum(squares / q - mean * mean, 0.0) * q / (q - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / q)
    return np.where(var > 0, t, np.sign(mean) * np.inf)


def _mle(g: _Groups) -> float:
    """The root of sum_i (c_i - n_i P(R, r_i)), decreasing in R (bisection)."""
    lo, hi = GRID_LOW - 4000.0, GRID_HIGH + 4000.0
    target = float(g.c.sum())
    for _ in range(40):  # 15,000 points / 2^40: far below a tenth of a point
        mid = (lo + hi) / 2
        if float((g.n * elo_probability(mid, g.ratings)).sum()) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _one_sided(ratings: np.ndarray, all_right: bool) -> float:
    """The rating at which every problem right (all_right) or every one wrong has probability ONE_SIDED_TAIL,
    each problem counted once."""
    lo, hi = GRID_LOW - 4000.0, GRID_HIGH + 4000.0
    for _ in range(80):
        mid = (lo + hi) / 2
        p = elo_probability(mid, ratings)
        chance = float(np.sum(np.log(p if all_right else 1 - p)))
        # all right: the chance grows with R; all wrong: it falls
        if (chance < math.log(ONE_SIDED_TAIL)) == all_right:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def estimate_rating(ratings: Sequence[float | None], n: Sequence[int], c: Sequence[int],
                    level: float = 0.95) -> RatingEstimate | None:
    """The rating and its interval from each problem's rating (None: unrated, left out and counted), samples and
    right samples. None where fewer than two rated problems have samples (no interval can be given)."""
    if not (len(ratings) == len(n) == len(c)):
        raise ValueError("ratings, n and c must have one entry per problem")
    keep = [i for i, r in enumerate(ratings) if r is not None and n[i] > 0 and math.isfinite(float(r))]
    unrated = sum(1 for i, r in enumerate(ratings) if (r is None or not math.isfinite(float(r))) and n[i] > 0)
    q = len(keep)
    if q < 2:
        return None
    r_arr = np.array([float(ratings[i]) for i in keep])  # type: ignore[arg-type]
    n_arr = np.array([n[i] for i in keep], dtype=np.float64)
    c_arr = np.array([c[i] for i in keep], dtype=np.float64)
    if np.any(c_arr > n_arr) or np.any(c_arr < 0):
        raise ValueError("right samples must lie between 0 and the problem's samples")
    def result(rating: float | None, low: float | None, high: float | None, note: str) -> RatingEstimate:
        return RatingEstimate(rating=rating, low=low, high=high, num_problems=q, num_samples=int(n_arr.sum()),
                              solve_rate=float(c_arr.sum() / n_arr.sum()), num_unrated=unrated, note=note)

    if c_arr.sum() == n_arr.sum():
        return result(None, round(_one_sided(r_arr, True), 1), None, "every sample right: a lower bound only")
    if c_arr.sum() == 0:
        return result(None, None, round(_one_sided(r_arr, False), 1), "every sample wrong: an upper bound only")
    g = _groups(r_arr, n_arr, c_arr)
    estimate = _mle(g)
    critical = float(stats.t.ppf(0.5 + level / 2, q - 1))

    def outside(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.abs(_t_statistic(g, q, x)) > critical)

    # The interval is the run of accepted ratings around the estimate (t falls through 0 there): each end found on a
    # grid of GRID_STEP points, then to a tenth of a point by bisection.
    low, high = _end(estimate, -1, outside), _end(estimate, +1, outside)
    notes = []
    if low is None or high is None:
        notes.append("too few problems on one side of the model's level to close the interval there")
    if not r_arr.min() <= estimate <= r_arr.max():
        notes.append(f"outside the problems' ratings ({r_arr.min():.0f}-{r_arr.max():.0f}): extrapolated by the Elo curve")
    return result(round(estimate, 1), low, high, "; ".join(notes))


def _end(start: float, direction: int, outside: Callable[[np.ndarray], np.ndarray]) -> float | None:
    """The last accepted rating from `start` going `direction` (-1 down, +1 up); None: accepted to the grid's end."""
    steps = int((start - GRID_LOW if direction < 0 else GRID_HIGH - start) // GRID_STEP)
    if steps < 1:
        return None
    grid = start + direction * GRID_STEP * np.arange(1, steps + 1)
    out = outside(grid)
    if not out.any():
        return None
    k = int(np.argmax(out))
    lo, hi = (start if k == 0 else float(grid[k - 1])), float(grid[k])
    for _ in range(int(math.log2(GRID_STEP / 0.1)) + 1):
        mid = (lo + hi) / 2
        if bool(outside(np.array([mid]))[0]):
            hi = mid
        else:
            lo = mid
    return round(lo, 1)


def numeric_rating(value: object) -> float | None:
    """A problem's rating as metadata holds it (an int, a float, a numeric text); None: unrated (absent, 0, NaN,
    not a number: open-r1/codeforces writes no rating for unrated problems, CodeContests 0)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        r = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return r if math.isfinite(r) and r > 0 else None


def rating_from(problems: Iterable[tuple[object, Sequence[bool]]]) -> RatingEstimate | None:
    """The rating of a task from (each problem's rating metadata, its verdicts). None where no two problems with
    samples are rated (no rating in the data: the task reports none)."""
    ratings, n, c = [], [], []
    for rating, verdicts in problems:
        ratings.append(numeric_rating(rating))
        n.append(len(verdicts))
        c.append(sum(bool(v) for v in verdicts))
    return estimate_rating(ratings, n, c)
