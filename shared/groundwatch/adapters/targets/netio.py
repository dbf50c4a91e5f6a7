"""httpcore's sockets on asyncio's own streams, not through anyio.

httpcore reaches the network through a pluggable *network backend*; under asyncio its default
is anyio's, which wraps every read and write in a cancel scope (``fail_after``) and answers the
pool's "is this idle connection readable?" with a ``select`` call. On the runner's hot path
(256 requests in flight, every read and write of every request) that machinery cost about a
third of the client's CPU per request (``bench/bench_runner.py``). This backend does the same
job with :func:`asyncio.open_connection`: a write that can finish at once does no
timer work, a timeout is :func:`asyncio.timeout`, and an idle connection the server closed is
known from the end of file its protocol already saw.

:class:`AsyncioTransport` is httpx's transport over an httpcore pool (direct, or through an
HTTP or SOCKS proxy) built on this backend, all public httpx and httpcore API (httpx's own
transport takes no backend); :func:`asyncio_client` makes an ``httpx.AsyncClient`` on it, the
proxy it is given or the environment's (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``,
``NO_PROXY``, read as httpx reads them) mounted on transports of their own.
"""

# ruff: noqa: ASYNC109 - the signatures are httpcore's network-backend interface

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any, cast
from urllib.request import getproxies

import httpcore
import httpx

#: Socket option tuples as httpcore passes them (level, option, value).
SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)
#: Bytes waiting in a transport's write buffer before a write waits for them to drain.
_HIGH_WATER = 256 * 1024


@contextlib.contextmanager
def _mapped(
    timeout_as: type[Exception], error_as: type[Exception], *also: type[Exception]
) -> Iterator[None]:
    """asyncio's timeout and socket errors as the httpcore exceptions httpx maps to its own."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout_as(str(exc) or type(exc).__name__) from exc
    except (OSError, EOFError, *also) as exc:  # type: ignore[misc]
        raise error_as(str(exc) or type(exc).__name__) from exc


def _deadline(timeout: float | None) -> contextlib.AbstractAsyncContextManager[object]:
    return asyncio.timeout(timeout) if timeout is not None else contextlib.nullcontext()


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection as httpcore reads and writes it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        #: seconds between two reads (see :meth:`pace`); 0: read as data comes
        self._pace = 0.0
        #: loop time before which a read rests first
        self._next_read = 0.0

    def pace(self, seconds: float) -> None:
        """From now on read at most once per ``seconds`` (0: as data comes again), the first
        time ``seconds`` from now: a read asked for sooner first rests out the interval with
        the socket unread, so what the server sends meanwhile waits in the kernel and comes
        in one read, not one event-loop turn per packet. A read that filled ``max_bytes`` is
        followed at once (more is waiting). For an HTTP/1.1 body only (an HTTP/2 connection
        carries other requests' streams too); whoever turns it on turns it off before the
        connection is reused."""
        self._pace = seconds
        self._next_read = asyncio.get_running_loop().time() + seconds if seconds else 0.0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        reader = self._reader
        try:  # inline, not _mapped: one context manager less on every read
            if timeout is None:
                if self._pace:
                    await self._rest(None)
                data = await reader.read(max_bytes)
            else:
                async with asyncio.timeout(timeout):  # counted from the ask, the rest within
                    if self._pace:
                        await self._rest(timeout)
                    data = await reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc) or type(exc).__name__) from exc
        except (OSError, EOFError) as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc
        if self._pace:
            full = len(data) >= max_bytes
            self._next_read = 0.0 if full else asyncio.get_running_loop().time() + self._pace
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        writer = self._writer
        if writer.transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            writer.write(buffer)
            if writer.transport.get_write_buffer_size() > _HIGH_WATER:
                async with _deadline(timeout):
                    await writer.drain()

    async def _rest(self, timeout: float | None) -> None:
        """Wait until the next read is due, with the socket unread. The read's ``timeout``
        runs through the rest (a silent server times out when it would unpaced), so a rest
        takes at most half of it: what came meanwhile is read well before the deadline."""
        wait = self._next_read - asyncio.get_running_loop().time()
        if timeout is not None:
            wait = min(wait, timeout / 2)
        if wait <= 0:
            return
        # a connection's transport reads too (StreamWriter types it as write-only)
        transport = cast(asyncio.Transport, self._writer.transport)
        if not transport.is_reading():  # paused by the stream's own flow control: leave it
            await asyncio.sleep(wait)
            return
        transport.pause_reading()
        try:
            await asyncio.sleep(wait)
        finally:
            if not transport.is_closing():
                transport.resume_reading()

    async def aclose(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, ssl.SSLError, RuntimeError):
            await self._writer.wait_closed()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError, ssl.SSLError):
                async with _deadline(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except BaseException:
            await self.aclose()
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        writer = self._writer
        if info == "is_readable":  # asked of idle connections only: data or EOF = unusable
            return self._reader.at_eof() or writer.transport.is_closing()
        if info == "client_addr":
            return writer.get_extra_info("sockname")
        if info == "server_addr":
            return writer.get_extra_info("peername")
        if info in ("ssl_object", "socket"):
            return writer.get_extra_info(info)
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Connections made by :func:`asyncio.open_connection` (TCP_NODELAY, as asyncio sets)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with _deadline(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=local, limit=2**20
                )
        _set_options(writer, socket_options)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with _deadline(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=2**20)
        _set_options(writer, socket_options)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _set_options(writer: asyncio.StreamWriter, options: Iterable[SocketOption] | None) -> None:
    sock: socket.socket | None = writer.get_extra_info("socket")
    if sock is None:
        return
    for option in options or ():
        sock.setsockopt(*option)


#: httpcore's exceptions as httpx's (most specific first: the first match is the one raised).
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


def _as_httpx(exc: Exception) -> Exception:
    """httpx's exception for ``exc``; ``exc`` itself when it is not httpcore's."""
    for core, mapped in _HTTPX_ERRORS:
        if isinstance(exc, core):
            return mapped(str(exc))
    return exc


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        mapped = _as_httpx(exc)
        if mapped is exc:
            raise
        raise mapped from exc


class _Body(httpx.AsyncByteStream):
    """A response body from httpcore, its errors as httpx's (one ``try`` for the whole body,
    nothing per piece)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        with _httpx_errors():
            await self._stream.aclose()


