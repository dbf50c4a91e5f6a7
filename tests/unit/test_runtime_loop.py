"""GW_EVENT_LOOP: which loop the services and `groundwatch run` get."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from typing import Any

import pytest

from groundwatch.errors import ConfigError
from groundwatch.runtime import loop as gw_loop

pytestmark = pytest.mark.unit
HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed")
def test_auto_and_uvloop_run_on_uvloop_asyncio_on_the_standard_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert gw_loop.run(_loop_module(), "auto").startswith("uvloop")
    assert gw_loop.run(_loop_module(), "uvloop").startswith("uvloop")
    assert gw_loop.run(_loop_module(), "asyncio").startswith("asyncio")
    monkeypatch.setenv("GW_EVENT_LOOP", "asyncio")
    assert gw_loop.run(_loop_module()).startswith("asyncio")
    monkeypatch.delenv("GW_EVENT_LOOP")
    assert gw_loop.run(_loop_module()).startswith("uvloop")  # the default is auto


def test_auto_falls_back_and_an_explicit_uvloop_fails_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gw_loop.importlib.util, "find_spec", lambda name: None)
    assert gw_loop.loop_name("auto") == "asyncio"
    with pytest.raises(ConfigError, match="GW_EVENT_LOOP=uvloop"):
        gw_loop.loop_name("uvloop")
    with pytest.raises(ConfigError, match="GW_EVENT_LOOP=uvloop"):
        gw_loop.run(_loop_module(), "uvloop")


def test_a_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_EVENT_LOOP", "trio")
    with pytest.raises(ConfigError, match="GW_EVENT_LOOP"):
        gw_loop.run(_loop_module())


def test_services_hand_the_loop_to_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from fastapi import FastAPI

    from groundwatch.runtime.service import serve
    from groundwatch.runtime.settings import CommonSettings

    seen: dict[str, Any] = {}

    def run(server: uvicorn.Server) -> None:
        seen["loop"] = server.config.loop
        server.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    names = ("httpx", "httpcore", "aiokafka", "aiokafka.consumer.group_coordinator")
    noisy = [logging.getLogger(n) for n in names]
    levels = [n.level for n in noisy]  # serve() quiets them: given back for the other tests
    try:
        serve(FastAPI(), CommonSettings(event_loop="asyncio"))
        assert seen["loop"] == "asyncio"
        serve(FastAPI(), CommonSettings(event_loop="auto"))
        assert seen["loop"] == ("uvloop" if HAVE_UVLOOP else "asyncio")
    finally:
        for logger, level in zip(noisy, levels, strict=True):
            logger.setLevel(level)


def test_the_result_is_returned_and_never_formatted() -> None:
    """A run's result (its report) is handed back without its repr being made: the runner's
    end formats the main task, result included, and a report's repr was a 9 MB string."""

    class Report:
        reprs = 0

        def __repr__(self) -> str:
            Report.reprs += 1
            return "Report()"

    async def main() -> Report:
        return Report()

    out = gw_loop.run(main(), "asyncio")
    assert isinstance(out, Report) and Report.reprs == 0
