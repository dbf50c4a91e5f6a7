"""A per-target rate limit on traffic ingest: each target's records in a token bucket.

One misbehaving app (a retry storm, a replayed export) must not crowd the others' traffic out of
the grounding stage or fill the topic: each target gets ``rate`` records a second on average and
``burst`` at once. A batch is taken whole or not at all, as the endpoints accept it, so a refused
batch costs nothing and can be sent again as it is after the wait the refusal names
(``Retry-After``). The clock is injectable: tests drive time, nothing sleeps here.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable

Clock = Callable[[], float]

#: Targets whose buckets are remembered; past it the fullest (idle longest) are forgotten, so
#: a flood of made-up target names cannot grow memory without bound.
MAX_TARGETS = 10_000


class RateLimited(Exception):
    """A batch over some target's budget: nothing of it was taken."""

    def __init__(self, target: str, retry_after_s: float) -> None:
        super().__init__(f"target {target!r} is over its traffic rate limit")
        self.target = target
        self.retry_after_s = retry_after_s

    @property
    def retry_after(self) -> str:
        """The ``Retry-After`` header's value: whole seconds, at least 1."""
        return str(max(1, math.ceil(self.retry_after_s)))


class TooLargeForLimit(ValueError):
    """A batch holding more records of one target than its bucket ever holds."""


class TargetRateLimit:
    """``rate`` records a second per target on average, ``burst`` at once after a pause."""

    def __init__(self, rate: float, burst: int, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate = rate
        self.burst = float(burst)
        self._clock = clock
        #: target -> (tokens, when they were counted)
        self._buckets: dict[str, tuple[float, float]] = {}

    def _tokens(self, target: str, now: float) -> float:
        tokens, stamp = self._buckets.get(target, (self.burst, now))
        return min(self.burst, tokens + (now - stamp) * self.rate)

    def take(self, targets: Iterable[str]) -> None:
        """Take one token per record (``targets``: each record's target) or none: raises
        :class:`RateLimited` with the wait after which the same batch fits, or
        :class:`TooLargeForLimit` when it never can."""
        wanted = Counter(targets)
        now = self._clock()
        worst: tuple[float, str] | None = None
        left: dict[str, float] = {}
        for target, n in wanted.items():
            if n > self.burst:
                raise TooLargeForLimit(
                    f"{n} records of target {target!r} in one batch; its rate limit takes at"
                    f" most {int(self.burst)} at once (GW_TRAFFIC_BURST)"
                )
            tokens = self._tokens(target, now)
            if tokens < n:
                wait = (n - tokens) / self.rate
                if worst is None or wait > worst[0]:
                    worst = (wait, target)
            left[target] = tokens - n
        if worst is not None:
            raise RateLimited(worst[1], worst[0])
        for target, tokens in left.items():
            self._buckets[target] = (tokens, now)
        if len(self._buckets) > MAX_TARGETS:
            self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop the buckets that have refilled (a forgotten one starts full: the same)."""
        full = [t for t in self._buckets if self._tokens(t, now) >= self.burst]
        for target in full:
            del self._buckets[target]
        while len(self._buckets) > MAX_TARGETS:  # all busy: the fullest go first
            del self._buckets[max(self._buckets, key=lambda t: self._tokens(t, now))]
