"""The circuit breaker of a failing target (the rate guard is :mod:`groundwatch.adapters.throttle`).

It takes an injectable monotonic clock so tests can drive time; the breaker records its state
changes so an operator (and a test) can see it open, probe and close.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from groundwatch.adapters.throttle import Clock


@dataclass(frozen=True, slots=True)
class Permit:
    """Leave to call the target; ``trial`` marks the one call let through a half-open circuit."""

    trial: bool


#: The permit of every call through a closed circuit: one shared object, not one per call.
NORMAL = Permit(trial=False)


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Opens after ``failures`` consecutive failures; after ``reset_s`` lets one trial through.

    A successful trial closes the circuit, a failed one opens it again for another ``reset_s``.
    While open, calls fail at once as ``circuit_open``: a struggling target gets time to recover
    instead of a retry storm, and probes do not queue up behind it.

    A failure may name what failed (``key``: the runner gives the semantic group): a streak
    then counts distinct keys. One fact the target always fails on (an HTTP 500 on one title,
    asked in six forms) is that fact's failure, not the target's: counted once, it no longer
    opens the circuit and turns every later probe of the cycle into ``circuit_open``; an outage
    fails every group and opens it as before.
    """

    def __init__(self, failures: int, reset_s: float, clock: Clock = time.monotonic) -> None:
        self.failures = failures
        self.reset_s = reset_s
        self._clock = clock
        self.state = BreakerState.CLOSED
        self._consecutive = 0
        #: the keys of the current failure streak (a key counts once)
        self._failed_keys: set[str] = set()
        self._opened_at = 0.0
        self._trial_running = False
        self._trial_over: asyncio.Event | None = None
        #: (monotonic time, new state) of every change, oldest first (bounded).
        self.transitions: list[tuple[float, BreakerState]] = []
        self.on_change: Callable[[BreakerState], None] | None = None

    def _set(self, state: BreakerState) -> None:
        if state is self.state:
            return
        self.state = state
        self.transitions.append((self._clock(), state))
        del self.transitions[:-1000]
        if self.on_change is not None:
            self.on_change(state)

    def allow(self) -> Permit | None:
        """A permit for a call now, or None; in half-open state only one trial at a time."""
        if self.state is BreakerState.OPEN:
            if self._clock() - self._opened_at < self.reset_s:
                return None
            self._set(BreakerState.HALF_OPEN)
        if self.state is BreakerState.HALF_OPEN:
            if self._trial_running:
                return None
            self._trial_running = True
            self._trial_over = asyncio.Event()
            return Permit(trial=True)
        return NORMAL

    def half_open(self) -> None:
        """Let one trial through now, however recently the circuit opened: a new cycle starts.
        The open circuit spares a struggling target the rest of *its* cycle; carried into the
        next one it turned every probe of a recovered endpoint into ``circuit_open`` and that
        cycle read "answered nothing". A closed or half-open circuit is left as it is."""
        if self.state is BreakerState.OPEN:
            self._set(BreakerState.HALF_OPEN)

    def record(self, permit: Permit, ok: bool, key: str | None = None) -> None:
        """The outcome of a permitted call (``ok`` = the target answered or failed for good);
        ``key`` names what was asked, so that repeated failures of one key count once."""
        if permit.trial:
            self._end_trial()
        elif self.state is not BreakerState.CLOSED:
            return  # a call from before the circuit opened: only the trial decides now
        if ok:
            self._consecutive = 0
            self._failed_keys.clear()
            self._set(BreakerState.CLOSED)
            return
        if key is None:
            self._consecutive += 1
        elif key not in self._failed_keys:
            self._failed_keys.add(key)
            self._consecutive += 1
        elif not permit.trial:
            return  # this key's failure is counted already
        if permit.trial or (
            self.state is BreakerState.CLOSED and self._consecutive >= self.failures
        ):
            self._opened_at = self._clock()
            self._failed_keys.clear()  # only a trial decides now; the streak's keys are spent
            self._set(BreakerState.OPEN)

    def release(self, permit: Permit) -> None:
        """Give a permit back without an outcome (the call was cancelled), so that a cancelled
        trial does not leave the circuit half-open forever."""
        if permit.trial:
            self._end_trial()

    def _end_trial(self) -> None:
        self._trial_running = False
        if self._trial_over is not None:
            self._trial_over.set()

    async def acquire(self) -> Permit | None:
        """Like :meth:`allow`, but while a trial is running wait for its outcome instead of
        failing: probes arriving as the target recovers are then asked, not thrown away."""
        while True:
            permit = self.allow()
            trial_over = self._trial_over
            if permit is not None or self.state is not BreakerState.HALF_OPEN or trial_over is None:
                return permit
            await trial_over.wait()
