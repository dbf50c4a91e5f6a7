"""What every service shares: the FastAPI shell (health, readiness, telemetry) around worker loops.

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
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

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
from groundwatch.runtime.loop_telemetry import LoopTelemetry
from groundwatch.runtime.settings import READY_DEADLINE_S, CommonSettings, load_settings

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


#: Exit status of a service whose worker loop cannot go on (uvicorn's start-up failure is 3 too).
FATAL_EXIT = 3
#: Seconds a failed service is given to shut down cleanly before it is ended at once.
FATAL_GRACE_S = 20.0
#: Default of ``GW_LIVENESS_TIMEOUT_S``.
LIVENESS_TIMEOUT_S = 300.0


class Watched(Protocol):
    """A worker that is not a consume loop (the generator's cycle loop): the shell reads its
    heartbeat for liveness and its failure to exit the process."""

    @property
    def name(self) -> str: ...

    def heartbeat_age(self) -> float | None:
        """Seconds since its last sign of life; None while it is idle (nothing to watch)."""
        ...

    def failure(self) -> BaseException | None:
        """The error it ended with, if it ended and cannot go on."""
        ...


class DeadlineCheck:
    """One dependency check (a bus or database ping) that answers within a deadline.

    A ping of a frozen broker or a database behind a dropped link does not fail, it hangs; here
    it counts as down once the deadline passes, and keeps running on its own: the next probe
    waits on the same ping (at most one in flight) rather than start another, so a long outage
    does not pile up pings (threads, connections) one per probe."""

    def __init__(self, ping: Callable[[], Awaitable[bool]]) -> None:
        self._ping = ping
        self._task: asyncio.Future[bool] | None = None

    async def __call__(self, deadline_s: float) -> bool | None:
        """True: up; False: down; None: no answer within ``deadline_s`` (down, for readiness)."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._ping())
            self._task.add_done_callback(_consume_error)
        try:
            return bool(await asyncio.wait_for(asyncio.shield(self._task), deadline_s))
        except TimeoutError:
            return None
        except Exception:
            return False


def _consume_error(task: asyncio.Future[bool]) -> None:
    # a ping that failed after its probe had given up: its error was said as "down" already
    if not task.cancelled():
        task.exception()


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
    watched: list[Watched] = field(default_factory=list)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:500]}" if text else type(exc).__name__


def fail_service(app: FastAPI, name: str, what: str, exc: BaseException) -> None:
    """A worker cannot go on: say so in one line and end the process non-zero (when ``serve``
    runs it), so that the supervisor (Kubernetes, compose, systemd) restarts it. Before, a loop
    that died left the process up and ``/healthz`` 200: nothing restarted it."""
    if getattr(app.state, "fatal", None) is not None:
        return
    app.state.fatal = f"{what}: {_one_line(exc)}"
    log.critical(
        "%s: %s cannot go on (%s); exiting with status %d for a restart",
        name,
        what,
        _one_line(exc),
        FATAL_EXIT,
    )
    exit_hook: Callable[[], None] | None = getattr(app.state, "exit_on_fatal", None)
    if exit_hook is not None:
        exit_hook()


def liveness(
    parts: ServiceParts, tasks: list[asyncio.Task[None]], timeout_s: float
) -> dict[str, str]:
    """What is wrong with the workers, by name (empty: all alive): a consume loop whose task
    ended or whose heartbeat is older than ``timeout_s``, a watched worker that failed or went
    quiet."""
    problems: dict[str, str] = {}
    for loop, task in zip(parts.loops, tasks, strict=False):
        if task.done():
            problems[loop.name] = "ended"
        elif (age := loop.heartbeat_age()) > timeout_s:
            problems[loop.name] = f"no heartbeat for {age:.0f}s"
    for job, task in zip(parts.background, tasks[len(parts.loops) :], strict=False):
        if task.done() and not task.cancelled() and task.exception() is not None:
            problems[getattr(job, "__name__", "background")] = "failed"
    for w in parts.watched:
        if w.failure() is not None:
            problems[w.name] = "failed"
        elif (quiet := w.heartbeat_age()) is not None and quiet > timeout_s:
            problems[w.name] = f"no heartbeat for {quiet:.0f}s"
    return problems


