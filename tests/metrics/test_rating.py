"""The Codeforces-style rating (metrics/rating.py): estimate, interval, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reasoneval.metrics.rating import elo_probability, estimate_rating, numeric_rating, rating_from
from reasoneval.tasks.contests import rating_band


def test_elo_curve_is_one_half_at_the_problems_rating_and_ten_to_one_400_above():
    assert float(elo_probability(1500, 1500)) == pytest.approx(0.5)
    assert float(elo_probability(1900, 1500)) == pytest.approx(10 / 11)


def test_estimate_solves_expected_solves_equal_observed():
    ratings = [800, 1200, 1600, 2000, 2400]
    n = [10] * 5
    c = [10, 8, 5, 2, 0]
    e = estimate_rating(ratings, n, c)
    assert e is not None and e.rating is not None
    expected = float((np.array(n) * elo_probability(e.rating, np.array(ratings, float))).sum())
    assert expected == pytest.approx(sum(c), abs=1e-3)
    assert e.low is not None and e.high is not None and e.low < e.rating < e.high
    assert e.num_problems == 5 and e.num_samples == 50 and e.solve_rate == pytest.approx(0.5)


def test_interval_narrows_with_more_samples_per_problem_and_more_problems():
    rng = np.random.default_rng(1)
    r = rng.choice(np.arange(800, 2600, 100), size=400)
    p = elo_probability(1700, r)
    widths = {}
    for q in (50, 400):
        for k in (1, 16):
            c = rng.binomial(k, p[:q])
            e = estimate_rating(list(r[:q]), [k] * q, list(c))
            assert e is not None and e.low is not None and e.high is not None
            assert e.low <= 1700 + 300 and e.high >= 1700 - 300
            widths[q, k] = e.high - e.low
    assert widths[50, 16] < widths[50, 1] and widths[400, 1] < widths[50, 1]


def test_problem_level_spread_widens_the_interval_beyond_binomial_noise():
    # Same ratings and same total solves; in `spread` each problem is all-or-nothing (a problem effect), in `even`
    # the solves are spread evenly: the spread data must give the wider interval.
    ratings = [1500] * 20
    even = estimate_rating(ratings, [10] * 20, [5] * 20)
    spread = estimate_rating(ratings, [10] * 20, [10] * 10 + [0] * 10)
    assert even is not None and spread is not None
    assert even.rating == pytest.approx(1500, abs=0.5) and spread.rating == pytest.approx(1500, abs=0.5)
    assert (spread.high - spread.low) > 3 * (even.high - even.low)  # type: ignore[operator]


def test_all_right_gives_a_lower_bound_only_and_all_wrong_an_upper_bound():
    up = estimate_rating([1000, 1400, 1800], [4, 4, 4], [4, 4, 4])
    assert up is not None and up.rating is None and up.high is None and up.low is not None
    # every problem right has probability 5% at the bound, counting each problem once
    assert math.prod(float(elo_probability(up.low, r)) for r in (1000, 1400, 1800)) == pytest.approx(0.05, rel=1e-3)
    assert up.describe().startswith(">= ") and "one-sided" in up.describe()
    down = estimate_rating([1000, 1400, 1800], [4, 4, 4], [0, 0, 0])
    assert down is not None and down.rating is None and down.low is None and down.high is not None
    assert math.prod(1 - float(elo_probability(down.high, r)) for r in (1000, 1400, 1800)) == pytest.approx(0.05, rel=1e-3)
    assert down.describe().startswith("<= ")


def test_unrated_problems_are_left_out_and_counted():
    e = rating_from([(1200, [True, False]), (None, [True]), ("", [False]), (1600, [False, False]), (0, [True]),
                     ("1400", [True, True])])
    assert e is not None and e.num_problems == 3 and e.num_unrated == 3 and e.num_samples == 6


def test_fewer_than_two_rated_problems_give_no_rating():
    assert rating_from([(1200, [True]), (None, [False])]) is None
    assert rating_from([]) is None


def test_a_model_far_above_the_problems_says_it_is_extrapolated():
    e = estimate_rating([800, 900, 1000] * 10, [8] * 30, [8] * 29 + [7])
    assert e is not None and e.rating is not None and e.rating > 1000
    assert "extrapolated" in e.note


def test_numeric_rating_and_bands():
    assert numeric_rating("1900") == 1900.0 and numeric_rating(float("nan")) is None and numeric_rating(True) is None
    assert rating_band(800) == "<1200 (newbie-pupil)" and rating_band(1900).startswith("1900-2099")
    assert rating_band(3500).startswith(">=2400")


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="between 0"):
        estimate_rating([1000, 1200], [2, 2], [3, 1])