def _core_url(url: httpx.URL) -> httpcore.URL:
    return httpcore.URL(
        scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
    )


class AsyncioTransport(httpx.AsyncBaseTransport):
    """What ``httpx.AsyncHTTPTransport`` does (a pool, direct or through ``proxy``), on
    :class:`AsyncioBackend`."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext,
        limits: httpx.Limits,
        http2: bool = False,
        proxy: str | httpx.Proxy | None = None,
        backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        backend = backend or AsyncioBackend()
        pool: dict[str, Any] = {
            "ssl_context": ssl_context,
            "max_connections": limits.max_connections,
            "max_keepalive_connections": limits.max_keepalive_connections,
            "keepalive_expiry": limits.keepalive_expiry,
            "http1": True,
            "http2": http2,
            "network_backend": backend,
        }
        self.pool: httpcore.AsyncConnectionPool
        if proxy is None:
            self.pool = httpcore.AsyncConnectionPool(**pool)
            return
        via = proxy if isinstance(proxy, httpx.Proxy) else httpx.Proxy(proxy)
        scheme = via.url.scheme
        if scheme in ("http", "https"):
            self.pool = httpcore.AsyncHTTPProxy(
                proxy_url=_core_url(via.url),
                proxy_auth=via.raw_auth,
                proxy_headers=via.headers.raw,
                proxy_ssl_context=via.ssl_context,
                **pool,
            )
        elif scheme in ("socks5", "socks5h"):
            self.pool = httpcore.AsyncSOCKSProxy(
                proxy_url=_core_url(via.url), proxy_auth=via.raw_auth, **pool
            )
        else:
            raise ValueError(f"a proxy is http, https, socks5 or socks5h, not {scheme!r}")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=_core_url(request.url),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            reply = await self.pool.handle_async_request(core)
        return httpx.Response(
            status_code=reply.status,
            headers=reply.headers,
            stream=_Body(reply.stream),
            extensions=reply.extensions,
        )

    async def aclose(self) -> None:
        with _httpx_errors():
            await self.pool.aclose()


def environment_proxies() -> dict[str, str | None]:
    """The environment's proxies as httpx mounts them: ``{"https://": proxy URL, ...}``, and a
    ``None`` (no proxy) for each ``NO_PROXY`` host (``*``: no proxy at all)."""
    found = getproxies()
    mounts: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        if found.get(scheme):
            url = found[scheme]
            mounts[f"{scheme}://"] = url if "://" in url else f"http://{url}"
    for host in (h.strip() for h in found.get("no", "").split(",")):
        if host == "*":
            return {}
        if not host:
            continue
        if "://" in host:
            mounts[host] = None
        elif _is_ip(host, ipaddress.IPv4Address) or host.lower() == "localhost":
            mounts[f"all://{host}"] = None
        elif _is_ip(host, ipaddress.IPv6Address):
            mounts[f"all://[{host}]"] = None
        else:  # a domain: itself and its subdomains
            mounts[f"all://*{host}"] = None
    return mounts


def _is_ip(host: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        kind(host.split("/")[0])
    except ValueError:
        return False
    return True


def asyncio_client(
    *,
    ssl_context: ssl.SSLContext,
    limits: httpx.Limits,
    http2: bool = False,
    proxy: str | None = None,
    trust_env: bool = True,
    **client: Any,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every pool is on :class:`AsyncioBackend`: ``proxy`` for
    every request, else (``trust_env``) the environment's proxies, else none. ``client``: the
    other ``httpx.AsyncClient`` arguments (timeout, headers, ...)."""
    backend = AsyncioBackend()

    def transport(via: str | None = None) -> AsyncioTransport:
        return AsyncioTransport(
            ssl_context=ssl_context, limits=limits, http2=http2, proxy=via, backend=backend
        )

    routes = {"all://": proxy} if proxy is not None else environment_proxies() if trust_env else {}
    mounts = {pattern: None if via is None else transport(via) for pattern, via in routes.items()}
    # trust_env=False: the proxies are the mounts above, the CAs are in ssl_context
    return httpx.AsyncClient(transport=transport(), mounts=mounts, trust_env=False, **client)


__all__ = [
    "AsyncioBackend",
    "AsyncioStream",
    "AsyncioTransport",
    "asyncio_client",
    "environment_proxies",
]
