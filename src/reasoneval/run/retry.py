"""How the runner retries a failed request, and when it gives up on the engine (its defaults are `run`'s)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    # Backoff before retry r (1-based): uniform(0, min(cap, base * 2**(r-1))) ("full jitter").
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0
    # This many samples in a row that used up their retries on connection errors means the server
    # is down: stop the run (finished samples are kept) rather than fail every remaining sample.
    down_after: int = 3
    # This many failures of the engine itself (a worker or server died; one death that fails every
    # request in its batch counts once) with no sample finished in between stop the run.
    engine_down_after: int = 3
    # The breaker (`Breaker`): a server that answers but fails every request stops the run after this many
    # failed answers in a row with none succeeding, for at least `breaker_window_s` (502/503/504 alone, a server
    # restarting behind a proxy: `unavailable_window_s`), or at once after `breaker_burst` + 2 x concurrency.
    breaker_after: int = 5
    breaker_window_s: float = 5.0
    unavailable_window_s: float = 60.0
    breaker_burst: int = 8
    # Rate limits (429): a request the server rate-limits waits (Retry-After when given, else the backoff) and is
    # asked again without using one of its retries; but when every answer has been a 429 for this long with no
    # request succeeding, or the server asks for a longer wait than this, the run stops (exit 4): `--rate-limit-window`.
    rate_limit_window_s: float = 300.0

    def delay(self, retry: int, rng: random.Random, retry_after: float | None = None) -> float:
        d = rng.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2 ** (retry - 1)))
        return max(d, retry_after or 0.0)
