"""Reaching endpoints as companies run them, against real servers on 127.0.0.1: a forward proxy
(from the environment or the targets file), a TLS origin signed by a private CA, one that
requires a client certificate; and what a bad setting of each does (one line naming the target,
or a typed target error)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from groundwatch.adapters.targets import ErrorKind, HttpJsonTarget, TargetError, make_http_client
from groundwatch.adapters.targets.config import build_targets, parse_targets
from groundwatch.errors import ConfigError
from tests.integration._http_servers import (
    Issued,
    PrivateCA,
    Request,
    closed_port,
    origin,
    proxy,
    response,
    server_tls,
)

pytestmark = pytest.mark.integration

ANSWER = b'{"answer": "Oslo", "retrieved_ids": ["d1"], "contexts": ["Acme is in Oslo."]}'
_PROXY_VARS = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy or CA variable of the machine running the tests leaks into them."""
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def ca(tmp_path: Path) -> PrivateCA:
    return PrivateCA(tmp_path)


@pytest.fixture
def server_cert(ca: PrivateCA) -> Issued:
    return ca.issue("127.0.0.1")


async def answer(request: Request, writer: asyncio.StreamWriter) -> None:
    writer.write(response(200, ANSWER))


def one_target(
    config: dict[str, object], client: object, env: dict[str, str] | None = None
) -> HttpJsonTarget:
    targets, _ = build_targets(
        parse_targets([{"name": "rag", "type": "http_json", **config}]),
        http_client=client,  # type: ignore[arg-type]
        env=env or {},
    )
    target = targets["rag"]
    assert isinstance(target, HttpJsonTarget)
    return target


# ----------------------------------------------------------------------------------- proxies
async def test_the_environments_proxy_carries_http_and_https_and_no_proxy_bypasses_it(
    monkeypatch: pytest.MonkeyPatch, ca: PrivateCA, server_cert: Issued
) -> None:
    async with (
        origin(answer) as plain,
        origin(answer, tls=server_tls(server_cert)) as tls,
        proxy() as fwd,
    ):
        monkeypatch.setenv("HTTP_PROXY", fwd.url)
        monkeypatch.setenv("HTTPS_PROXY", fwd.url)
        monkeypatch.setenv("SSL_CERT_FILE", str(ca.cert_path))
        async with make_http_client(4) as client:
            assert (await one_target({"url": f"{plain.url}/ask"}, client).ask("q")).answer == "Oslo"
            assert (await one_target({"url": f"{tls.url}/ask"}, client).ask("q")).answer == "Oslo"
        assert fwd.seen == [f"POST {plain.url}/ask", f"CONNECT {tls.url.removeprefix('https://')}"]
        assert [r.target for r in plain.requests] == ["/ask"]  # relayed, in origin form

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with make_http_client(4) as client:
            assert (await one_target({"url": f"{plain.url}/ask"}, client).ask("q")).answer == "Oslo"
        assert len(fwd.seen) == 2  # went direct


async def test_a_targets_own_proxy_with_credentials_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with origin(answer) as plain, proxy(user="gw", password="s3cret") as fwd:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")  # not used
        env = {"PROXY_PASSWORD": "s3cret"}
        async with make_http_client(4) as client:
            good = one_target(
                {
                    "url": f"{plain.url}/ask",
                    "proxy": fwd.url.replace("http://", "http://gw:${PROXY_PASSWORD}@"),
                },
                client,
                env,
            )
            assert (await good.ask("q")).answer == "Oslo"
            direct = one_target({"url": f"{plain.url}/ask", "proxy": "direct"}, client)
            assert (await direct.ask("q")).answer == "Oslo"
            wrong = one_target(
                {"url": f"{plain.url}/ask", "proxy": fwd.url.replace("http://", "http://gw:no@")},
                client,
            )
            with pytest.raises(TargetError) as err:
                await wrong.ask("q")
        assert err.value.kind is ErrorKind.HTTP_4XX and "407" in str(err.value)
        assert fwd.seen == [f"POST {plain.url}/ask"] * 2 and fwd.refused == 1
        assert len(plain.requests) == 2  # one through the proxy, one direct


async def test_an_unreachable_proxy_is_a_connection_error_naming_the_proxy() -> None:
    dead = f"http://user:hunter2@127.0.0.1:{closed_port()}"
    async with origin(answer) as plain, make_http_client(4) as client:
        target = one_target({"url": f"{plain.url}/ask", "proxy": dead}, client)
        with pytest.raises(TargetError) as err:
            await target.ask("q")
        https = one_target({"url": "https://127.0.0.1:1/ask", "proxy": dead}, client)
        with pytest.raises(TargetError) as err_tls:
            await https.ask("q")
    for e in (err, err_tls):
        assert e.value.kind is ErrorKind.CONNECTION
        assert dead.replace("user:hunter2@", "") in str(e.value)
        assert "hunter2" not in str(e.value)
    assert plain.requests == []


# --------------------------------------------------------------------------------------- TLS
async def test_a_private_ca_from_ca_file_or_ssl_cert_file(
    monkeypatch: pytest.MonkeyPatch, ca: PrivateCA, server_cert: Issued
) -> None:
    async with origin(answer, tls=server_tls(server_cert)) as tls:
        url = f"{tls.url}/ask"
        async with make_http_client(4) as client:
            trusted = one_target({"url": url, "ca_file": str(ca.cert_path)}, client)
            assert (await trusted.ask("q")).answer == "Oslo"
            with pytest.raises(TargetError) as err:  # the system's store does not know the CA
                await one_target({"url": url}, client).ask("q")
            assert err.value.kind is ErrorKind.CONNECTION
            assert "CERTIFICATE_VERIFY_FAILED" in str(err.value)
        monkeypatch.setenv("SSL_CERT_FILE", str(ca.cert_path))
        async with make_http_client(4) as client:
            assert (await one_target({"url": url}, client).ask("q")).answer == "Oslo"


