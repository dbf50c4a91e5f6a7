"""httpcore on asyncio's streams and httpx on them (adapters/targets/netio.py), against real
loopback servers."""

from __future__ import annotations

import asyncio
import fcntl
import ssl
import sys
import termios

import httpcore
import pytest

from groundwatch.adapters.targets import netio
from groundwatch.adapters.targets.netio import AsyncioBackend, AsyncioTransport
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
    """The direct pool and the one mounted for the environment's proxy are both made by
    :class:`AsyncioTransport`: a pool made by httpx itself would put the runner on anyio's
    sockets without a word."""
    from groundwatch.adapters.targets.netio import environment_proxies
    from groundwatch.adapters.targets.transport import DEFAULT_TRANSPORT, make_http_client

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost,.internal,10.0.0.1")
    assert environment_proxies() == {
        "https://": "http://127.0.0.1:9",
        "all://localhost": None,
        "all://*.internal": None,
        "all://10.0.0.1": None,
    }
    made: list[AsyncioTransport] = []
    real_init = AsyncioTransport.__init__

    def spy(self: AsyncioTransport, **kwargs: object) -> None:
        real_init(self, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(AsyncioTransport, "__init__", spy)
    async with make_http_client(8) as clients:
        clients.for_settings(DEFAULT_TRANSPORT)
    assert len(made) >= 2  # the direct pool and the proxy's
    assert all(isinstance(t.pool, httpcore.AsyncConnectionPool) for t in made)
    via = [t.pool for t in made if isinstance(t.pool, httpcore.AsyncHTTPProxy)]
    assert len(via) == 1


async def test_the_transport_maps_httpcore_errors_to_httpx_and_reads_a_body() -> None:
    import httpx

    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    limits = httpx.Limits(max_connections=2)
    ctx = ssl.create_default_context()
    async with httpx.AsyncClient(
        transport=AsyncioTransport(ssl_context=ctx, limits=limits)
    ) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")

        async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(REPLY.replace(b"Content-Length: 2", b"Content-Length: 9"))
            await writer.drain()
            writer.close()  # 2 of the 9 bytes promised

        server = await asyncio.start_server(cut, "127.0.0.1", 0)
        async with server:
            url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
            async with client.stream("GET", url) as reply:
                assert reply.status_code == 200
                with pytest.raises(httpx.RemoteProtocolError):
                    await reply.aread()


def _unread(fd: int) -> int:
    """Bytes waiting in the kernel's receive queue of socket ``fd``."""
    got = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    return int.from_bytes(got, sys.byteorder)


async def test_a_paced_read_leaves_the_socket_unread_and_loses_nothing() -> None:
    """A paced stream's read that comes before its time rests with the socket unread: what
    the server sends meanwhile waits in the kernel and comes in one read after it, whole and
    in order (a cancelled rest reads again too, and pace 0 reads as data comes)."""
    written = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"first")
        await writer.drain()
        await reader.readexactly(2)  # the client is resting now
        for piece in (b"-a", b"-b", b"-c"):
            writer.write(piece)
            await writer.drain()
        written.set()
        await reader.read()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
        assert isinstance(stream, netio.AsyncioStream)
        await stream.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await stream.read(1024, timeout=5) == b"first"
        stream.pace(3600)  # the next read is due an hour from now
        resting = asyncio.create_task(stream.read(1024))
        await asyncio.sleep(0)
        fd = stream.get_extra_info("socket").fileno()
        await stream.write(b"go")
        await written.wait()
        await asyncio.sleep(0.01)  # a loop turn in which an unpaused socket would be read
        assert _unread(fd) == 6  # all three pieces still in the kernel
        assert not resting.done()
        resting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await resting
        stream.pace(0)
        assert await stream.read(1024, timeout=5) == b"-a-b-c"
        await stream.aclose()


async def test_a_paced_read_times_out_as_an_unpaced_one_and_reads_what_came() -> None:
    """A read's timeout runs through its rest: a silent server times out at the timeout, not
    a pace later; a rest takes at most half the timeout, so what the server sent meanwhile is
    read (not a timeout) though the next read was due an hour from now."""
    send = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await send.wait()
        writer.write(b"late")
        await writer.drain()
        await reader.read()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server, asyncio.timeout(60):  # an hour's rest would fail here
        port = server.sockets[0].getsockname()[1]
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
        assert isinstance(stream, netio.AsyncioStream)
        stream.pace(3600)
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(1024, timeout=0.05)
        stream.pace(3600)
        send.set()
        assert await stream.read(1024, timeout=2) == b"late"
        await stream.aclose()


async def test_an_http1_stream_of_the_shared_clients_rests_on_its_socket() -> None:
    from groundwatch.adapters.targets.transport import make_http_client

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(REPLY)
        await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server, make_http_client(4) as client:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        async with client.stream("GET", url, {}, None, 1024) as reply:
            connection = getattr(reply.pace, "__self__", None)
            assert isinstance(connection, netio.AsyncioStream)
            reply.pace(0.01)
            assert await reply.read() == b"ok"
        assert connection._pace == 0  # the connection's next request reads as data comes
