"""A lean HTTP/1.1 keep-alive transport for ``httpx``: asyncio streams, h11, LIFO idle lists.

Probing is many small JSON requests to few origins with bounded concurrency, where a general
connection pool's bookkeeping dominates: httpcore passes over every pooled connection (and asks
each socket whether it is readable) on every request, which on a busy two-core host cost about
1 ms of CPU per request, i.e. most of a core at 640 requests/s. Here a request takes the most
recently used idle connection of its origin (O(1)) or opens one; ``max_connections`` is a
semaphore held until the response is closed. Protocol parsing is h11's, requests, responses and
exceptions are httpx's, so targets and tests see plain ``httpx``. No proxies or HTTP/2: for
those, give the target an ordinary ``httpx.AsyncClient``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import h11
import httpx

Origin = tuple[str, str, int]
_READ_SIZE = 65536


class _Stale(Exception):
    """A reused connection was closed by the server before it answered: try a fresh one."""


class _Conn:
    __slots__ = ("h11", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


@contextlib.contextmanager
def _errors(phase: str) -> Iterator[None]:
    """OS, timeout and h11 errors as the httpx exceptions targets already handle."""
    try:
        yield
    except TimeoutError as exc:
        kind = {"connect": httpx.ConnectTimeout, "write": httpx.WriteTimeout}.get(
            phase, httpx.ReadTimeout
        )
        raise kind(f"{phase} timed out") from exc
    except h11.RemoteProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc)) from exc
    except h11.LocalProtocolError as exc:
        raise httpx.LocalProtocolError(str(exc)) from exc
    except OSError as exc:
        kind2 = {"connect": httpx.ConnectError, "write": httpx.WriteError}.get(
            phase, httpx.ReadError
        )
        raise kind2(f"{phase}: {exc}") from exc


def _timeout(request: httpx.Request, phase: str) -> float | None:
    value = request.extensions.get("timeout", {}).get(phase)
    return float(value) if value is not None else None


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 transport with per-origin LIFO keep-alive lists (see module docstring)."""

    def __init__(
        self,
        *,
        max_connections: int = 100,
        keepalive_expiry: float = 4.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[Origin, deque[tuple[_Conn, float]]] = {}
        self._expiry = keepalive_expiry
        self._ssl = ssl_context
        self._closed = False

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    def _checkout(self, origin: Origin) -> _Conn | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn, since = idle.pop()
            if now - since < self._expiry and conn.usable():
                return conn
            conn.close()
        return None

    def _checkin(self, origin: Origin, conn: _Conn) -> None:
        if self._closed or not conn.usable():
            conn.close()
            return
        self._idle.setdefault(origin, deque()).append((conn, time.monotonic()))

    async def _connect(self, origin: Origin, deadline_s: float | None) -> _Conn:
        scheme, host, port = origin
        tls = self._ssl_context() if scheme == "https" else None
        with _errors("connect"):
            async with asyncio.timeout(deadline_s):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls else None, limit=_READ_SIZE
                )
        return _Conn(reader, writer)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("transport is closed")
        url = request.url
        default_port = 443 if url.scheme == "https" else 80
        origin: Origin = (url.scheme, url.host, url.port or default_port)
        if self._slots.locked():  # only a wait needs a deadline (timers cost CPU per request)
            try:
                async with asyncio.timeout(_timeout(request, "pool")):
                    await self._slots.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout("no free connection slot") from None
        else:
            await self._slots.acquire()
        try:
            conn, head = await self._exchange(origin, request)
        except BaseException:
            self._slots.release()
            raise
        return httpx.Response(
            status_code=head.status_code,
            headers=list(head.headers),
            stream=_Body(self, origin, conn, _timeout(request, "read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": bytes(head.reason)},
        )

    async def _exchange(self, origin: Origin, request: httpx.Request) -> tuple[_Conn, h11.Response]:
        for _ in range(2):
            conn = self._checkout(origin)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(origin, _timeout(request, "connect"))
            try:
                await self._send(conn, request)
                return conn, await self._read_head(conn, request, reused)
            except _Stale:
                conn.close()
                continue
            except BaseException:
                conn.close()
                raise
        raise httpx.RemoteProtocolError("server closed the connection without a response")

    async def _send(self, conn: _Conn, request: httpx.Request) -> None:
        event = h11.Request(
            method=request.method,
            target=request.url.raw_path,
            headers=list(request.headers.raw),
        )
        # One write (one send syscall) for head and a small body: on loopback a send also runs
        # the receiver's TCP processing, so under CPU contention each extra send is expensive.
        with _errors("write"):
            pending = [conn.h11.send(event) or b""]
            size = len(pending[0])
            assert isinstance(request.stream, httpx.AsyncByteStream)
            async for chunk in request.stream:
                pending.append(conn.h11.send(h11.Data(data=chunk)) or b"")
                size += len(pending[-1])
                if size >= _READ_SIZE:
                    conn.writer.write(b"".join(pending))
                    pending, size = [], 0
            pending.append(conn.h11.send(h11.EndOfMessage()) or b"")
            conn.writer.write(b"".join(pending))
            if conn.writer.transport.get_write_buffer_size():  # the kernel did not take it all
                async with asyncio.timeout(_timeout(request, "write")):
                    await conn.writer.drain()

    async def _read_head(self, conn: _Conn, request: httpx.Request, reused: bool) -> h11.Response:
        received = False
        with _errors("read"):
            async with asyncio.timeout(_timeout(request, "read")):
                while True:
                    event = conn.h11.next_event()
                    if event is h11.NEED_DATA:
                        try:
                            data = await conn.reader.read(_READ_SIZE)
                        except ConnectionError:
                            if reused and not received:
                                raise _Stale from None
                            raise
                        if not data and reused and not received:
                            raise _Stale
                        received = received or bool(data)
                        conn.h11.receive_data(data)
                    elif isinstance(event, h11.Response):
                        return event
                    elif isinstance(event, h11.InformationalResponse):
                        continue
                    else:
                        raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__}")

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            while idle:
                idle.pop()[0].close()


class _Body(httpx.AsyncByteStream):
    """The response body; closing it returns the connection (if reusable) and the slot."""

    def __init__(
        self, transport: LeanTransport, origin: Origin, conn: _Conn, timeout: float | None
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._conn = conn
        self._timeout = timeout
        self._complete = False
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        with _errors("read"):
            while True:
                event: Any = conn.h11.next_event()
                if event is h11.NEED_DATA:
                    async with asyncio.timeout(self._timeout):
                        conn.h11.receive_data(await conn.reader.read(_READ_SIZE))
                elif isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    self._complete = True
                    return
                else:
                    raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__}")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        conn = self._conn
        try:
            if (
                self._complete
                and conn.h11.our_state is h11.DONE
                and conn.h11.their_state is h11.DONE
            ):
                conn.h11.start_next_cycle()
                self._transport._checkin(self._origin, conn)
            else:
                conn.close()
        finally:
            self._transport._slots.release()
