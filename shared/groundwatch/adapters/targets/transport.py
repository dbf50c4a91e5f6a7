"""The HTTP client targets use: httpx (HTTP/1.1, HTTP/2 through h2), behind one small port.

Real RAG endpoints answer in 0.3–10 s, so the client's CPU per request (about 1 ms with httpx
on a busy 2-core machine, lane and contract included, ``bench/bench_runner.py``; httpcore's
sockets on asyncio's own streams, :mod:`~groundwatch.adapters.targets.netio`) is not what a
run waits for; what matters is reaching the
endpoint where it is: behind a proxy (``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``, or a target's
own ``proxy``), signed by a private CA (``SSL_CERT_FILE``/``SSL_CERT_DIR``, or a target's
``ca_file``), asking for a client certificate, speaking HTTP/2.

:class:`HttpJsonTarget` talks to an :class:`HttpClient`: ``exchange`` sends one request and
returns the status, the ``Retry-After`` header and the body read up to a cap; ``stream`` opens
one and yields its body as it arrives, under the same cap. What a probed endpoint may do to the
prober is bounded here, whoever sends the request: the body is counted both as it comes off the
wire and as it is inflated (a gzip bomb stops at the cap, never inflated whole in memory), a
stalled read fails after ``timeout`` (the runner's per-attempt deadline bounds a slow trickle),
redirects are never followed (the target turns a 3xx into an error), and a header value with a
line break is refused before any connection is made.

:func:`make_http_client` makes the shared :class:`HttpClients`: one pooled client per distinct
transport setting (proxy, CA file, client certificate, HTTP/2), the default one for every
target that sets none. An ``httpx.AsyncClient`` is accepted too (wrapped in
:class:`HttpxClient`): tests pass one with ``httpx.MockTransport``, the embedded demo one with
``httpx.ASGITransport``.
"""

from __future__ import annotations

import os
import ssl
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from groundwatch.adapters.targets.base import ErrorKind, TargetError
from groundwatch.errors import ConfigError

if TYPE_CHECKING:  # imported where used: not needed to start the CLI
    import httpx

#: What the client asks for: the two encodings it inflates under the cap itself.
ACCEPT_ENCODING = "gzip, deflate"
_DISCONNECTED = "Server disconnected without sending a response."
#: Connections per httpcore pool (see :class:`HttpxClient`).
SHARD_CONNECTIONS = 4


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A response as targets need it: status, the server's ``Retry-After``, the whole body."""

    status: int
    retry_after: str | None
    body: bytes


@dataclass(slots=True)
class HttpStream:
    """An open response: status and headers now, the (inflated, capped) body as it arrives."""

    status: int
    retry_after: str | None
    content_type: str
    chunks: AsyncIterator[bytes]
    #: makes the connection read at most once per the given seconds, with the socket unread
    #: in between (see :meth:`~.netio.AsyncioStream.pace`); None where the connection cannot
    #: (HTTP/2, in-memory transports)
    pace: Callable[[float], None] | None = None

    async def read(self) -> bytes:
        return b"".join([c async for c in self.chunks])


def too_large(limit: int) -> TargetError:
    return TargetError(ErrorKind.BAD_PAYLOAD, f"reply larger than {limit} bytes")


@dataclass(frozen=True, slots=True)
class TransportSettings:
    """How to reach one target; targets with equal settings share a connection pool.

    ``proxy`` None follows the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``); ``"direct"`` ignores it. ``ca_file`` None trusts the system's store (or
    ``SSL_CERT_FILE``/``SSL_CERT_DIR``); a file trusts only the CAs in it."""

    proxy: str | None = None
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    http2: bool = False


DEFAULT_TRANSPORT = TransportSettings()


