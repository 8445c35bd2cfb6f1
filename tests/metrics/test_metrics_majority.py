"""maj@k: the exact combinatorial count against brute-force enumeration of every subset."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction
from typing import Sequence

import pytest

from reasoneval.errors import UserError
from reasoneval.metrics import maj_at_k, maj_at_k_method, maj_ks, majority


def brute_force(classes: Sequence[int | None], correct: set[int], k: int) -> Fraction:
    total = Fraction(0)
    subsets = list(itertools.combinations(range(len(classes)), k))
    for sub in subsets:
        votes = Counter(classes[i] for i in sub if classes[i] is not None)
        if not votes:
            continue
        top = max(votes.values())
        winners = [cls for cls, v in votes.items() if v == top]
        total += Fraction(sum(cls in correct for cls in winners), len(winners))
    return total / len(subsets)


def test_maj_ks() -> None:
    assert maj_ks(1) == [1]
    assert maj_ks(2) == [1, 2]
    assert maj_ks(16) == [1, 2, 4, 8, 16]
    assert maj_ks(10) == [1, 2, 4, 8, 10]
    assert maj_ks(1024)[-3:] == [256, 512, 1024]
    with pytest.raises(UserError):
        maj_ks(0)


def test_hand_computed() -> None:
    # 2 correct (class 0), 1 wrong (class 1), k=2: pairs {0,0} -> 1, {0,1} x2 -> tie 1/2 each.
    assert maj_at_k([0, 0, 1], {0}, 2) == pytest.approx((1 + 0.5 + 0.5) / 3)
    # Full set: a clear majority / a two-way tie / a three-way tie with one correct class.
    assert maj_at_k([0, 0, 1], {0}, 3) == 1.0
    assert maj_at_k([0, 1], {0}, 2) == 0.5
    assert maj_at_k([0, 1, 2, None], {2}, 4) == pytest.approx(1 / 3)
    # No answer at all counts wrong; samples without an answer do not vote.
    assert maj_at_k([None, None], {0}, 2) == 0.0
    assert maj_at_k([0, None, None], {0}, 3) == 1.0
    # {0, None}: 1, {0, None}: 1, {None, None}: 0 -> 2/3.
    assert maj_at_k([0, None, None], {0}, 2) == pytest.approx(2 / 3)
    # No correct class among the answers.
    assert maj_at_k([1, 1, 2], {0}, 2) == 0.0
    # k = 1 is the fraction of samples in a correct class.
    assert maj_at_k([0, 1, 1, None], {0}, 1) == pytest.approx(0.25)


def test_several_correct_classes_share_ties() -> None:
    # Classes 0 and 1 both correct, 2 wrong: a 3-way tie over the full set earns 2/3.
    assert maj_at_k([0, 1, 2], {0, 1}, 3) == pytest.approx(2 / 3)
    classes = [0, 0, 1, 2, 2, None]
    assert maj_at_k(classes, {0, 1}, 3) == pytest.approx(float(brute_force(classes, {0, 1}, 3)), abs=1e-12)


def test_matches_brute_force_on_random_small_cases() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(250):
        n = rng.randint(1, 11)
        r = rng.randint(1, 5)
        classes = [rng.choice([*range(r), None]) for _ in range(n)]
        correct = {c for c in range(r) if rng.random() < 0.4}
        for k in range(1, n + 1):
            want = float(brute_force(classes, correct, k))
            assert maj_at_k(classes, correct, k) == pytest.approx(want, abs=1e-12), (classes, correct, k)
            checked += 1
    assert checked > 1000


def test_exact_path_itself_matches_brute_force() -> None:
    # The shortcuts (k=1, k=n, no rivals) must not hide the general DP: call it directly.
    rng = random.Random(11)
    for _ in range(150):
        n = rng.randint(3, 12)
        classes = [rng.choice([0, 0, 1, 2, 3, None]) for _ in range(n)]
        cc, wc, u, _ = majority._signature(classes, {0}, 1)
        if not cc or not wc:
            continue
        for k in range(2, n):
            want = float(brute_force(classes, {0}, k))
            assert majority._exact(cc, wc, u, k) == pytest.approx(want, abs=1e-12)


def test_large_k_is_finite_and_sensible() -> None:
    # K = 1024: counts like C(1024, 512) ~ 1e306 must not overflow.
    classes = [0] * 400 + [1] * 300 + [2] * 200 + [None] * 124
    for k in (2, 16, 128, 512):
        v = maj_at_k(classes, {0}, k)
        assert 0.0 < v <= 1.0
        assert maj_at_k_method(classes, {0}, k) == "exact"
    assert maj_at_k(classes, {0}, 1024) == 1.0
    # With a clear plurality, bigger votes are more often right.
    vals = [maj_at_k(classes, {0}, k) for k in (1, 4, 16, 64, 256)]
    assert vals == sorted(vals)
    # An even two-way split with a no-answer pool: the symmetric half by construction.
    even = [0] * 300 + [1] * 300 + [None] * 100
    assert maj_at_k(even, {0}, 200) == pytest.approx(maj_at_k(even, {1}, 200), abs=1e-12)
    assert maj_at_k(even, {0}, 200) + maj_at_k(even, {1}, 200) == pytest.approx(1.0, abs=1e-9)


def test_monte_carlo_agrees_with_exact_and_is_seeded() -> None:
    classes = [0] * 9 + [1] * 7 + [2] * 5 + [None] * 4
    cc, wc, u, _ = majority._signature(classes, {1}, 1)
    for k in (4, 10):
        exact = majority._exact(cc, wc, u, k)
        mc = majority._monte_carlo(cc, wc, u, k)
        # 4096 subsets: SE <= 0.5/64 ~ 0.008.
        assert mc == pytest.approx(exact, abs=0.035)
        assert majority._monte_carlo(cc, wc, u, k) == mc  # same seed, same value


def test_budget_switches_to_monte_carlo(monkeypatch: pytest.MonkeyPatch) -> None:
    classes = [0] * 9 + [1] * 7 + [2] * 5 + [None] * 4
    exact = maj_at_k(classes, {0}, 8)
    monkeypatch.setattr(majority, "EXACT_OP_BUDGET", 0.0)
    majority._maj_from_counts.cache_clear()
    try:
        assert maj_at_k_method(classes, {0}, 8) == "monte_carlo"
        assert maj_at_k(classes, {0}, 8) == pytest.approx(exact, abs=0.035)
    finally:
        majority._maj_from_counts.cache_clear()


def test_bad_k_is_a_user_error() -> None:
    with pytest.raises(UserError, match="1 <= k <= number of samples"):
        maj_at_k([0, 1], {0}, 3)
    with pytest.raises(UserError):
        maj_at_k([0, 1], {0}, 0)
