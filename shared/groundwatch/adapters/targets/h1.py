"""A lean HTTP/1.1 client for probing: asyncio Protocol + httptools (llhttp), keep-alive pools.

Probing is many small JSON requests to few origins, and the client's own CPU per request decides
how close to a fast target's speed the runner gets. A general client pays per request for what
probing never uses (cookie jars, redirects, tracing hooks, multidict headers, a stream object per
body, a timer per read); this one pays for: building the request bytes (the head of a URL and
header set is built once), one ``write``, llhttp's C parser calling back a few times, and one
future. Measured on ``bench/bench_runner.py`` (5 ms target, 64 in flight) it costs well under
half of aiohttp's CPU per request (numbers in the commit and ``bench/RESULTS.md``).

What it does: one connection per request in flight, a LIFO keep-alive pool per origin (idle
connections expire after ``keepalive_expiry``), at most ``max_connections`` requests in flight,
``Content-Length``, chunked and read-until-close bodies (gzip/deflate decoded when a server
compresses unasked), TLS through the event loop's ``ssl``, a connect timeout, and a read timeout
kept by one watchdog task per client instead of a timer per request (a read stalled longer than
``timeout`` fails within 1.25 × ``timeout``). A request whose *reused* connection the server
closed before any reply (its keep-alive timeout raced our request) is sent once more on a fresh
connection. Failures come out as :class:`TargetError` with the same kinds as every HTTP client:
connect failures, resets, truncated bodies and malformed replies are ``connection``, stalls are
``timeout``, a body over the cap is ``bad_payload``.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import zlib
from collections import deque
from collections.abc import Mapping
from types import TracebackType
from typing import NamedTuple, cast
from urllib.parse import quote, unquote, urlsplit

import httptools

from groundwatch.adapters.targets.base import ErrorKind, TargetError
from groundwatch.adapters.targets.transport import HttpReply, too_large

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PATH_SAFE = "/%:@!$&'()*+,;=-._~?"
#: Request heads kept per (method, url, headers); beyond this the cache starts over (URLs with
#: the query in them are one per probe and must not grow it without bound).
_HEAD_CACHE_SIZE = 1024


class Origin(NamedTuple):
    """Where a connection goes: requests to the same origin share its keep-alive pool.

    A tuple, so the pool's lookups hash it in C (twice per request)."""

    scheme: str
    host: str
    port: int


def _lost(detail: str) -> TargetError:
    return TargetError(ErrorKind.CONNECTION, detail)


class _Retry(Exception):
    """The reused connection was closed before any byte of the reply: send once more."""


