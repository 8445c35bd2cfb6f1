"""pass@k: the unbiased estimator against exact rational arithmetic and its stable forms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from reasoneval.errors import UserError
from reasoneval.metrics import pass_at_k, pass_at_k_curve, pass_at_k_matrix


def exact(n: int, c: int, k: int) -> float:
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def test_hand_computed_values() -> None:
    # n=4, c=1, k=2: the 3 of 6 pairs holding the correct sample.
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5, abs=1e-15)
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7, abs=1e-15)
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)  # pass@1 is c/n
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 6, 5) == 1.0  # only 4 wrong samples: every 5-subset has a correct one


@pytest.mark.parametrize("n", [1, 2, 7, 16, 64])
def test_matches_exact_rationals_for_all_c_and_k(n: int) -> None:
    for c in range(n + 1):
        curve = pass_at_k_curve(n, c)
        for k in range(1, n + 1):
            want = exact(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(want, abs=1e-12)
            assert curve[k - 1] == pytest.approx(want, abs=1e-12)


def test_stable_at_k_1024() -> None:
    # C(1024, 512) ~ 4.5e306: a raw-binomial implementation overflows or loses all precision here.
    n = 1024
    for c in (1, 3, 100, 511, 1000):
        curve = pass_at_k_curve(n, c)
        assert np.all(np.isfinite(curve))
        assert np.all(np.diff(curve) >= -1e-12)  # more tries never lower pass@k
        for k in (1, 2, 100, 512, 1000, 1024):
            assert curve[k - 1] == pytest.approx(exact(n, c, k), abs=1e-11)
            assert pass_at_k(n, c, k) == pytest.approx(exact(n, c, k), abs=1e-11)


def test_matrix_groups_by_n_and_leaves_out_k_above_n() -> None:
    n = np.array([4, 2, 4, 0])
    c = np.array([1, 2, 0, 0])
    m = pass_at_k_matrix(n, c, 4)
    assert m.shape == (4, 4)
    assert m[0].tolist() == pytest.approx([exact(4, 1, k) for k in range(1, 5)])
    assert m[1, :2].tolist() == [1.0, 1.0] and np.isnan(m[1, 2:]).all()
    assert m[2].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert np.isnan(m[3]).all()  # no samples: undefined everywhere


def test_bad_arguments_are_user_errors() -> None:
    with pytest.raises(UserError, match="k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(UserError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(UserError):
        pass_at_k(3, 1, 0)
