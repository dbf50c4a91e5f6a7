"""The circuit breaker of a target lane: it opens for an outage, not for a flaky endpoint.

Both rules count *semantic groups* (the facts asked), not calls: one fact the endpoint always
fails on, asked in six forms, is one failed fact, not six failed calls. Two rules open it,
whichever comes first:

- **rate**: the failed share of the last ``window`` groups seen reaches ``failure_rate``, once
  ``min_groups`` are in the window. A group's failure is the share of its calls that failed,
  each call counted by its latest attempt (a retry that is answered makes the call answered),
  so every fact weighs the same however many forms it is asked in. A group asked again in a
  later cycle (:meth:`LaneBreaker.new_cycle`) starts afresh: last cycle's answers do not hide
  this cycle's failures. An endpoint failing a fifth of its facts in all their forms reads 0.2
  however the forms are ordered, one failing 95 % of requests at random reads 0.86 with two
  retries, and a dead one opens it at the ``min_groups``-th group's first failure. If each
  group fails in all its forms independently with chance p, a fresh count opens with chance
  about 0.2 % at p = 0.2 and 6 % at p = 0.3 (nearly all of it in the first groups, where the
  window is short), and practically never at p = 0.1;
- **streak**: ``failures`` consecutive failed calls of distinct groups. A streak of a small k
  comes by chance on a flaky endpoint (0.3^5 within a few hundred calls), so its default is
  large: it is there for a caller that wants a k-in-a-row rule.

An endpoint that flaps (answers everything for a while, then nothing) opens it when an outage
lasts ``failures`` groups, or when its failed groups reach ``failure_rate`` of the window;
shorter, rarer outages leave it closed. After ``reset_s`` open it is half-open: up to
``trial_calls`` trials go through; the first one answered closes the circuit, all of them
failing opens it again. Every open and close starts a fresh count. While open, calls fail at
once (``circuit_open``). The clock is injectable, so tests drive time.
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
    min_groups: int = 20
    trial_calls: int = 3
    reset_s: float = 30.0

    @classmethod
    def of(cls, limits: TargetLimits) -> BreakerSettings:
        return cls(
            failures=limits.breaker_failures,
            failure_rate=limits.breaker_failure_rate,
            window=limits.breaker_window,
            min_groups=min(limits.breaker_min_groups, limits.breaker_window),
            trial_calls=limits.breaker_trial_calls,
            reset_s=limits.breaker_reset_s,
        )


class LaneBreaker:
    """Opens on a failure rate over recent groups or on a long streak; a few trials close it."""

    def __init__(self, settings: BreakerSettings, clock: Clock = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self.state = BreakerState.CLOSED
        #: group → [failed calls, calls, the cycle it was asked in], the last ``window`` groups
        #: seen, the least recently seen first
        self._window: OrderedDict[Hashable, list[int]] = OrderedDict()
        #: the sum of the window's groups' failed shares
        self._window_failed = 0.0
        self._cycle = 0
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
    def window_groups(self) -> int:
        return len(self._window)

    @property
    def window_failed(self) -> float:
        """The failed groups in the window, each weighed by the share of its calls that failed."""
        return self._window_failed

    def _set(self, state: BreakerState) -> None:
        if state is self.state:
            return
        self.state = state
        if state is not BreakerState.HALF_OPEN:  # a fresh count after every open and close
            self._window.clear()
            self._window_failed = 0.0
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

    def new_cycle(self) -> None:
        """A new cycle starts: a group asked again is judged by this cycle's calls alone, and an
        open circuit lets trials through now, however recently it opened. The open circuit
        spares a struggling target the rest of *its* cycle; carried into the next one it turns
        every probe of a recovered endpoint into ``circuit_open``. A closed or half-open circuit
        is left as it is."""
        self._cycle += 1
        if self.state is BreakerState.OPEN:
            self._set(BreakerState.HALF_OPEN)

    def record(self, permit: Permit, ok: bool, key: str | None = None, retry: bool = False) -> None:
        """The outcome of a permitted attempt (``ok``: the target answered or failed for good).
        ``key`` names the semantic group asked, which both rules count once (None: a group of
        its own); ``retry`` marks an attempt repeating the group's last failed one, whose
        place it takes."""
        if permit.trial:
            self._trial_done(ok)
            return
        if self.state is not BreakerState.CLOSED:
            return  # a call from before the circuit opened: only the trials decide now
        self._count(ok, key if key is not None else object(), retry)
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

    def _count(self, ok: bool, group: Hashable, retry: bool) -> None:
        window = self._window
        seen = window.pop(group, None)  # a group seen again moves to the newest end
        if seen is None or seen[2] != self._cycle:  # new, or asked again in a later cycle
            if seen is not None:
                self._window_failed -= seen[0] / seen[1]
            elif len(window) >= self.settings.window:
                failed, calls, _ = window.popitem(last=False)[1]
                self._window_failed -= failed / calls
            seen = [0, 0, self._cycle]
        else:
            self._window_failed -= seen[0] / seen[1]
            if retry and seen[0]:  # the call's earlier attempt failed: this one replaces it
                seen[0] -= 1
                seen[1] -= 1
        seen[0] += not ok
        seen[1] += 1
        self._window_failed += seen[0] / seen[1]
        window[group] = seen

    def _rate_reached(self) -> bool:
        n = len(self._window)
        s = self.settings
        return n >= s.min_groups and self._window_failed >= s.failure_rate * n

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