def ssl_context(
    settings: TransportSettings, env: Mapping[str, str] | None = None
) -> ssl.SSLContext:
    """The TLS context of ``settings``; an unreadable CA file or certificate is a ConfigError
    naming the file and the setting (the caller adds the target)."""
    env = os.environ if env is None else env
    cafile: str | None
    capath: str | None
    if settings.ca_file is not None:
        cafile, capath, where = settings.ca_file, None, "ca_file"
    else:
        cafile, capath = env.get("SSL_CERT_FILE") or None, env.get("SSL_CERT_DIR") or None
        where = "SSL_CERT_FILE" if cafile else "SSL_CERT_DIR"
    for name, path in ((where, cafile), ("client_cert", settings.client_cert)):
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{name} {path}: no such file")
    try:
        ctx = ssl.create_default_context(cafile=cafile, capath=capath)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"{where} {cafile or capath}: not a PEM CA bundle ({exc})") from None
    if settings.client_cert is not None:
        try:
            ctx.load_cert_chain(settings.client_cert, settings.client_key)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f"client_cert {settings.client_cert}: cannot load the certificate and its key"
                f" ({exc.__class__.__name__}: {getattr(exc, 'reason', None) or exc})"
            ) from None
    if settings.http2:
        ctx.set_alpn_protocols(["h2", "http/1.1"])
    return ctx


class _Inflater:
    """A body decoded as it arrives, never past ``limit`` bytes in or out."""

    __slots__ = ("_first", "_left", "_raw_left", "_z", "limit")

    def __init__(self, encoding: str | None, limit: int) -> None:
        self.limit = limit
        self._left = limit
        self._raw_left = limit
        self._first = True
        enc = (encoding or "").strip().lower()
        self._z: zlib._Decompress | None
        if enc in ("", "identity"):
            self._z = None
        elif enc in ("gzip", "x-gzip", "deflate"):
            self._z = zlib.decompressobj(47)  # gzip or zlib header
        else:
            raise TargetError(ErrorKind.BAD_PAYLOAD, f"reply compressed as {enc!r}, not asked for")

    @property
    def identity(self) -> bool:
        """The body is not compressed: it only needs counting."""
        return self._z is None

    def feed(self, data: bytes) -> bytes:
        self._raw_left -= len(data)
        if self._raw_left < 0:
            raise too_large(self.limit)
        out = data if self._z is None else self._inflate(self._z, data)
        self._first = False
        self._left -= len(out)
        if self._left < 0:
            raise too_large(self.limit)
        return out

    def _inflate(self, z: zlib._Decompress, data: bytes) -> bytes:
        try:
            out = z.decompress(data, self._left + 1)
        except zlib.error:
            if not self._first:
                raise TargetError(ErrorKind.BAD_PAYLOAD, "undecodable compressed body") from None
            self._first = False  # some servers send raw deflate: once more, headerless
            self._z = z = zlib.decompressobj(-15)
            return self._inflate(z, data)
        if z.unconsumed_tail:  # more output than the cap allows is waiting
            raise too_large(self.limit)
        return out

    def flush(self) -> bytes:
        if self._z is None:
            return b""
        out = self._z.flush()
        self._left -= len(out)
        if self._left < 0:
            raise too_large(self.limit)
        return out


def _check_headers(headers: Mapping[str, str]) -> None:
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0") or ":" in name:
            raise TargetError(ErrorKind.EXCEPTION, f"header {name!r} holds a line break")