async def test_a_server_that_requires_a_client_certificate(
    tmp_path: Path, ca: PrivateCA, server_cert: Issued
) -> None:
    clients_ca = PrivateCA(tmp_path, name="client CA")
    mine = clients_ca.issue("groundwatch", client=True)
    stranger = PrivateCA(tmp_path, name="other CA").issue("intruder", client=True)
    tls_ctx = server_tls(server_cert, client_ca=clients_ca.cert_path)
    async with origin(answer, tls=tls_ctx) as tls, make_http_client(4) as client:
        url = f"{tls.url}/ask"
        base = {"url": url, "ca_file": str(ca.cert_path)}
        with_cert = {**base, "client_cert": str(mine.cert), "client_key": str(mine.key)}
        assert (await one_target(with_cert, client).ask("q")).answer == "Oslo"
        for config in (
            base,
            {**base, "client_cert": str(stranger.cert), "client_key": str(stranger.key)},
        ):
            with pytest.raises(TargetError) as err:
                await one_target(config, client).ask("q")
            assert err.value.kind is ErrorKind.CONNECTION
    assert len(tls.requests) == 1


def test_bad_tls_files_are_one_line_naming_the_target(
    tmp_path: Path, ca: PrivateCA, server_cert: Issued
) -> None:
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("hello")
    other_key = ca.issue("127.0.0.2").key

    async def build(config: dict[str, object]) -> str:
        async with make_http_client(4) as client:
            with pytest.raises(ConfigError) as err:
                one_target({"url": "https://127.0.0.1/ask", **config}, client)
        return str(err.value)

    async def all_of() -> list[str]:
        return [
            await build({"ca_file": str(tmp_path / "missing.pem")}),
            await build({"ca_file": str(not_pem)}),
            await build({"client_cert": str(server_cert.cert), "client_key": str(other_key)}),
        ]

    missing, garbage, mismatch = asyncio.run(all_of())
    assert missing == f"target rag: ca_file {tmp_path / 'missing.pem'}: no such file"
    assert garbage.startswith(f"target rag: ca_file {not_pem}: not a PEM CA bundle")
    assert mismatch.startswith(f"target rag: client_cert {server_cert.cert}: cannot load")
    assert all("\n" not in m for m in (missing, garbage, mismatch))


def test_the_cli_exits_2_with_one_line_for_an_unknown_ca_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    cli = str(Path(sys.executable).with_name("groundwatch"))
    dataset = tmp_path / "demo.jsonl"
    gen = [cli, "gen", "--demo", "--out", str(dataset)]
    subprocess.run(gen, check=True, capture_output=True, timeout=120)
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n  - name: corp-rag\n    type: http_json\n    url: https://rag.corp/ask\n"
        f"    ca_file: {tmp_path / 'corp-ca.pem'}\n"
    )
    args = ["run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet"]
    done = subprocess.run([cli, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [f"error: target corp-rag: ca_file {tmp_path / 'corp-ca.pem'}: no such file"]


async def test_http2_when_the_target_asks_for_it(ca: PrivateCA, server_cert: Issued) -> None:
    """An HTTP/2-only TLS server (h2's own server state machine): a target with ``http2``
    offers h2 by ALPN and is answered over it, several requests on one connection."""
    import h2.config
    import h2.connection
    import h2.events

    protocols: list[str | None] = []
    paths: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        protocols.append(writer.get_extra_info("ssl_object").selected_alpn_protocol())
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        try:
            while data := await reader.read(65536):
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        paths.append(dict(event.headers)[b":path"].decode())
                    elif isinstance(event, h2.events.DataReceived):
                        conn.acknowledge_received_data(len(event.data), event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):
                        head = [(":status", "200"), ("content-length", str(len(ANSWER)))]
                        conn.send_headers(event.stream_id, head)
                        conn.send_data(event.stream_id, ANSWER, end_stream=True)
                writer.write(conn.data_to_send())
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    tls = server_tls(server_cert)
    tls.set_alpn_protocols(["h2"])
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    async with server, make_http_client(4) as client:
        config = {"url": f"https://127.0.0.1:{port}/ask", "ca_file": str(ca.cert_path)}
        target = one_target({**config, "http2": True}, client)
        replies = await asyncio.gather(*(target.ask(f"q{i}") for i in range(3)))
        server.close()
    assert [r.answer for r in replies] == ["Oslo"] * 3
    assert protocols == ["h2"] and paths == ["/ask"] * 3  # one connection, three streams


async def test_the_pool_grows_in_shards_and_keeps_its_connection_bound() -> None:
    """Eight requests held by the server until all eight are in: the client opens eight
    connections over two shards of four; twelve at once still never exceed the bound."""
    from tests.integration._http_servers import response as reply_bytes

    held: list[str] = []
    everyone = asyncio.Event()

    async def hold(request: Request, writer: asyncio.StreamWriter) -> None:
        held.append(request.target)
        if len(held) % 8 == 0:
            everyone.set()
        await everyone.wait()
        writer.write(reply_bytes(200, ANSWER))

    async with origin(hold) as server, make_http_client(8) as client:
        target = one_target({"url": f"{server.url}/ask"}, client)
        first = await asyncio.gather(*(target.ask(f"q{i}") for i in range(8)))
        everyone.clear()
        more = await asyncio.gather(*(target.ask(f"r{i}") for i in range(16)))
        shards = len(client._default.shards)
    assert [r.answer for r in first + more] == ["Oslo"] * 24
    assert shards == 2 and server.connections == 8  # reused, never past the bound
