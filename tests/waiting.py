"""Waiting in tests for what the code under test does, never for a fixed time.

A test that sleeps a fixed time and then asserts guesses how long the machine takes; under load
(8 to 20 on two cores) the guess is wrong and the test flakes, and when it is right the test
waits longer than it needs. Instead a test waits on the mechanism: an ``asyncio.Event`` the code
sets, or — where the code offers no such signal — a condition polled until it holds, with a
deadline that only a broken mechanism reaches (:data:`GENEROUS_S`). These are the one place the
tests poll.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")

#: The deadline of a wait that should end at once: far beyond what a loaded machine needs, so
#: only a mechanism that never acts reaches it.
GENEROUS_S = 30.0


class WaitTimedOut(AssertionError):
    """The condition never held: the message names it and the last value seen."""


def wait_until(
    what: str,
    check: Callable[[], T | None],
    timeout: float = GENEROUS_S,
    step: float = 0.05,
) -> T:
    """Call ``check`` until it returns something true, and return that; fails naming ``what``
    after ``timeout`` seconds. For a test that is not a coroutine (a thread, a subprocess)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimedOut(f"timed out after {timeout} s waiting for {what} (last: {value!r})")
        time.sleep(step)


@overload
async def until(  # a coroutine check: its awaited value
    what: str,
    check: Callable[[], Awaitable[T | None]],
    timeout: float = ...,
    step: float = ...,
) -> T: ...


@overload
async def until(
    what: str, check: Callable[[], T | None], timeout: float = ..., step: float = ...
) -> T: ...


async def until(
    what: str,
    check: Callable[[], object],
    timeout: float = GENEROUS_S,
    step: float = 0.01,
) -> Any:
    """The coroutine's :func:`wait_until`: ``check`` (a function or a coroutine function) is
    called on the loop between steps, so the code under test runs meanwhile. Under a virtual
    clock (looptime) the steps cost no time and the deadline is the loop's."""
    last: list[object] = []

    async def poll() -> object:
        while True:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            last[:] = [value]
            await asyncio.sleep(step)

    try:
        async with asyncio.timeout(timeout):
            return await poll()
    except TimeoutError:
        seen = repr(last[0]) if last else "nothing"
        raise WaitTimedOut(
            f"timed out after {timeout} s waiting for {what} (last: {seen})"
        ) from None


async def until_awaited(what: str, awaitable: Awaitable[T], timeout: float = GENEROUS_S) -> T:
    """Await ``awaitable`` (an event's ``wait()``, a task) under a deadline; fails naming
    ``what`` rather than hanging the run until pytest-timeout."""
    try:
        async with asyncio.timeout(timeout):
            return await awaitable
    except TimeoutError:
        raise WaitTimedOut(f"timed out after {timeout} s waiting for {what}") from None
