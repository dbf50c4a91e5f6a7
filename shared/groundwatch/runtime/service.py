"""What every service shares: the FastAPI shell (health, readiness, metrics) around worker loops.

A service provides a :class:`ServiceParts` from its bootstrap — the bus, an optional database
engine, the consume loops and its Prometheus registry — and gets an app whose lifespan starts the
bus, makes sure the topics exist, runs the loops as tasks and tears everything down in order.
Nothing connects at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    generate_latest,
)
from sqlalchemy import Engine
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groundwatch.adapters.bus.base import Bus
from groundwatch.adapters.db.engine import ping as db_ping
from groundwatch.contracts import Topics
from groundwatch.errors import ConfigError
from groundwatch.runtime.consume import ConsumeLoop
from groundwatch.runtime.loop_metrics import LoopMetrics
from groundwatch.runtime.settings import CommonSettings, load_settings

log = logging.getLogger(__name__)

S = TypeVar("S", bound=CommonSettings)

#: Largest request body an HTTP service accepts (413 beyond). Every body they take is small JSON
#: (fault switches, a query, a run request), so a bigger one is a mistake or an attack on memory.
MAX_BODY_BYTES = 1024 * 1024


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes")


class BodySizeLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` with 413.

    A declared ``Content-Length`` is refused before anything is read; a chunked body is counted
    as it streams in and refused as soon as it passes the limit, so no handler ever buffers more.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)  # FastAPI renders it as a 413
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        response = JSONResponse(
            {"detail": f"request body larger than {self.max_bytes} bytes"}, status_code=413
        )
        await send({"type": "http.response.start", "status": 413, "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body})


class RefuseNul:
    """ASGI middleware answering 422 to a request whose path or query holds a NUL character.

    No route takes one (ids, names, statuses), and PostgreSQL cannot store or compare one: a
    store lookup with ``GET /groups/a%00b`` raised ``psycopg.DataError`` and answered 500. The
    refusal has FastAPI's validation-error shape, so it is the 422 every route documents.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            where = _nul_in(scope)
            if where is not None:
                detail = [
                    {
                        "type": "value_error",
                        "loc": list(where),
                        "msg": "Value error, a NUL character is not allowed",
                    }
                ]
                response = JSONResponse({"detail": detail}, status_code=422)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _nul_in(scope: Scope) -> tuple[str, ...] | None:
    """Where a request carries a NUL: ``("path",)`` or ``("query", name)``; None if nowhere."""
    from urllib.parse import parse_qsl

    if "\x00" in scope.get("path", ""):
        return ("path",)
    raw = scope.get("query_string", b"")
    if raw and (b"%00" in raw or b"\x00" in raw):
        for name, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                return ("query", name.replace("\x00", ""))
    return None


def add_input_guards(app: FastAPI, max_body_bytes: int = MAX_BODY_BYTES) -> None:
    """The request guards every groundwatch HTTP app has: 413 for a body over
    ``max_body_bytes``, 422 for a NUL in the path or the query."""
    app.add_middleware(RefuseNul)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)