def _failure(exc: Exception, proxied: str | None) -> TargetError:
    """The target error of an httpx exception (never a header or a body in the message)."""
    import httpx

    via = f" (through proxy {proxied})" if proxied else ""
    if isinstance(exc, httpx.TimeoutException):
        return TargetError(ErrorKind.TIMEOUT, f"{type(exc).__name__}{via}")
    if isinstance(exc, httpx.ProxyError):
        return TargetError(ErrorKind.CONNECTION, f"proxy refused the connection: {exc}")
    if isinstance(exc, httpx.DecodingError):
        return TargetError(ErrorKind.BAD_PAYLOAD, f"undecodable body: {exc}")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return TargetError(ErrorKind.EXCEPTION, f"not an http(s) URL: {exc}")
    if isinstance(exc, httpx.LocalProtocolError):
        return TargetError(ErrorKind.EXCEPTION, f"request refused by the client: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError):
        return TargetError(ErrorKind.CONNECTION, f"malformed or cut reply: {exc}")
    return TargetError(ErrorKind.CONNECTION, f"{type(exc).__name__}: {exc}{via}")


@runtime_checkable
class HttpClient(Protocol):
    """Sends one request and reads its reply (at most ``max_bytes`` of body)."""

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> HttpReply: ...

    def stream(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> _StreamContext: ...

    async def aclose(self) -> None: ...


class _StreamContext(Protocol):
    async def __aenter__(self) -> HttpStream: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...


class HttpxClient:
    """One or more ``httpx.AsyncClient`` behind the port.

    Several clients are shards of one pool: httpcore's pool scans every connection for every
    queued request each time a request starts or ends, which at 256 connections cost ~2 ms of
    CPU per request (``bench/bench_runner.py``); shards of :data:`SHARD_CONNECTIONS` keep that
    scan short. A request goes to the shard with the fewest requests in flight; a new shard is
    made when all are full (each costs ~2 ms to make: the environment's proxies are read).

    A request whose connection the server closed before any byte of the reply (a keep-alive
    timeout racing the request) is sent once more: the server never saw it answered."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        proxy: str | None = None,
        grow: Callable[[], httpx.AsyncClient] | None = None,
        per_shard: int = 0,
        max_shards: int = 1,
    ) -> None:
        """``grow`` makes another shard when every shard has ``per_shard`` requests in flight
        (up to ``max_shards``): a run with few requests in flight keeps one small pool."""
        self.shards = [client]
        self.client = client
        self._load = [0]
        self.in_flight = 0
        self._proxy = proxy
        self._grow = grow
        self._per_shard = per_shard
        self._max_shards = max_shards

    def _pick(self) -> int:
        load = self._load
        i = 0 if len(load) == 1 else load.index(min(load))
        if self._grow is not None and load[i] >= self._per_shard and len(load) < self._max_shards:
            self.shards.append(self._grow())
            load.append(0)
            return len(load) - 1
        return i

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> HttpReply:
        async with self.stream(method, url, headers, body, max_bytes) as reply:
            data = await reply.read()
        return HttpReply(reply.status, reply.retry_after, data)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> AsyncIterator[HttpStream]:
        import httpx

        _check_headers(headers)
        shard = self._pick()
        client = self.shards[shard]
        self.in_flight += 1
        self._load[shard] += 1
        try:
            for attempt in (1, 2):
                request = client.build_request(method, url, headers=headers, content=body)
                try:
                    response = await client.send(request, stream=True)
                except httpx.RemoteProtocolError as exc:
                    if attempt == 1 and str(exc) == _DISCONNECTED:
                        continue
                    raise _failure(exc, self._proxy) from None
                except httpx.HTTPError as exc:
                    raise _failure(exc, self._proxy) from None
                break
            pace = _pace_of(response)
            try:
                encoding = (
                    None
                    if response.is_stream_consumed
                    else response.headers.get("Content-Encoding")
                )
                inflater = _Inflater(encoding, max_bytes)
                yield HttpStream(
                    response.status_code,
                    response.headers.get("Retry-After"),
                    response.headers.get("Content-Type", ""),
                    self._chunks(response, inflater),
                    pace,
                )
            finally:
                if pace is not None:  # the connection's next request reads as data comes
                    pace(0)
                await response.aclose()
        finally:
            self.in_flight -= 1
            self._load[shard] -= 1

    async def _chunks(self, response: httpx.Response, inflater: _Inflater) -> AsyncIterator[bytes]:
        import httpx

        if response.is_stream_consumed:  # built whole in memory (httpx.MockTransport, tests)
            if len(response.content) > inflater.limit:
                raise too_large(inflater.limit)
            yield response.content
            return
        try:
            if inflater.identity:  # counted here, not in a call per piece
                left = inflater.limit
                async for raw in response.aiter_raw():  # each piece as it comes
                    left -= len(raw)
                    if left < 0:
                        raise too_large(inflater.limit)
                    yield raw
                return
            async for raw in response.aiter_raw():
                out = inflater.feed(raw)
                if out:
                    yield out
            tail = inflater.flush()
        except httpx.HTTPError as exc:
            raise _failure(exc, self._proxy) from None
        if tail:
            yield tail

    async def aclose(self) -> None:
        for client in self.shards:
            await client.aclose()

    async def __aenter__(self) -> HttpxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _pace_of(response: httpx.Response) -> Callable[[float], None] | None:
    """How to space the reads of ``response``'s body: its connection's own pacing when it is
    an HTTP/1.1 connection of :mod:`~.netio` (unshared while the reply is read), else None."""
    from groundwatch.adapters.targets.netio import AsyncioStream

    stream = response.extensions.get("network_stream")
    if isinstance(stream, AsyncioStream) and response.http_version == "HTTP/1.1":
        return stream.pace
    return None


def as_http_client(client: HttpClient | httpx.AsyncClient) -> HttpClient:
    """``client`` as the port: an ``httpx.AsyncClient`` is wrapped, anything else kept."""
    if isinstance(client, HttpClient):
        return client
    return HttpxClient(client)


class HttpClients:
    """The shared clients of every HTTP target: the default one (environment proxies and CAs),
    and one per distinct :class:`TransportSettings` a target asks for, made on first ask.

    It is itself the default client (``exchange``/``stream``), so code that needs one client
    takes it as it is. Close it once, in the lifespan that made it."""

    def __init__(
        self,
        max_connections: int = 100,
        *,
        timeout: float | None = 60.0,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_expiry: float = 4.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.timeout = timeout
        self.keepalive_expiry = keepalive_expiry
        self._env = os.environ if env is None else env
        self._clients: dict[TransportSettings, HttpxClient] = {}
        self._default = self._make(DEFAULT_TRANSPORT, ssl_context)

    def _make(self, settings: TransportSettings, ctx: ssl.SSLContext | None = None) -> HttpxClient:
        import httpx

        from groundwatch.adapters.targets.netio import asyncio_client

        if ctx is None:
            ctx = ssl_context(settings, self._env)
        direct = settings.proxy == "direct"
        proxy = None if direct else settings.proxy
        shards = -(-self.max_connections // SHARD_CONNECTIONS)
        per_shard = -(-self.max_connections // shards)

        def shard() -> httpx.AsyncClient:
            return asyncio_client(
                ssl_context=ctx,
                http2=settings.http2,
                proxy=proxy,
                trust_env=not direct and proxy is None,
                limits=httpx.Limits(
                    max_connections=per_shard,
                    max_keepalive_connections=per_shard,
                    keepalive_expiry=self.keepalive_expiry,
                ),
                follow_redirects=False,
                timeout=httpx.Timeout(self.timeout, pool=None),
                headers={"User-Agent": "groundwatch", "Accept-Encoding": ACCEPT_ENCODING},
            )

        wrapped = HttpxClient(
            shard(), proxy=_bare_proxy(proxy), grow=shard, per_shard=per_shard, max_shards=shards
        )
        self._clients[settings] = wrapped
        return wrapped

    def for_settings(self, settings: TransportSettings) -> HttpxClient:
        """The client of ``settings`` (a ConfigError when its CA file or certificate is bad)."""
        found = self._clients.get(settings)
        return found if found is not None else self._make(settings)

    @property
    def in_flight(self) -> int:
        return sum(c.in_flight for c in self._clients.values())

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> HttpReply:
        return await self._default.exchange(method, url, headers, body, max_bytes)

    def stream(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> _StreamContext:
        return self._default.stream(method, url, headers, body, max_bytes)

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()

    async def __aenter__(self) -> HttpClients:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _bare_proxy(proxy: str | None) -> str | None:
    """The proxy's scheme, host and port, for messages (never its credentials)."""
    if proxy is None:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(proxy)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def make_http_client(
    max_connections: int = 100,
    *,
    timeout: float | None = 60.0,
    ssl_context: ssl.SSLContext | None = None,
    keepalive_expiry: float = 4.0,
) -> HttpClients:
    """The shared clients of HTTP targets (make them in the lifespan, close them on shutdown).

    ``max_connections`` (per transport setting) should cover the sum of the HTTP targets'
    concurrency; the runner's per-attempt timeout is the real deadline, ``timeout`` (per
    connect and per read) only a backstop."""
    return HttpClients(
        max_connections,
        timeout=timeout,
        ssl_context=ssl_context,
        keepalive_expiry=keepalive_expiry,
    )


__all__ = [
    "DEFAULT_TRANSPORT",
    "HttpClient",
    "HttpClients",
    "HttpReply",
    "HttpStream",
    "HttpxClient",
    "TransportSettings",
    "as_http_client",
    "make_http_client",
    "ssl_context",
    "too_large",
]