def _request_head(method: str, url: str, headers: Mapping[str, str]) -> tuple[Origin, bytes]:
    """The origin and the request's head up to (not including) its Content-Length line.

    Header names and values are checked once here, so a value with a line break (an env
    variable pasted with its newline) is refused instead of splitting the request."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise TargetError(ErrorKind.EXCEPTION, f"not an http(s) URL: {scheme}://{parts.hostname}")
    host = parts.hostname
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise TargetError(ErrorKind.EXCEPTION, f"bad port in URL: {exc}") from None
    try:
        host.encode("ascii")
        wire_host = host
    except UnicodeEncodeError:
        wire_host = host.encode("idna").decode("ascii")
    shown = f"[{wire_host}]" if ":" in wire_host else wire_host
    if port != _DEFAULT_PORTS[scheme]:
        shown = f"{shown}:{port}"
    target = quote(parts.path or "/", safe=_PATH_SAFE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_PATH_SAFE)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {shown}"]
    names = {k.lower() for k in headers}
    if parts.username is not None and "authorization" not in names:
        user = unquote(parts.username)
        password = unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        lines.append(f"Authorization: Basic {token}")
    for name, value in headers.items():
        if name.lower() in ("host", "content-length", "transfer-encoding", "connection"):
            continue  # framing is ours to set
        if any(c in name or c in value for c in "\r\n\0") or ":" in name:
            raise TargetError(ErrorKind.EXCEPTION, f"header {name!r} holds a line break")
        lines.append(f"{name}: {value}")
    if "user-agent" not in names:
        lines.append("User-Agent: groundwatch")
    return Origin(scheme, wire_host, port), ("\r\n".join(lines) + "\r\n").encode("latin-1")


class _Connection(asyncio.Protocol):
    """One keep-alive connection: sends a request, parses its reply with llhttp.

    One request at a time (no pipelining). Everything the parser reports is kept on the
    instance; the reply's future is resolved from ``on_message_complete``.
    """

    def __init__(self, origin: Origin, loop: asyncio.AbstractEventLoop) -> None:
        self.origin = origin
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        #: Loop time of the last progress (request sent, bytes received), for the watchdog.
        self.active_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[HttpReply] | None = None
        self._max = 0
        self._reset()

    def _reset(self) -> None:
        self._body: list[bytes] = []
        self._size = 0
        self._status = 0
        self._retry_after: str | None = None
        self._encoding: bytes | None = None
        self._framed = False  # Content-Length or chunked: the body does not end with the socket
        self._started = False  # any byte of the reply seen
        self._headers_done = False
        self._error: TargetError | None = None

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike: no isinstance
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():  # bytes nobody asked for: this connection is spoilt
            self.close()
            return
        self._started = True
        self.active_since = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            self._fail(self._error or _lost("reply could not be read"))
        except httptools.HttpParserError as exc:
            self._fail(_lost(f"malformed HTTP reply: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if not self._started:
            self._fail(_Retry() if self.reused else _lost("server disconnected before replying"))
        elif self._headers_done and not self._framed:
            self.on_message_complete()  # a body delimited by the connection's end
        else:
            detail = f": {exc}" if exc else ""
            self._fail(_lost(f"connection closed in the middle of the reply{detail}"))

    # -- httptools callbacks ----------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        n = name.lower()
        if n == b"content-length" or (n == b"transfer-encoding" and b"chunked" in value.lower()):
            self._framed = True
        elif n == b"retry-after":
            self._retry_after = value.decode("latin-1")
        elif n == b"content-encoding":
            self._encoding = value.strip().lower()

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._headers_done = True
        if self._status in (204, 304) or 100 <= self._status < 200:
            self._framed = True  # no body, whatever the headers say

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self._max:
            self._error = too_large(self._max)
            raise self._error  # stops the parser; data_received turns it into the failure
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        body = b"".join(self._body)
        if self._encoding in (b"gzip", b"deflate", b"x-gzip"):
            try:
                body = _decompress(body, self._max)
            except TargetError as exc:
                self._fail(exc)
                return
        keep = self._parser.should_keep_alive() and self._framed
        waiter.set_result(HttpReply(self._status, self._retry_after, body))
        self._waiter = None
        if not keep:
            self.close()

    # -- used by the client -----------------------------------------------------------------

    def send(self, data: bytes, max_bytes: int) -> asyncio.Future[HttpReply]:
        """Write a whole request; the future gets its reply (or the failure)."""
        assert self.transport is not None
        self._reset()
        self._max = max_bytes
        self._waiter = waiter = self._loop.create_future()
        self.active_since = self._loop.time()
        self.transport.write(data)
        return waiter

    def stalled(self, now: float, timeout: float) -> bool:
        return self._waiter is not None and now - self.active_since > timeout

    def expire(self, timeout: float) -> None:
        """The watchdog's verdict: no byte for longer than ``timeout``."""
        self._fail(TargetError(ErrorKind.TIMEOUT, f"no reply byte for {timeout:g}s"))

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()  # nothing of ours is worth flushing on a spoilt connection


def _decompress(body: bytes, limit: int) -> bytes:
    """A gzip or deflate body, never inflated past ``limit`` (a zip bomb is a bad payload)."""
    for wbits in (47, -15):  # 47: gzip or zlib header; -15: raw deflate (some servers)
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error:
            continue
        if len(out) > limit:
            raise too_large(limit)
        return out
    raise TargetError(ErrorKind.BAD_PAYLOAD, "undecodable compressed body")