def build_app(
    name: str,
    bootstrap: Callable[[], Awaitable[ServiceParts]],
    *,
    routes: Callable[[FastAPI], None] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    liveness_timeout_s: float = LIVENESS_TIMEOUT_S,
    ready_deadline_s: float = READY_DEADLINE_S,
) -> FastAPI:
    """The app: ``/healthz`` (every worker alive), ``/readyz`` (bus, database, loops progressing;
    answered within ``ready_deadline_s``: a check with no answer by then is down), ``/metrics``;
    request bodies over ``max_body_bytes`` are refused with 413, a NUL in the path or query with
    422. A worker loop or background job that ends with an error, or a watched
    worker that fails, ends the process (:func:`fail_service`)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.fatal = None
        app.state.stopping = False
        parts = await bootstrap()
        app.state.parts = parts
        engine = parts.engine
        app.state.bus_check = DeadlineCheck(parts.bus.ping)
        app.state.db_check = (
            DeadlineCheck(lambda: asyncio.to_thread(db_ping, engine))
            if engine is not None
            else None
        )
        await parts.bus.start()
        await parts.bus.ensure_topics(parts.topics.all())
        telemetry = LoopTelemetry(parts.registry, name)
        tasks: list[asyncio.Task[None]] = []

        def watch(task: asyncio.Task[None]) -> None:
            if app.state.stopping or task.cancelled() or task.exception() is None:
                return
            exc = task.exception()
            assert exc is not None
            fail_service(app, name, task.get_name(), exc)

        for loop in parts.loops:
            telemetry.attach(loop)
            tasks.append(asyncio.create_task(loop.run(), name=f"loop {loop.name}"))
        tasks.extend(
            asyncio.create_task(job(), name=f"job {getattr(job, '__name__', 'background')}")
            for job in parts.background
        )
        for task in tasks:
            task.add_done_callback(watch)

        async def watch_workers() -> None:
            while not app.state.stopping:
                for w in parts.watched:
                    if (exc := w.failure()) is not None:
                        fail_service(app, name, w.name, exc)
                        return
                await asyncio.sleep(1.0)

        watcher = asyncio.create_task(watch_workers(), name=f"{name}:watch")
        app.state.tasks = tasks
        try:
            yield
        finally:
            app.state.stopping = True
            watcher.cancel()
            for loop in parts.loops:
                loop.stop()
            for job in parts.on_stop:
                await job()
            done, pending = await asyncio.wait(tasks, timeout=10) if tasks else (set(), set())
            for t in pending:
                t.cancel()
            for t in done:
                if not t.cancelled() and t.exception() is not None and app.state.fatal is None:
                    log.error("%s task %s ended with %r", name, t.get_name(), t.exception())
            await parts.bus.stop()
            if parts.engine is not None:
                parts.engine.dispose()

    app = FastAPI(title=f"groundwatch {name}", lifespan=lifespan)
    add_input_guards(app, max_body_bytes)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> JSONResponse:
        """Liveness: every worker loop runs and has beaten its heartbeat within
        ``GW_LIVENESS_TIMEOUT_S`` (503 otherwise, naming the loops), so a liveness probe restarts
        a process whose loops died or wedged — not only one whose HTTP server stopped."""
        parts: ServiceParts | None = getattr(app.state, "parts", None)
        tasks: list[asyncio.Task[None]] = getattr(app.state, "tasks", [])
        problems = liveness(parts, tasks, liveness_timeout_s) if parts is not None else {}
        fatal: str | None = getattr(app.state, "fatal", None)
        if fatal is not None:
            problems["service"] = fatal
        body: dict[str, Any] = {"status": "failing" if problems else "ok", "service": name}
        if problems:
            body["problems"] = problems
        return JSONResponse(body, status_code=503 if problems else 200)

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> JSONResponse:
        """Readiness: bus and database reachable, every worker loop running and progressing.
        Answered within ``GW_READY_DEADLINE_S``: a dependency that has not answered its ping by
        then (a frozen broker) is down, named under ``timed_out``."""
        parts: ServiceParts = app.state.parts
        named: dict[str, DeadlineCheck] = {"bus": app.state.bus_check}
        if app.state.db_check is not None:
            named["database"] = app.state.db_check
        answers = await asyncio.gather(*(c(ready_deadline_s) for c in named.values()))
        checks: dict[str, bool] = {k: bool(a) for k, a in zip(named, answers, strict=True)}
        timed_out = [k for k, a in zip(named, answers, strict=True) if a is None]
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
        body: dict[str, Any] = {"ready": ok, "checks": checks}
        if timed_out:
            body["timed_out"] = timed_out
            body["deadline_s"] = ready_deadline_s
        return JSONResponse(body, status_code=200 if ok else 503)

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

    from groundwatch.runtime.allocator import limit_arenas
    from groundwatch.runtime.loop import loop_name

    limit_arenas()  # before uvicorn's loop and the stages' worker threads

    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # One line per probe (httpx requests, access logs of scrapes and probes) would drown what
    # matters and cost CPU on the hot path: those stay at WARNING unless DEBUG is asked for.
    if settings.log_level != "DEBUG":
        for noisy in ("httpx", "httpcore", "aiokafka"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        # ...but a consumer group's joins, syncs and assignments stay: one line per rebalance,
        # and the only account of a member that keeps its group waiting
        logging.getLogger("aiokafka.consumer.group_coordinator").setLevel(settings.log_level)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=settings.log_level == "DEBUG",
        loop=loop_name(settings.event_loop),  # GW_EVENT_LOOP: uvloop when installed
    )
    server = uvicorn.Server(config)

    def exit_on_fatal() -> None:
        # A clean shutdown (loops stopped, producer flushed) and then exit FATAL_EXIT; if the
        # shutdown hangs on the very fault (a broker gone), the timer ends the process anyway.
        server.should_exit = True
        timer = threading.Timer(FATAL_GRACE_S, os._exit, args=(FATAL_EXIT,))
        timer.daemon = True
        timer.start()

    app.state.exit_on_fatal = exit_on_fatal
    server.run()
    if getattr(app.state, "fatal", None) is not None:
        sys.exit(FATAL_EXIT)
    if not server.started:
        sys.exit(3)  # as uvicorn.run: the lifespan start-up failed


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
        replication_factor=settings.kafka_replication_factor,
        min_insync_replicas=settings.kafka_min_insync_replicas,
        retry=settings.bus_retry(),
    )
    return Wiring(CollectorRegistry(), bus, Topics(settings.topic_prefix), client_id)
