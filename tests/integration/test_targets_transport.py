"""The shared HTTP client (httpx behind HttpClients) against a real socket server on 127.0.0.1 (no external service)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

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
            client.exchange("POST", server.url, {}, b"{}", 1 << 20), timeout=30
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


async def test_client_reads_bodies_ended_by_close_and_compressed_ones() -> None:
    import gzip

    async def until_close(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY)
        await writer.drain()

    async def gzipped(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        while await read_request(reader) is not None:
            writer.write(ok_response(gzip.compress(BODY), b"Content-Encoding: gzip\r\n"))
            await writer.drain()

    async with serving(until_close) as server, make_http_client(4) as client:
        target = HttpJsonTarget(client, server.url)
        assert (await target.ask("q")).answer == "Oslo"
        assert (await target.ask("q")).answer == "Oslo"
        assert server.connections == 2  # a body ended by the close ends the connection too

    async with serving(gzipped) as server, make_http_client(4) as client:
        reply = await client.exchange("POST", server.url, {}, b"{}", 1 << 20)
        assert reply.body == BODY
        with pytest.raises(TargetError) as err:  # inflated past the cap: refused
            await client.exchange("POST", server.url, {}, b"{}", len(BODY) - 1)
        assert err.value.kind is ErrorKind.BAD_PAYLOAD


async def test_client_refuses_malformed_replies_and_header_injection() -> None:
    async def garbage(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 2x0 WHAT\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    async with serving(garbage) as server, make_http_client(4) as client:
        with pytest.raises(TargetError) as err:
            await HttpJsonTarget(client, server.url).ask("q")
        assert err.value.kind is ErrorKind.CONNECTION
        with pytest.raises(TargetError) as err:
            await client.exchange("POST", server.url, {"X-Key": "a\r\nX-Evil: 1"}, b"{}", 100)
        assert err.value.kind is ErrorKind.EXCEPTION
        assert server.connections == 1  # the injected request never left


async def test_client_sends_basic_auth_from_the_url_and_drops_expired_idle_connections() -> None:
    async with serving(keep_alive) as server, make_http_client(4, keepalive_expiry=0.05) as client:
        url = server.url.replace("http://", "http://user:p%40ss@")
        assert (await client.exchange("POST", url, {}, b"{}", 1 << 20)).status == 200
        await asyncio.sleep(0.15)  # idle past its expiry: closed by the watchdog
        assert (await client.exchange("POST", url, {}, b"{}", 1 << 20)).status == 200
        assert server.connections == 2
    assert b"authorization: basic dxnlcjpwqhnz" in server.requests[0].lower()  # user:p@ss
    with pytest.raises(RuntimeError, match="closed"):  # no new connection after aclose
        await client.exchange("POST", url, {}, b"{}", 1 << 20)


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by the openssl command."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_client_speaks_tls_with_the_given_context(self_signed: tuple[Path, Path]) -> None:
    import ssl

    cert, key = self_signed
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server = Server(keep_alive)
    srv = await asyncio.start_server(server._serve, "127.0.0.1", 0, ssl=server_ctx)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        trusted = ssl.create_default_context(cafile=str(cert))
        async with make_http_client(2, ssl_context=trusted) as client:
            target = HttpJsonTarget(client, f"https://127.0.0.1:{port}/query")
            assert (await target.ask("q")).answer == "Oslo"
            assert (await target.ask("q")).answer == "Oslo"
        assert server.connections == 1
        async with make_http_client(2) as client:  # the system's trust store: refused
            with pytest.raises(TargetError) as err:
                await HttpJsonTarget(client, f"https://127.0.0.1:{port}/query").ask("q")
            assert err.value.kind is ErrorKind.CONNECTION
        srv.close()


async def test_requests_beyond_the_bound_wait_their_turn_and_a_waiter_may_give_up() -> None:
    async with serving(keep_alive) as server, make_http_client(1) as client:
        first = asyncio.create_task(client.exchange("POST", server.url, {}, b"{}", 1 << 20))
        await asyncio.sleep(0)
        gives_up = asyncio.create_task(client.exchange("POST", server.url, {}, b"{}", 1 << 20))
        rest = [
            asyncio.create_task(client.exchange("POST", server.url, {}, b"{}", 1 << 20))
            for _ in range(3)
        ]
        await asyncio.sleep(0)
        gives_up.cancel()  # while it waits for the one slot
        replies = await asyncio.wait_for(asyncio.gather(first, *rest), timeout=30)
        assert [r.status for r in replies] == [200] * 4
        assert gives_up.cancelled()
        assert server.connections == 1 and len(server.requests) == 4  # one at a time
        assert client.in_flight == 0  # the waiter that gave up holds no slot


async def test_a_redirect_over_the_wire_is_an_error_never_an_answer() -> None:
    """A 302 whose body parses as an answer: the shared client does not follow it, the target
    raises ``redirect``, and the runner records an error once (not retried, never judged)."""
    from groundwatch.adapters.targets import TargetLimits
    from groundwatch.contracts import TargetStatus
    from groundwatch.stages.runner.lanes import Runner
    from tests.unit._runner_helpers import probe

    async def moved(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        while (req := await read_request(reader)) is not None:
            s.requests.append(req)
            body = b'{"answer": "Paris"}'
            writer.write(
                b"HTTP/1.1 302 Found\r\nLocation: http://login.local/\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()

    async with serving(moved) as server, make_http_client(4) as client:
        target = HttpJsonTarget(client, server.url)
        with pytest.raises(TargetError) as err:
            await target.ask("q")
        assert err.value.kind is ErrorKind.REDIRECT and err.value.status_code == 302
        async with Runner({"t": target}, {"t": TargetLimits(retries=2)}) as runner:
            response = await runner.run(probe("t"))
    assert response.status is TargetStatus.ERROR and response.error_kind == "redirect"
    assert response.answer in ("", None) and len(server.requests) == 2  # one ask, one run