class H1Client:
    """The production client of HTTP targets (see the module docstring).

    Loop-bound state (the watchdog) is made on first use, so the client can
    be built anywhere, before the event loop runs.
    """

    def __init__(
        self,
        max_connections: int = 100,
        *,
        timeout: float | None = 60.0,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_expiry: float = 4.0,
    ) -> None:
        self.max_connections = max_connections
        self.timeout = timeout
        self._ssl = ssl_context
        self._keepalive = keepalive_expiry
        self._idle: dict[Origin, list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self._heads: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[Origin, bytes]] = {}
        #: Requests holding a slot, and the requests waiting for one (in order of arrival).
        self._in_use = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._started = False
        self._watchdog: asyncio.Task[None] | None = None
        self._closed = False

    def _start(self) -> None:
        if self._closed:
            raise RuntimeError("HTTP client is closed")
        self._started = True
        self._watchdog = asyncio.get_running_loop().create_task(
            self._watch(), name="groundwatch-http-watchdog"
        )

    async def _wait_for_slot(self) -> None:
        """Queue for a slot; a released slot is handed straight to the first waiter.

        A counter and a queue of futures instead of ``asyncio.Semaphore``: taking a free slot
        is then one comparison, not two coroutines and a scan of the waiters per request."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release_slot()  # handed a slot as we gave up: pass it on
            raise

    def _release_slot(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # skips waiters that gave up
                waiter.set_result(None)
                return
        self._in_use -= 1

    def _head(self, method: str, url: str, headers: Mapping[str, str]) -> tuple[Origin, bytes]:
        key = (method, url, tuple(headers.items()))
        found = self._heads.get(key)
        if found is None:
            if len(self._heads) >= _HEAD_CACHE_SIZE:
                self._heads.clear()
            found = self._heads[key] = _request_head(method, url, headers)
        return found

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> HttpReply:
        if not self._started or self._closed:
            self._start()  # the first request; after aclose, a RuntimeError
        origin, head = self._head(method, url, headers)
        if body is not None:
            data = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)
        elif method in ("POST", "PUT", "PATCH"):
            data = head + b"Content-Length: 0\r\n\r\n"
        else:
            data = head + b"\r\n"
        if self._in_use < self.max_connections:
            self._in_use += 1
        else:
            await self._wait_for_slot()
        try:
            return await self._send(origin, data, max_bytes, fresh=False)
        except _Retry:
            try:
                return await self._send(origin, data, max_bytes, fresh=True)
            except _Retry:  # pragma: no cover - a fresh connection is never "reused"
                raise _lost("server disconnected before replying") from None
        finally:
            self._release_slot()

    async def _send(self, origin: Origin, data: bytes, max_bytes: int, *, fresh: bool) -> HttpReply:
        conn = None if fresh else self._take_idle(origin)
        if conn is None:
            conn = await self._connect(origin)
        self._busy.add(conn)
        try:
            reply = await conn.send(data, max_bytes)
        except BaseException:
            conn.close()  # cancelled or failed mid-exchange: its bytes can't be trusted
            raise
        finally:
            self._busy.discard(conn)
        if not conn.closed and not self._closed:
            conn.reused = True
            conn.idle_since = conn.active_since
            self._idle.setdefault(origin, []).append(conn)
        return reply

    def _take_idle(self, origin: Origin) -> _Connection | None:
        pool = self._idle.get(origin)
        while pool:
            conn = pool.pop()
            if not conn.closed:
                return conn
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        conn = _Connection(origin, loop)
        tls: ssl.SSLContext | None = None
        if origin.scheme == "https":
            if self._ssl is None:  # made once: loading the trust store costs milliseconds
                self._ssl = ssl.create_default_context()
            tls = self._ssl
        try:
            async with asyncio.timeout(self.timeout):
                await loop.create_connection(
                    lambda: conn,
                    origin.host,
                    origin.port,
                    ssl=tls,
                    server_hostname=origin.host if tls is not None else None,
                )
        except TimeoutError:
            conn.close()
            raise TargetError(ErrorKind.TIMEOUT, f"connect took over {self.timeout:g}s") from None
        except OSError as exc:  # refused, unreachable, DNS, TLS (ssl.SSLError is an OSError)
            conn.close()
            raise _lost(f"{type(exc).__name__}: {exc}") from None
        return conn

    async def _watch(self) -> None:
        """Fails stalled requests and closes expired idle connections, every quarter period."""
        loop = asyncio.get_running_loop()
        period = min(self.timeout or self._keepalive, self._keepalive) / 4
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            if self.timeout is not None:
                for conn in [c for c in self._busy if c.stalled(now, self.timeout)]:
                    conn.expire(self.timeout)
            for pool in self._idle.values():
                fresh = [c for c in pool if not c.closed and now - c.idle_since <= self._keepalive]
                for conn in pool:
                    if conn not in fresh:
                        conn.close()
                pool[:] = fresh

    async def aclose(self) -> None:
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            await asyncio.gather(self._watchdog, return_exceptions=True)
            self._watchdog = None
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()
        for conn in list(self._busy):
            conn._fail(_lost("HTTP client closed"))

    async def __aenter__(self) -> H1Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


__all__ = ["H1Client", "Origin"]