@dataclass
class ServiceParts:
    """What a service's bootstrap hands to the shell."""

    bus: Bus
    topics: Topics
    registry: CollectorRegistry
    loops: list[ConsumeLoop[Any]] = field(default_factory=list)
    engine: Engine | None = None
    background: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)
    on_stop: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def build_app(
    name: str,
    bootstrap: Callable[[], Awaitable[ServiceParts]],
    *,
    routes: Callable[[FastAPI], None] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The app: ``/healthz`` (process up), ``/readyz`` (bus, database, loops), ``/metrics``;
    request bodies over ``max_body_bytes`` are refused with 413, a NUL in the path or query with
    422."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        parts = await bootstrap()
        app.state.parts = parts
        await parts.bus.start()
        await parts.bus.ensure_topics(parts.topics.all())
        metrics = LoopMetrics(parts.registry, name)
        tasks: list[asyncio.Task[None]] = []
        for loop in parts.loops:
            metrics.attach(loop)
            tasks.append(asyncio.create_task(loop.run(), name=f"{name}:{loop.source.name}"))
        tasks.extend(asyncio.create_task(job(), name=f"{name}:bg") for job in parts.background)
        app.state.tasks = tasks
        try:
            yield
        finally:
            for loop in parts.loops:
                loop.stop()
            for job in parts.on_stop:
                await job()
            done, pending = await asyncio.wait(tasks, timeout=10) if tasks else (set(), set())
            for t in pending:
                t.cancel()
            for t in done:
                if not t.cancelled() and t.exception() is not None:
                    log.error("%s task %s ended with %r", name, t.get_name(), t.exception())
            await parts.bus.stop()
            if parts.engine is not None:
                parts.engine.dispose()

    app = FastAPI(title=f"groundwatch {name}", lifespan=lifespan)
    add_input_guards(app, max_body_bytes)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process serves requests."""
        return {"status": "ok", "service": name}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> JSONResponse:
        """Readiness: bus and database reachable, every worker loop running and progressing."""
        parts: ServiceParts = app.state.parts
        checks: dict[str, bool] = {"bus": await parts.bus.ping()}
        if parts.engine is not None:
            checks["database"] = await asyncio.to_thread(db_ping, parts.engine)
        tasks: list[asyncio.Task[None]] = app.state.tasks
        # Consume loops must be running; a background job (start-up probing) may have finished,
        # but not with an exception.
        n_loops = len(parts.loops)
        loops_up = all(not t.done() for t in tasks[:n_loops]) and all(
            loop.ready.is_set() for loop in parts.loops
        )
        jobs_ok = all(
            not t.done() or t.cancelled() or t.exception() is None for t in tasks[n_loops:]
        )
        checks["workers"] = loops_up and jobs_ok
        # A loop that runs but gets nowhere (a batch retried for GW_STALL_AFTER_S) is not ready:
        # before, one unstorable message kept /readyz 200 through 63,770 retries.
        checks["progress"] = not any(loop.stalled() for loop in parts.loops)
        ok = all(checks.values())
        return JSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    async def metrics() -> Response:
        """Prometheus exposition of this service's registry."""
        parts: ServiceParts = app.state.parts
        return Response(generate_latest(parts.registry), media_type=CONTENT_TYPE_LATEST)

    if routes is not None:
        routes(app)
    return app


def settings_or_exit(cls: type[S]) -> S:
    """Load settings at start-up; on a bad value print the named field and exit 2."""
    try:
        return load_settings(cls)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def serve(app: FastAPI, settings: CommonSettings) -> None:
    """Run the app under uvicorn with the service's host/port/log level and event loop."""
    import uvicorn

    from groundwatch.runtime.loop import loop_name

    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # One line per probe (httpx requests, access logs of scrapes and probes) would drown what
    # matters and cost CPU on the hot path: those stay at WARNING unless DEBUG is asked for.
    if settings.log_level != "DEBUG":
        for noisy in ("httpx", "httpcore", "aiokafka"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=settings.log_level == "DEBUG",
        loop=loop_name(settings.event_loop),  # GW_EVENT_LOOP: uvloop when installed
    )


def instance_name(settings: CommonSettings, service: str) -> str:
    return settings.instance or f"{service}-{os.getpid()}"


@dataclass(frozen=True)
class Wiring:
    """What every service's bootstrap starts from: its registry, bus, topics and client id."""

    registry: CollectorRegistry
    bus: Bus
    topics: Topics
    client_id: str


def wiring(settings: CommonSettings, service: str) -> Wiring:
    """The bus (not yet connected), topic names and a fresh registry for one service instance."""
    from groundwatch.adapters.bus import make_bus

    client_id = instance_name(settings, service)
    bus = make_bus(
        settings.bus,
        bootstrap=settings.kafka_bootstrap,
        partitions=settings.partitions,
        client_id=client_id,
    )
    return Wiring(CollectorRegistry(), bus, Topics(settings.topic_prefix), client_id)
