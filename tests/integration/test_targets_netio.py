"""httpcore on asyncio's streams (adapters/targets/netio.py), against a real loopback server."""

from __future__ import annotations

import asyncio

import httpcore
import pytest

from groundwatch.adapters.targets.netio import AsyncioBackend
from tests.waiting import until

REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


async def _serve_once_then_close(
    close: asyncio.Event,
) -> tuple[asyncio.Server, list[int]]:
    """Answers one request per connection, then closes it once ``close`` is set (a keep-alive
    the server ended while the connection sat idle in the pool)."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(REPLY)
        await writer.drain()
        await close.wait()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, connections


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    close = asyncio.Event()
    server, connections = await _serve_once_then_close(close)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    async with server, httpcore.AsyncConnectionPool(network_backend=AsyncioBackend()) as pool:
        first = await pool.request("GET", url)
        assert first.status == 200 and first.content == b"ok"
        (conn,) = pool.connections
        assert not conn.has_expired()  # idle, open: reusable
        close.set()
        # until the server's FIN is in (the mechanism, not a time bound)
        await until("the server's FIN", lambda: conn.has_expired() or not pool.connections)
        second = await pool.request("GET", url)  # no retry: a reused dead socket would fail
        assert second.status == 200 and second.content == b"ok"
    assert len(connections) == 2


async def test_a_refused_connection_and_a_silent_server_are_httpcore_errors() -> None:
    backend = AsyncioBackend()
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("127.0.0.1", port, timeout=5)

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    async with server:
        stream = await backend.connect_tcp("127.0.0.1", server.sockets[0].getsockname()[1])
        await stream.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(1024, timeout=0.05)
        assert stream.get_extra_info("is_readable") is False
        assert stream.get_extra_info("server_addr")[1] == server.sockets[0].getsockname()[1]
        await stream.aclose()
        with pytest.raises(httpcore.WriteError):
            await stream.write(b"more")


async def test_every_pool_of_the_shared_clients_is_on_the_asyncio_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default pool and those mounted for the environment's proxies: an httpx release that
    moved them would otherwise leave the runner on anyio's sockets without a word."""
    from groundwatch.adapters.targets.transport import DEFAULT_TRANSPORT, make_http_client

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    async with make_http_client(8) as clients:
        client = clients.for_settings(DEFAULT_TRANSPORT).shards[0]
        transports = [client._transport, *client._mounts.values()]
        pools = [t._pool for t in transports if t is not None]  # type: ignore[attr-defined]
        assert len(pools) >= 2  # the direct pool and the proxy's
        assert all(isinstance(p._network_backend, AsyncioBackend) for p in pools)
