"""httpcore's sockets on asyncio's own streams, not through anyio.

httpcore reaches the network through a pluggable *network backend*; under asyncio its default
is anyio's, which wraps every read and write in a cancel scope (``fail_after``) and answers the
pool's "is this idle connection readable?" with a ``select`` call. On the runner's hot path
(256 requests in flight, every read and write of every request) that machinery cost about a
third of the client's CPU per request (``bench/bench_runner.py``). This backend does the same
job with :func:`asyncio.open_connection`: a read or a write that can finish at once does no
timer work, a timeout is :func:`asyncio.timeout`, and an idle connection the server closed is
known from the end of file its protocol already saw.

:func:`use_asyncio_backend` puts it under an ``httpx.AsyncClient``'s transports (the default
one and those the client mounted for the environment's proxies); a transport it does not know
(``httpx.MockTransport``, ``httpx.ASGITransport``) is left as it is.
"""

# ruff: noqa: ASYNC109 - the signatures are httpcore's network-backend interface

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import httpcore

if TYPE_CHECKING:
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

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            async with _deadline(timeout):
                return await self._reader.read(max_bytes)

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


def use_asyncio_backend(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """``client`` with :class:`AsyncioBackend` under each httpcore pool it holds (before any
    connection is made: a pool hands its backend to each connection it opens)."""
    backend = AsyncioBackend()
    transports = [client._transport, *client._mounts.values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if isinstance(pool, httpcore.AsyncConnectionPool):
            pool._network_backend = backend
    return client


__all__ = ["AsyncioBackend", "AsyncioStream", "use_asyncio_backend"]
