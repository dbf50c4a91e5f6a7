"""The circuit breaker of a target lane: it opens for an outage, not for a flaky endpoint.

Two rules open it, whichever comes first:

- **rate**: at least ``failure_rate`` of the last ``window`` calls failed, once ``min_calls`` are
  in the window. A call's retries share its slot (the slot holds the latest attempt), so an
  endpoint failing 30 % of requests at random, answered on a retry, never nears the rate, while a
  dead one fills the window with failures within ``min_calls`` probes;
- **streak**: ``failures`` consecutive failures of distinct keys (semantic groups). A streak of a
  small k comes by chance on a flaky endpoint (0.3^5 within a few hundred calls), so its default is
  large: it is there for a caller that wants the old k-in-a-row behaviour.

After ``reset_s`` open it is half-open: up to ``trial_calls`` trials go through; the first one
answered closes the circuit, all of them failing opens it again. While open, calls fail at once
(``circuit_open``). The clock is injectable, so tests drive time.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from groundwatch.adapters.targets.guards import NORMAL, BreakerState, Permit
from groundwatch.adapters.targets.limits import TargetLimits
from groundwatch.adapters.throttle import Clock

#: The permit of a call let through a half-open circuit.
TRIAL = Permit(trial=True)


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    """When the circuit opens and how it closes again (see the module docstring)."""

    failures: int = 20
    failure_rate: float = 0.5
    window: int = 100
    min_calls: int = 20
    trial_calls: int = 3
    reset_s: float = 30.0

    @classmethod
    def of(cls, limits: TargetLimits) -> BreakerSettings:
        return cls(
            failures=limits.breaker_failures,
            failure_rate=limits.breaker_failure_rate,
            window=limits.breaker_window,
            min_calls=min(limits.breaker_min_calls, limits.breaker_window),
            trial_calls=limits.breaker_trial_calls,
            reset_s=limits.breaker_reset_s,
        )


class LaneBreaker:
    """Opens on a failure rate over recent calls or on a long streak; a few trials close it."""

    def __init__(self, settings: BreakerSettings, clock: Clock = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self.state = BreakerState.CLOSED
        #: call → failed, the latest attempt of each of the last ``window`` calls, oldest first
        self._window: OrderedDict[Hashable, bool] = OrderedDict()
        self._window_failures = 0
        self._streak = 0
        #: the keys of the current streak (a key counts once)
        self._streak_keys: set[str] = set()
        self._opened_at = 0.0
        self._trials_out = 0  # trials let through in this half-open spell (running or failed)
        self._trials_failed = 0
        self._trial_over: asyncio.Event | None = None
        #: (monotonic time, new state) of every change, oldest first (bounded).
        self.transitions: list[tuple[float, BreakerState]] = []
        self.on_change: Callable[[BreakerState], None] | None = None

    @property
    def window_calls(self) -> int:
        return len(self._window)

    @property
    def window_failures(self) -> int:
        return self._window_failures

    def _set(self, state: BreakerState) -> None:
        if state is self.state:
            return
        self.state = state
        if state is not BreakerState.HALF_OPEN:  # a fresh count after every open and close
            self._window.clear()
            self._window_failures = 0
            self._streak = 0
            self._streak_keys.clear()
        else:
            self._trials_out = self._trials_failed = 0
        self.transitions.append((self._clock(), state))
        del self.transitions[:-1000]
        if self.on_change is not None:
            self.on_change(state)

    def allow(self) -> Permit | None:
        """A permit for a call now, or None; half-open, only ``trial_calls`` trials in all."""
        if self.state is BreakerState.OPEN:
            if self._clock() - self._opened_at < self.settings.reset_s:
                return None
            self._set(BreakerState.HALF_OPEN)
        if self.state is BreakerState.HALF_OPEN:
            if self._trials_out >= self.settings.trial_calls:
                return None
            self._trials_out += 1
            if self._trial_over is None:
                self._trial_over = asyncio.Event()
            return TRIAL
        return NORMAL

    def half_open(self) -> None:
        """Let trials through now, however recently the circuit opened: a new cycle starts.
        The open circuit spares a struggling target the rest of *its* cycle; carried into the
        next one it turns every probe of a recovered endpoint into ``circuit_open``. A closed or
        half-open circuit is left as it is."""
        if self.state is BreakerState.OPEN:
            self._set(BreakerState.HALF_OPEN)

    def record(
        self, permit: Permit, ok: bool, key: str | None = None, call: Hashable | None = None
    ) -> None:
        """The outcome of a permitted call (``ok``: the target answered or failed for good).
        ``key`` names what was asked (a streak counts a key once); ``call`` names the request,
        so that its retries share one slot of the window (None: a slot of its own)."""
        if permit.trial:
            self._trial_done(ok)
            return
        if self.state is not BreakerState.CLOSED:
            return  # a call from before the circuit opened: only the trials decide now
        self._count(ok, call if call is not None else object())
        if ok:
            if self._streak:
                self._streak = 0
                self._streak_keys.clear()
            return
        if key is None:
            self._streak += 1
        elif key not in self._streak_keys:
            self._streak_keys.add(key)
            self._streak += 1
        if self._streak >= self.settings.failures or self._rate_reached():
            self._open()

    def _count(self, ok: bool, call: Hashable) -> None:
        window = self._window
        failed = not ok
        before = window.pop(call, None)  # a retry takes its call's place, at the newest end
        window[call] = failed
        if before is not None:
            self._window_failures += failed - before
        elif len(window) > self.settings.window:
            self._window_failures += failed - window.popitem(last=False)[1]
        else:
            self._window_failures += failed

    def _rate_reached(self) -> bool:
        n = len(self._window)
        s = self.settings
        return n >= s.min_calls and self._window_failures >= s.failure_rate * n

    def _open(self) -> None:
        self._opened_at = self._clock()
        self._set(BreakerState.OPEN)

    def _trial_done(self, ok: bool) -> None:
        if ok:
            self._set(BreakerState.CLOSED)
        elif self.state is BreakerState.HALF_OPEN:
            self._trials_failed += 1
            if self._trials_failed >= self.settings.trial_calls:
                self._open()
        self._wake()

    def release(self, permit: Permit) -> None:
        """Give a permit back without an outcome (the call was cancelled): a cancelled trial
        frees its place, so the circuit is not left half-open forever."""
        if permit.trial:
            if self.state is BreakerState.HALF_OPEN and self._trials_out > 0:
                self._trials_out -= 1
            self._wake()

    def _wake(self) -> None:
        if self._trial_over is not None:
            self._trial_over.set()
            self._trial_over = None

    async def acquire(self) -> Permit | None:
        """Like :meth:`allow`, but while the trials are out wait for an outcome instead of
        failing: probes arriving as the target recovers are then asked, not thrown away."""
        while True:
            permit = self.allow()
            if permit is not None or self.state is not BreakerState.HALF_OPEN:
                return permit
            if self._trial_over is None:
                self._trial_over = asyncio.Event()
            await self._trial_over.wait()
