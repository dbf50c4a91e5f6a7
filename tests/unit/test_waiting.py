"""The tests' one way of waiting (tests/waiting.py): it returns what the condition returned once
it holds, and fails naming the condition and its last value when it never does."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.waiting import WaitTimedOut, until, until_awaited, wait_until

pytestmark = pytest.mark.unit


def test_wait_until_returns_the_first_true_value() -> None:
    counter = itertools.count()
    assert wait_until("the third call", lambda: next(counter) >= 2 and "third", step=0) == "third"


def test_wait_until_names_what_never_held() -> None:
    with pytest.raises(WaitTimedOut, match=r"the impossible \(last: 0\)"):
        wait_until("the impossible", lambda: 0, timeout=0.05, step=0.01)


async def test_until_lets_the_code_under_test_run_and_takes_coroutine_checks() -> None:
    done = asyncio.Event()
    asyncio.get_running_loop().call_soon(done.set)
    assert await until("the event", done.is_set) is True

    async def ready() -> str | None:
        return "yes" if done.is_set() else None

    assert await until("the coroutine check", ready) == "yes"


@pytest.mark.looptime  # the deadline is the loop's virtual one: the test costs no time
async def test_until_and_until_awaited_time_out_with_what_they_waited_for() -> None:
    with pytest.raises(WaitTimedOut, match=r"after 5 s waiting for nothing \(last: \[\]\)"):
        await until("nothing", list, timeout=5)
    with pytest.raises(WaitTimedOut, match="the event"):
        await until_awaited("the event", asyncio.Event().wait(), timeout=5)
