"""The unit tier's guard (tests/unit_guard.py): a process started from a unit test is refused
where it would start, whichever way it is started."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
from typing import Any

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


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_multiprocessing_start_method_that_execs_is_refused(
    method: str,
) -> None:
    context: Any = multiprocessing.get_context(method)  # typeshed's BaseContext has no Process
    process = context.Process(target=print)
    with pytest.raises(ProcessStartedInUnitTest, match="spawnv_passfds"):
        process.start()


async def test_an_asyncio_subprocess_is_refused() -> None:
    with pytest.raises(ProcessStartedInUnitTest):
        await asyncio.create_subprocess_exec("true")


@pytest.fixture(scope="module")
def refused_in_a_module_fixture() -> str:
    """A module-scoped fixture is set up before any function-scoped one: the guard must already
    be armed then, so a process it starts is refused too."""
    try:
        subprocess.run(["true"], check=False)
    except ProcessStartedInUnitTest as refused:
        return str(refused)
    return "started"


def test_a_subprocess_from_a_module_fixture_is_refused(refused_in_a_module_fixture: str) -> None:
    assert "started a process" in refused_in_a_module_fixture
