"""A token bucket: the one rate limiter both the targets under test and the LLM client use.

It sits beside the adapters rather than inside either, so neither imports the other. It takes an
injectable monotonic clock so tests can drive time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

Clock = Callable[[], float]

# A refill of exactly one token can come out a hair under 1.0 in floating point; without the slack
# the bucket would ask for a sleep far below any clock's tick and spin until the clock moves.
_SLACK = 1e-9


class TokenBucket:
    """At most ``rate`` acquisitions per second on average, ``depth`` at once after a pause.

    Waiters are served first come, first served (the lock is held while sleeping), so a burst
    of probes cannot starve an earlier one.
    """

    def __init__(self, rate: float, depth: int, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or depth < 1:
            raise ValueError("rate must be > 0 and depth >= 1")
        self.rate = rate
        self.depth = float(depth)
        self._clock = clock
        self._tokens = float(depth)
        self._stamp = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.depth, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self) -> None:
        async with self._lock:
            self._refill()
            while self._tokens < 1.0 - _SLACK:
                await asyncio.sleep((1.0 - self._tokens) / self.rate)
                self._refill()
            self._tokens = max(0.0, self._tokens - 1.0)
