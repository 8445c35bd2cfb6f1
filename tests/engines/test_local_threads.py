"""ThreadTuner (engines/local/threads.py): the local worker's thread count, measured and chosen, on a simulated machine
(a clock the test advances by each step's time). The real engine under a real CPU burner: bench/local_throughput.py."""

from __future__ import annotations

from typing import Callable

import pytest

from reasoneval.engines.local.threads import ThreadTuner, candidate_counts


class Machine:
    """A clock, and a tokens/s for each thread count that the test can change while the tuner runs."""

    def __init__(self, rates: dict[int, float]) -> None:
        self.now = 0.0
        self.rates = rates

    def clock(self) -> float:
        return self.now

    def run(self, tuner: ThreadTuner, seconds: float, tokens: int = 16) -> dict[int, float]:
        """Generation steps for `seconds` of simulated time; returns the time spent at each thread count."""
        spent: dict[int, float] = {}
        end = self.now + seconds
        while self.now < end:
            threads = tuner.next_threads()
            step = tokens / self.rates[threads]
            self.now += step
            spent[threads] = spent.get(threads, 0.0) + step
            tuner.record(threads, tokens, step)
        return spent


def tokens_per_s(machine: Machine, spent: dict[int, float]) -> float:
    total = sum(spent.values())
    return sum(machine.rates[t] * s for t, s in spent.items()) / total


def test_candidates_halve_down_to_one() -> None:
    assert candidate_counts(1) == [1]
    assert candidate_counts(2) == [1, 2]
    assert candidate_counts(6) == [1, 3, 6]
    assert candidate_counts(16) == [1, 2, 4, 8, 16]


QUIET = {1: 80.0, 2: 150.0}  # measured on 2 quiet cores: 2 threads ~1.9x one
BUSY = {1: 9.7, 2: 0.8}  # measured with other work on the 2 cores (issue 39's figures)


@pytest.mark.parametrize("rates, best", [(QUIET, 2), (BUSY, 1)])
def test_it_settles_on_the_faster_count_and_keeps_most_of_its_rate(rates: dict[int, float], best: int) -> None:
    machine = Machine(rates)
    tuner = ThreadTuner(2, clock=machine.clock)
    spent = machine.run(tuner, 600.0)
    assert tuner.choice == best and tuner.explorations >= 2
    # Exploring costs little: over 10 minutes the rate stays within 10% of always running the best count.
    assert tokens_per_s(machine, spent) >= 0.9 * rates[best]


def test_a_machine_that_gets_busy_is_noticed_within_seconds_and_a_quiet_one_again_within_the_period() -> None:
    machine = Machine(dict(QUIET))
    tuner = ThreadTuner(2, exploit_s=10.0, clock=machine.clock)
    machine.run(tuner, 60.0)
    assert tuner.choice == 2
    machine.rates.update(BUSY)  # another process takes a core
    t_busy = machine.now
    while tuner.choice != 1:
        machine.run(tuner, 0.5)
    # The starved choice's steps are long (20 s at 0.8 tok/s for 16 tokens): noticed after the 8 it watches.
    assert machine.now - t_busy < 8 * 16 / BUSY[2] + 30
    machine.rates.update(QUIET)  # the other process ends
    t_quiet = machine.now
    while tuner.choice != 2:
        machine.run(tuner, 0.5)
    assert machine.now - t_quiet < 20 * 25 + 10  # within the period (at most 20x the last exploration's time)


@pytest.mark.parametrize("most, rates", [
    (8, {1: 10.0, 2: 19.0, 4: 35.0, 8: 60.0}),
    (8, {1: 10.0, 2: 19.0, 4: 30.0, 8: 3.0}),  # half the cores taken
    (6, {1: 10.0, 3: 25.0, 6: 12.0}),
])
def test_more_cores(most: int, rates: dict[int, float]) -> None:
    machine = Machine(rates)
    tuner = ThreadTuner(most, clock=machine.clock)
    machine.run(tuner, 300.0)
    assert tuner.choice == max(rates, key=rates.__getitem__)


def test_one_thread_has_nothing_to_choose() -> None:
    machine = Machine({1: 50.0})
    tuner = ThreadTuner(1, clock=machine.clock)
    spent = machine.run(tuner, 100.0)
    assert set(spent) == {1} and tuner.explorations == 0


def test_steps_without_tokens_or_time_are_ignored() -> None:
    now = [0.0]
    clock: Callable[[], float] = lambda: now[0]  # noqa: E731
    tuner = ThreadTuner(2, clock=clock)
    now[0] = 10.0
    for _ in range(10):
        tuner.record(tuner.next_threads(), 0, 0.1)
        tuner.record(tuner.next_threads(), 5, 0.0)
    assert tuner.explorations == 0 and tuner.exploring
