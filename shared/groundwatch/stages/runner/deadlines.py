"""Per-attempt deadlines of one lane, kept with one timer instead of one timer per attempt.

``asyncio.timeout`` arms a loop timer per attempt: a ``TimerHandle`` pushed on the loop's heap
(log n Python-level comparisons, with every cancelled timer left on the heap until it is due or
swept) and cancelled again when the reply comes — at thousands of requests per second with a
timeout of seconds, a heap of tens of thousands of dead timers, and several microseconds per
request. Within one lane every attempt has the same timeout and attempts start in time order, so
their deadlines come in order too: a FIFO of entries and a single timer at the oldest live one
give the same deadlines, exactly, for a deque append and a flag per attempt.

Semantics follow ``asyncio.timeout``: an expired attempt's task is cancelled, and the
cancellation is turned into a timeout only where it was caused by the deadline (the task's
``uncancel`` count says so); a cancellation from outside stays a cancellation.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Deadline:
    """One attempt's deadline; ``expired`` once the lane cancelled its task for it."""

    __slots__ = ("_cancelling", "at", "done", "expired", "task")

    def __init__(self, task: asyncio.Task[object], at: float) -> None:
        self.task = task
        self.at = at
        self.done = False
        self.expired = False
        self._cancelling = task.cancelling()

    def timed_out(self) -> bool:
        """Called on ``CancelledError``: whether it is this deadline's (then swallowed) or not.

        Like ``asyncio.Timeout.__aexit__``: our own cancel is taken back with ``uncancel``; if
        someone else cancelled the task too, the count stays above where it started and the
        cancellation goes on."""
        return self.expired and self.task.uncancel() <= self._cancelling


class Deadlines:
    """The deadlines of a lane's attempts, all ``timeout`` long, in the order they started."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._pending: deque[Deadline] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> Deadline:
        """A deadline ``timeout`` from now for the current task."""
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - lanes always run in tasks
            raise RuntimeError("a deadline needs a running task")
        loop = task.get_loop()
        entry = Deadline(task, loop.time() + self.timeout)
        self._pending.append(entry)
        if self._timer is None:
            self._timer = loop.call_at(entry.at, self._expire)
        return entry

    def finish(self, entry: Deadline) -> None:
        """The attempt is over (whatever its outcome); finished entries leave from the front."""
        entry.done = True
        pending = self._pending
        while pending and pending[0].done:
            pending.popleft()

    def _expire(self) -> None:
        """Cancel every attempt past its deadline; re-arm at the oldest one still running."""
        self._timer = None
        pending = self._pending
        if not pending:
            return
        loop = pending[0].task.get_loop()
        now = loop.time()
        while pending and (pending[0].done or pending[0].at <= now):
            entry = pending.popleft()
            if not entry.done:
                entry.expired = True
                entry.task.cancel()
        if pending:
            self._timer = loop.call_at(pending[0].at, self._expire)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()
