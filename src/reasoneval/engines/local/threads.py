"""How many threads a local worker's llama.cpp decodes with: measured while it decodes, and chosen.

llama.cpp's CPU threads meet at a barrier after every operation of the graph, and wait there by spinning. On a quiet
machine each thread has a core and the spin costs nothing: more threads, more tokens/s. On a busy machine (a laptop
doing other work, a shared CI box) a thread that loses its core holds every other thread spinning at the next barrier
until the scheduler gives it back: measured on 2 cores with other work running, a loop with 2 threads made
0.8 tok/s and with 1 thread 9.7 tok/s. No fixed count is right for both, so the worker measures and chooses.

ThreadTuner, per worker: it runs the generation steps (one token of every generating sequence, the bulk of the
work) with its chosen count, and every `exploit_s` seconds (or at once when the step rate falls below half of what
the choice measured: the machine got busy) it explores: the candidate counts (threads, threads/2, ..., 1) take
turns step by step, so each is measured on the same mix of sequences at the same moment; a candidate under 2/3 of
the best after a round drops out, so a starved count costs one step, not a window; after `rounds` rounds (or when one
candidate is left) the best tokens/s becomes the choice. The period grows to at least 20x the time the exploration
took, so exploring costs about a twentieth of the time even where one candidate is very slow.

The thread count changes no sample: llama.cpp splits an operation's output rows among its threads and computes each
row whole in one thread, so the logits are the same bits with any count (tests/engines/test_local.py checks every
logits row with 1 and 2 threads).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


def candidate_counts(most: int) -> list[int]:
    """most, most/2, most/4, ..., 1 (ascending): the counts worth measuring."""
    return sorted({max(1, most >> i) for i in range(max(1, most.bit_length()))})


@dataclass(eq=False)  # a tuner is one worker's state: compared by identity
class ThreadTuner:
    """Chooses the thread count of each generation step from measured tokens/s (see the module docstring)."""

    most: int
    exploit_s: float = 10.0
    rounds: int = 3
    drop_below: float = 2 / 3
    starved_below: float = 0.5
    clock: Callable[[], float] = time.perf_counter

    def __post_init__(self) -> None:
        self.candidates = candidate_counts(self.most)
        self.choice = self.most
        self.explorations = 0
        self.chosen_rate: float | None = None  # tokens/s of the choice when it was chosen
        self._recent: list[tuple[int, float]] = []  # the choice's last steps while exploiting
        self._exploring: list[int] = []  # candidates still measured in this exploration
        self._turn = 0
        self._round = 0
        self._measured: dict[int, list[float]] = {}  # candidate -> [tokens, seconds] this exploration
        self._explore_started = 0.0
        self._next_explore = self.clock() + min(2.0, self.exploit_s)  # a first measurement soon after the start

    @property
    def exploring(self) -> bool:
        return bool(self._exploring)

    def next_threads(self) -> int:
        """The thread count for the next generation step."""
        if not self._exploring and len(self.candidates) > 1 and self.clock() >= self._next_explore:
            self._start_exploring()
        if self._exploring:
            return self._exploring[self._turn % len(self._exploring)]
        return self.choice

    def record(self, threads: int, tokens: int, seconds: float) -> None:
        """A generation step of `tokens` tokens took `seconds` with `threads` threads."""
        if tokens <= 0 or seconds <= 0:
            return
        if not self._exploring:
            if threads == self.choice:
                self._watch(tokens, seconds)
            return
        tally = self._measured.setdefault(threads, [0.0, 0.0])
        tally[0] += tokens
        tally[1] += seconds
        self._turn += 1
        if self._turn % len(self._exploring) == 0:
            self._end_round()

    def _rate(self, threads: int) -> float:
        tokens, seconds = self._measured.get(threads, (0.0, 0.0))
        return tokens / seconds if seconds > 0 else 0.0

    def _start_exploring(self) -> None:
        self._exploring = list(self.candidates)
        self._turn = self._round = 0
        self._measured = {}
        self._explore_started = self.clock()

    def _end_round(self) -> None:
        self._round += 1
        best = max(self._rate(c) for c in self._exploring)
        self._exploring = [c for c in self._exploring if self._rate(c) >= self.drop_below * best]
        self._turn = 0
        if self._round >= self.rounds or len(self._exploring) <= 1:
            self.choice = max(self._exploring, key=self._rate)
            self.chosen_rate = self._rate(self.choice)
            self.explorations += 1
            took = self.clock() - self._explore_started
            self._next_explore = self.clock() + max(self.exploit_s, 20 * took)
            self._exploring = []
            self._recent = []

    def _watch(self, tokens: int, seconds: float) -> None:
        """While exploiting: explore at once when the choice's rate over its last steps falls far below what it was
        chosen for (the machine got busy)."""
        self._recent.append((tokens, seconds))
        if len(self._recent) < 8:
            return
        rate = sum(t for t, _ in self._recent) / sum(s for _, s in self._recent)
        self._recent = []
        if self.chosen_rate is not None and rate < self.starved_below * self.chosen_rate:
            self._next_explore = self.clock()
