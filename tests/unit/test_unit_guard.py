"""The unit tier's guard (tests/unit_guard.py): a process started from a unit test is refused
where it would start, whichever way it is started."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from tests.unit_guard import ProcessStartedInUnitTest

pytestmark = pytest.mark.unit


def test_a_subprocess_is_refused() -> None:
    with pytest.raises(ProcessStartedInUnitTest, match="test_a_subprocess_is_refused"):
        subprocess.run(["true"], check=False)
    with pytest.raises(ProcessStartedInUnitTest):
        os.system("true")


def test_a_fork_is_refused() -> None:
    with pytest.raises(ProcessStartedInUnitTest, match=r"os\.fork"):
        if os.fork() == 0:  # only if the guard failed: the child must not run the tests on
            os._exit(0)


async def test_an_asyncio_subprocess_is_refused() -> None:
    with pytest.raises(ProcessStartedInUnitTest):
        await asyncio.create_subprocess_exec("true")
