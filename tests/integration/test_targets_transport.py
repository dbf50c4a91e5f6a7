"""The shared HTTP client (aiohttp) against a real socket server on 127.0.0.1 (no external service)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from groundwatch.adapters.targets import ErrorKind, HttpJsonTarget, TargetError
from groundwatch.adapters.targets.transport import make_http_client

pytestmark = pytest.mark.integration

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Server"], Awaitable[None]]
BODY = b'{"answer": "Oslo", "retrieved_ids": ["d1"], "contexts": ["Acme is in Oslo."]}'


def ok_response(body: bytes = BODY, extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s"
        % (len(body), extra, body)
    )


async def read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


class Server:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self)
        finally:
            writer.close()


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[Server]:
    server = Server(handler)
    srv = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    server.url = f"http://127.0.0.1:{port}/query"
    async with srv:
        yield server
        srv.close()


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
    while (req := await read_request(reader)) is not None:
        s.requests.append(req)
        await asyncio.sleep(0.01)
        writer.write(ok_response())
        await writer.drain()


async def test_keep_alive_reuse_and_connection_bound() -> None:
    async with serving(keep_alive) as server, make_http_client(4) as client:
        target = HttpJsonTarget(client, server.url)
        for _ in range(5):
            assert (await target.ask("q")).answer == "Oslo"
        assert server.connections == 1
        replies = await asyncio.gather(*(target.ask(f"q{i}") for i in range(20)))
        assert all(r.retrieved_ids == ["d1"] for r in replies)
        assert server.connections <= 4
    assert b'{"query": "q7"}' in b"".join(server.requests)
    assert all(b"\r\nhost: 127.0.0.1" in r.lower() for r in server.requests)


@pytest.mark.parametrize("pause", [0.0, 0.02])
async def test_client_recovers_when_server_closes_idle_connection(pause: float) -> None:
    async def one_shot(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        if await read_request(reader) is not None:
            writer.write(ok_response())
            await writer.drain()
        # then close without "Connection: close", as servers do on keep-alive timeout

    async with serving(one_shot) as server, make_http_client(4) as client:
        target = HttpJsonTarget(client, server.url)
        for _ in range(3):
            assert (await target.ask("q")).answer == "Oslo"
            await asyncio.sleep(pause)  # 0: the close races the next request (retried once)
        assert server.connections == 3


async def test_client_reads_chunked_replies_and_honours_connection_close() -> None:
    async def chunked(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        while await read_request(reader) is not None:
            half = len(BODY) // 2
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
                % (half, BODY[:half], len(BODY) - half, BODY[half:])
            )
            await writer.drain()
            return

    async with serving(chunked) as server, make_http_client(4) as client:
        target = HttpJsonTarget(client, server.url)
        assert (await target.ask("q")).contexts == ["Acme is in Oslo."]
        assert (await target.ask("q")).answer == "Oslo"
        assert server.connections == 2


async def test_client_errors_map_to_target_error_kinds() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        await read_request(reader)
        writer.write(ok_response()[:-10])  # fewer bytes than Content-Length, then close
        await writer.drain()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async with serving(cut) as server, make_http_client(4) as client:
        with pytest.raises(TargetError) as err:
            await HttpJsonTarget(client, server.url).ask("q")
        assert err.value.kind is ErrorKind.CONNECTION

    async with serving(silent) as server, make_http_client(4, timeout=0.1) as client:
        with pytest.raises(TargetError) as err:
            await HttpJsonTarget(client, server.url).ask("q")
        assert err.value.kind is ErrorKind.TIMEOUT

    async with make_http_client(4) as client:
        with pytest.raises(TargetError) as err:
            await HttpJsonTarget(client, "http://127.0.0.1:9/query").ask("q")
        assert err.value.kind is ErrorKind.CONNECTION


async def test_client_releases_slots_when_requests_are_cancelled_or_too_large() -> None:
    async with serving(keep_alive) as server, make_http_client(2) as client:
        for _ in range(4):  # a body over the cap: refused, its connection not kept busy
            with pytest.raises(TargetError) as err:
                await client.exchange("POST", server.url, {}, b"{}", 10)
            assert err.value.kind is ErrorKind.BAD_PAYLOAD
        for _ in range(4):
            task = asyncio.create_task(client.exchange("POST", server.url, {}, b"{}", 1 << 20))
            await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        reply = await asyncio.wait_for(
            client.exchange("POST", server.url, {}, b"{}", 1 << 20), timeout=2
        )
        assert reply.status == 200 and b"Oslo" in reply.body


async def test_client_retries_once_when_a_reused_connection_dies_unanswered() -> None:
    async def drop_second(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        if await read_request(reader) is not None:
            writer.write(ok_response())
            await writer.drain()
        await read_request(reader)  # a second request on this connection: dropped unanswered

    async with serving(drop_second) as server, make_http_client(4) as client:
        target = HttpJsonTarget(client, server.url)
        for _ in range(3):
            assert (await target.ask("q")).answer == "Oslo"
        assert server.connections == 3
