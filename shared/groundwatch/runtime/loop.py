"""Which event loop the services and ``groundwatch run`` run on: uvloop when installed.

The runner's cost per probe is mostly event-loop work (task steps, futures, socket callbacks),
and uvloop does that work in C: against a local 5 ms target with 64 in flight it took
the bare asyncio client from about 25 to 22 µs of CPU per request and the runner's lane from
about 29 to 27 µs. ``GW_EVENT_LOOP`` picks it: ``auto`` (uvloop if importable, else asyncio),
``asyncio`` (the standard loop, e.g. to rule the loop out when debugging) or ``uvloop`` (and
fail at start-up when it is missing, rather than run slower unnoticed).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from groundwatch.errors import ConfigError

EventLoopChoice = Literal["auto", "asyncio", "uvloop"]
T = TypeVar("T")


class LoopSettings(BaseSettings):
    """The event-loop setting alone, so the CLI can read it without a service's settings."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    event_loop: EventLoopChoice = Field(
        "auto",
        description="Event loop of the services and `groundwatch run`: 'auto' (uvloop when"
        " installed), 'asyncio' or 'uvloop'.",
    )


def loop_name(choice: EventLoopChoice) -> Literal["asyncio", "uvloop"]:
    """The loop ``choice`` means on this machine; ``uvloop`` missing is a :class:`ConfigError`."""
    installed = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not installed:
        raise ConfigError("GW_EVENT_LOOP=uvloop, but uvloop is not installed")
    if choice == "asyncio" or not installed:
        return "asyncio"
    return "uvloop"


def loop_factory(choice: EventLoopChoice) -> Callable[[], asyncio.AbstractEventLoop]:
    """A function making a new loop of the kind ``choice`` means (see :func:`loop_name`)."""
    if loop_name(choice) == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T], choice: EventLoopChoice | None = None) -> T:
    """``asyncio.run(main)`` on the chosen loop (``GW_EVENT_LOOP`` when ``choice`` is None)."""
    try:
        if choice is None:
            choice = LoopSettings().event_loop
        factory = loop_factory(choice)
    except ValidationError as exc:
        main.close()  # never started: no "coroutine was never awaited" warning
        problem = exc.errors(include_url=False)[0]["msg"]
        raise ConfigError(f"invalid configuration: GW_EVENT_LOOP: {problem}") from None
    except ConfigError:
        main.close()
        raise
    from groundwatch.runtime.allocator import limit_arenas

    limit_arenas()  # before the loop's worker threads: see the module
    result: list[T] = []
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_kept_aside(main, result))
    return result[0]


async def _kept_aside(main: Coroutine[Any, Any, T], result: list[T]) -> None:
    """Run ``main`` and put its result in ``result``, not in the task's: after the task ends,
    CPython 3.11's ``Runner.run`` asks ``signal.getsignal(SIGINT)``, whose enum lookup formats
    its own handler — a partial holding the main task — into an error message it discards, and
    a done task's repr holds its result's. A run's result is its report: its pydantic repr was a
    9 MB string at a 50k-probe ``run --once`` (a 15 MB spike at the very end, the run's peak)."""
    result.append(await main)


__all__ = ["EventLoopChoice", "LoopSettings", "loop_factory", "loop_name", "run"]
