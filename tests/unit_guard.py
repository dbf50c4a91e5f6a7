"""The unit tier starts no process: a test under tests/unit that does fails, naming what it ran.

The guard is an audit hook (:pep:`578`): every way the standard library starts a process raises
one of :data:`PROCESS_EVENTS` first (multiprocessing's spawn and forkserver through a wrapper the
guard installs, as they raise none), so a subprocess, a fork or a spawn is caught wherever it
comes from — the test, a fixture, or the product code under test (a tool it shells out to, a
child process it runs its exporter in). A test that needs one belongs in tests/integration.
"""

from __future__ import annotations

import multiprocessing.util
import sys
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

UNIT = Path(__file__).resolve().parent / "unit"

#: multiprocessing's "spawn" and "forkserver" start methods call ``_posixsubprocess.fork_exec``
#: through :func:`multiprocessing.util.spawnv_passfds`, which raises no audit event of its own:
#: the guard wraps it to raise this one.
SPAWN_EVENT = "multiprocessing.util.spawnv_passfds"

#: The audit events raised before a process is started (``os.fork`` covers multiprocessing's
#: default start method on Linux; ``subprocess.Popen`` covers ``os.popen`` and ``asyncio``'s).
PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "pty.spawn",
        SPAWN_EVENT,
    }
)


class _Guard:
    """Armed while a unit test runs; a hook cannot be removed, so it is disarmed instead."""

    armed: str | None = None  # the running unit test's id

    @classmethod
    def hook(cls, event: str, args: tuple[object, ...]) -> None:
        if cls.armed is not None and event in PROCESS_EVENTS:
            raise ProcessStartedInUnitTest(
                f"{cls.armed} started a process ({event}: {args[:2]!r}); a unit test starts "
                "none: make it in-process or move it to tests/integration"
            )


class ProcessStartedInUnitTest(RuntimeError):
    """What a unit test starting a process gets, raised where the process would have started."""


sys.addaudithook(_Guard.hook)


def _audited_spawnv_passfds(path: bytes, args: Sequence[Any], passfds: Sequence[int]) -> int:
    sys.audit(SPAWN_EVENT, path, args)
    return _spawnv_passfds(path, args, passfds)


_spawnv_passfds = multiprocessing.util.spawnv_passfds
multiprocessing.util.spawnv_passfds = _audited_spawnv_passfds  # looked up at each call


def in_unit_tier(path: Path) -> bool:
    return path.resolve().is_relative_to(UNIT)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Armed over the whole protocol of a unit test, not only its body: a module- or
    session-scoped fixture is set up in the setup phase of the first test that needs it and torn
    down after the last, and a process it starts is as much the unit tier's as the test's."""
    if not in_unit_tier(item.path):
        return (yield)
    _Guard.armed = item.nodeid
    try:
        return (yield)
    finally:
        _Guard.armed = None
