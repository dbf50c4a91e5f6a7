"""Streamed answers (SSE, OpenAI-compatible ``stream: true`` chunks, NDJSON) and per-request
auth (OAuth2 client credentials whose tokens expire during a continuous run, a custom signer),
against real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from groundwatch.adapters.targets import (
    ErrorKind,
    HttpJsonTarget,
    TargetError,
    TargetLimits,
    make_http_client,
)
from groundwatch.adapters.targets.auth import OAuth2ClientCredentials, SignRequest
from groundwatch.adapters.targets.config import build_targets, parse_targets
from groundwatch.adapters.targets.streams import StreamFormat, StreamSpec
from groundwatch.contracts import TargetStatus
from groundwatch.runtime.runner_telemetry import RunnerTelemetry
from groundwatch.stages.runner.lanes import Runner
from tests.integration._http_servers import STREAM_HEAD, Request, chunk, origin, response
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.integration


def sse(*events: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    out = b""
    for e in events:
        data = e if isinstance(e, str) else orjson.dumps(e).decode()
        out += (f"event: {event}\n" if event else "").encode() + f"data: {data}\n\n".encode()
    return out


def openai_chunks(text: list[str], sources: list[str]) -> list[dict[str, Any]]:
    """The chunks an OpenAI-compatible server streams: a role chunk, content, a finish chunk,
    a usage chunk with no choices (``stream_options.include_usage``)."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "rag"}
    first = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
    chunks = [{**base, "choices": [first], "sources": [{"id": s} for s in sources]}]
    for t in text:
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": t}}]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    chunks.append({**base, "choices": [], "usage": usage})
    return chunks


async def stream_back(writer: asyncio.StreamWriter, *pieces: bytes) -> None:
    """A chunked reply, each piece written (and flushed) on its own as a server would."""
    writer.write(STREAM_HEAD)
    for piece in pieces:
        writer.write(chunk(piece))
        await writer.drain()
        await asyncio.sleep(0)
    writer.write(b"0\r\n\r\n")


def target_of(config: dict[str, Any], client: object, **kw: Any) -> HttpJsonTarget:
    targets, _ = build_targets(
        parse_targets([{"name": "rag", "type": "http_json", **config}]),
        http_client=client,  # type: ignore[arg-type]
        **kw,
    )
    found = targets["rag"]
    assert isinstance(found, HttpJsonTarget)
    return found


# ----------------------------------------------------------------------------------- streams
async def test_an_sse_stream_is_judged_whole_with_its_ids_and_time_to_first_token() -> None:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        assert orjson.loads(request.body) == {"question": "Where is Acme?"}
        await stream_back(
            writer,
            b": connected\n\n",  # a comment: ignored
            sse({"sources": ["d1", "d2"]}, event="sources"),
            sse({"delta": "Acme is in "}, {"delta": "Os"}),
            sse({"delta": "lo."}, {"sources": ["d2", "d3"]}),
            b"data: [DONE]\n\n",
        )

    seen: list[tuple[str, float | None, float]] = []
    async with origin(handler) as server, make_http_client(4) as client:
        target = target_of(
            {
                "url": f"{server.url}/ask",
                "body": {"question": "{query}"},
                "stream": {"format": "sse", "delta_path": "delta", "retrieved_ids_path": "sources"},
            },
            client,
            stream_hook=lambda name, first, total: seen.append((name, first, total)),
        )
        reply = await target.ask("Where is Acme?")
    assert reply.answer == "Acme is in Oslo."
    assert reply.retrieved_ids == ["d1", "d2", "d3"]
    [(name, first, total)] = seen
    assert name == "rag" and first is not None and 0 < first <= total


async def test_a_streams_pieces_reach_the_reader_as_the_server_sends_them() -> None:
    """The server sends its second piece only once the client has read the first: a client
    that gathered the body before handing it over would wait for ever (and time out here)."""
    first_read = asyncio.Event()

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(STREAM_HEAD + chunk(sse({"delta": "Os"})))
        await writer.drain()
        await first_read.wait()
        writer.write(chunk(sse({"delta": "lo"}) + b"data: [DONE]\n\n") + b"0\r\n\r\n")

    pieces = []
    async with (
        origin(handler) as server,
        make_http_client(4) as client,
        client.stream("POST", f"{server.url}/ask", {}, b"{}", 1 << 20) as reply,
        asyncio.timeout(10),
    ):
        async for piece in reply.chunks:
            pieces.append(piece)
            first_read.set()
    assert pieces[0] == sse({"delta": "Os"}) and b"[DONE]" in pieces[-1]


async def test_an_openai_compatible_stream_read_by_the_sdk_and_by_the_target() -> None:
    chunks = openai_chunks(["Os", "lo"], ["doc-7", "doc-9"])

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        assert orjson.loads(request.body)["stream"] is True
        await stream_back(writer, *(sse(c) for c in chunks), b"data: [DONE]\n\n")

    async with origin(handler) as server, make_http_client(4) as client:
        import openai

        sdk = openai.AsyncOpenAI(base_url=server.url, api_key="x", max_retries=0)
        told = await sdk.chat.completions.create(
            model="rag", messages=[{"role": "user", "content": "q"}], stream=True
        )
        sdk_text = "".join([c.choices[0].delta.content or "" async for c in told if c.choices])
        await sdk.close()
        target = target_of(
            {
                "url": f"{server.url}/chat/completions",
                "body": {
                    "model": "rag",
                    "stream": True,
                    "messages": [{"role": "user", "content": "{query}"}],
                },
                "stream": {"format": "openai", "retrieved_ids_path": "sources.*.id"},
            },
            client,
        )
        reply = await target.ask("Where is Acme?")
        again = await target.ask("Where is Acme?")
    assert sdk_text == reply.answer == again.answer == "Oslo"
    assert reply.retrieved_ids == ["doc-7", "doc-9"]
    # the body read to its end after [DONE]: the target's connection carried both asks
    assert server.connections == 2  # the SDK's and the target's


async def test_an_ndjson_stream_and_a_stream_without_any_delta() -> None:
    lines = [{"type": "context", "ids": ["a"]}, {"token": "Os"}, {"token": "lo"}, {"done": True}]

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        body = b"".join(orjson.dumps(x) + b"\n" for x in lines)
        if request.target == "/nothing":
            body = b'{"status": "busy"}\n'
        await stream_back(writer, body[:7], body[7:])  # a line split across chunks

    async with origin(handler) as server, make_http_client(4) as client:
        spec = {"format": "ndjson", "delta_path": "token", "retrieved_ids_path": "ids"}
        target = target_of({"url": f"{server.url}/ask", "stream": spec}, client)
        reply = await target.ask("q")
        assert (reply.answer, reply.retrieved_ids) == ("Oslo", ["a"])
        nothing = target_of({"url": f"{server.url}/nothing", "stream": spec}, client)
        with pytest.raises(TargetError) as err:
            await nothing.ask("q")
    assert err.value.kind is ErrorKind.BAD_PAYLOAD and "held no token" in str(err.value)


async def test_a_stream_that_never_ends_or_outgrows_the_cap_is_a_typed_error() -> None:
    """The endless stream sends keep-alive comments for ever: the lane's deadline ends the
    attempt (``timeout``); the one that grows past ``max_response_bytes`` is ``bad_payload``."""

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(STREAM_HEAD)
        delta = sse({"delta": "x" * 1000})
        while True:
            writer.write(chunk(b": still thinking\n\n" if request.target == "/endless" else delta))
            await writer.drain()
            await asyncio.sleep(0.01)

    spec = {"format": "sse", "delta_path": "delta"}
    async with origin(handler) as server, make_http_client(4) as client:
        endless = target_of({"url": f"{server.url}/endless", "stream": spec}, client)
        huge = target_of(
            {"url": f"{server.url}/huge", "stream": spec, "max_response_bytes": 64 * 1024}, client
        )
        limits = {
            "endless": TargetLimits(timeout_s=0.5, retries=0),
            "huge": TargetLimits(timeout_s=300, retries=0),  # the cap ends it, not the clock
        }
        async with Runner({"endless": endless, "huge": huge}, limits) as runner:
            slow = await runner.run(probe("endless"))
            big = await runner.run(probe("huge"))
    assert slow.status is TargetStatus.ERROR and slow.error_kind == "timeout"
    assert big.status is TargetStatus.ERROR and big.error_kind == "bad_payload"
    assert "larger than 65536 bytes" in (big.error_detail or "")


async def test_a_stream_answering_an_error_status_is_that_status() -> None:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(response(503, b'{"error": "overloaded"}'))

    async with origin(handler) as server, make_http_client(4) as client:
        target = target_of({"url": f"{server.url}/ask", "stream": {"format": "openai"}}, client)
        with pytest.raises(TargetError) as err:
            await target.ask("q")
    assert err.value.kind is ErrorKind.HTTP_5XX and err.value.status_code == 503


def test_stream_telemetry_is_a_histogram_per_target_next_to_latency() -> None:
    registry = CollectorRegistry()
    telemetry = RunnerTelemetry(registry)
    telemetry.on_stream("rag", 0.4, 2.5)
    telemetry.on_stream("rag", None, 0.1)  # no delta had text: no first token to observe
    count = registry.get_sample_value
    assert count("groundwatch_target_first_token_seconds_count", {"target": "rag"}) == 1
    assert count("groundwatch_target_stream_seconds_count", {"target": "rag"}) == 2
    assert (
        count("groundwatch_target_first_token_seconds_bucket", {"target": "rag", "le": "0.5"}) == 1
    )


# ------------------------------------------------------------------------------------ OAuth2
class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TokenServer:
    """A token endpoint and a protected endpoint on one server, on a shared (fake) clock: tokens
    live ``lifetime`` seconds of it; a request with a dead or unknown token gets a 401."""

    def __init__(self, clock: FakeClock, lifetime: float = 10.0) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.tokens: dict[str, float] = {}
        self.refused = 0
        self.forms: list[dict[str, str]] = []
        self.credentials = "Basic " + base64.b64encode(b"groundwatch:s%C3%A9cret%2B1").decode()

    async def __call__(self, request: Request, writer: asyncio.StreamWriter) -> None:
        if request.target == "/token":
            from urllib.parse import parse_qsl

            self.forms.append(dict(parse_qsl(request.body.decode())))
            if request.headers.get("authorization") != self.credentials:
                writer.write(
                    response(401, b'{"error": "invalid_client", "echo": "s\\u00e9cret+1"}')
                )
                return
            token = f"tok-{len(self.tokens) + 1}-{'x' * 20}"
            self.tokens[token] = self.clock() + self.lifetime
            body = {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime}
            writer.write(response(200, orjson.dumps(body)))
            return
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.tokens.get(token, 0.0) <= self.clock():
            self.refused += 1
            writer.write(response(401, b'{"error": "expired"}'))
            return
        writer.write(response(200, b'{"answer": "Oslo"}'))


async def test_oauth2_tokens_are_refreshed_before_they_expire_over_a_continuous_run() -> None:
    clock = FakeClock()
    server_logic = TokenServer(clock, lifetime=10.0)
    async with origin(server_logic) as server, make_http_client(4) as client:
        auth = OAuth2ClientCredentials(
            client,
            f"{server.url}/token",
            "groundwatch",
            "sécret+1",
            scopes=["rag.ask", "rag.read"],
            refresh_before_s=3.0,
            clock=clock,
        )
        target = HttpJsonTarget(client, f"{server.url}/ask", auth=auth)
        async with Runner({"rag": target}, {"rag": TargetLimits(retries=0)}) as runner:
            for _ in range(40):  # 40 s of the fake clock, 4 token lifetimes
                clock.now += 1.0
                answers = await asyncio.gather(*(runner.run(probe("rag")) for _ in range(3)))
                assert [a.status for a in answers] == [TargetStatus.OK] * 3
    assert server_logic.refused == 0  # never sent a dead token
    assert 5 <= auth.fetched <= 7  # renewed every 7 s of 10, one fetch at a time
    assert server_logic.forms[0] == {
        "grant_type": "client_credentials",
        "scope": "rag.ask rag.read",
    }


async def test_a_token_revoked_early_is_fetched_again_once() -> None:
    clock = FakeClock()
    server_logic = TokenServer(clock, lifetime=1000.0)
    async with origin(server_logic) as server, make_http_client(4) as client:
        auth = OAuth2ClientCredentials(
            client, f"{server.url}/token", "groundwatch", "sécret+1", clock=clock
        )
        target = HttpJsonTarget(client, f"{server.url}/ask", auth=auth)
        assert (await target.ask("q")).answer == "Oslo"
        server_logic.tokens.clear()  # revoked by the identity provider
        assert (await target.ask("q")).answer == "Oslo"
    assert auth.fetched == 2 and server_logic.refused == 1


async def test_a_token_endpoint_refusing_the_credentials_is_one_typed_line_without_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    clock = FakeClock()
    server_logic = TokenServer(clock)
    async with origin(server_logic) as server, make_http_client(4) as client:
        target = target_of(
            {
                "url": f"{server.url}/ask",
                "auth": {
                    "type": "oauth2_client_credentials",
                    "token_url": f"{server.url}/token",
                    "client_id": "groundwatch",
                    "client_secret_env": "RAG_SECRET",
                },
            },
            client,
            env={"RAG_SECRET": "wrong-s3cret"},
        )
        async with Runner({"rag": target}, {"rag": TargetLimits(retries=2)}) as runner:
            failed = await runner.run(probe("rag"))
    assert failed.status is TargetStatus.ERROR and failed.error_kind == "http_4xx"
    assert failed.error_detail == (
        f"http_4xx: token endpoint {server.url}/token refused the client credentials:"
        " HTTP 401 (invalid_client)"
    )
    assert len(server_logic.forms) == 1  # refused credentials are not retried
    everything = caplog.text + (failed.error_detail or "")
    assert "wrong-s3cret" not in everything and "s\\u00e9cret" not in everything


def test_a_missing_client_secret_is_one_line_naming_the_target() -> None:
    from groundwatch.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        target_of(
            {
                "url": "https://rag.internal/ask",
                "auth": {
                    "type": "oauth2_client_credentials",
                    "token_url": "https://idp.internal/token",
                    "client_id": "gw",
                    "client_secret_env": "RAG_SECRET",
                },
            },
            object(),
            env={},
        )
    assert str(err.value) == "target rag: environment variable RAG_SECRET is not set"


# ------------------------------------------------------------------------------------ signer
SIGNING_KEY = b"k3y"


def hmac_signer(request: SignRequest) -> dict[str, str]:
    """A provider's own scheme: an HMAC of method, path and body (module-level: importable)."""
    from urllib.parse import urlsplit

    message = f"{request.method}\n{urlsplit(request.url).path}\n".encode() + (request.body or b"")
    return {"X-Signature": hmac.new(SIGNING_KEY, message, hashlib.sha256).hexdigest()}


async def test_a_signer_by_import_path_signs_every_request() -> None:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        message = f"{request.method}\n{request.target}\n".encode() + request.body
        good = hmac.new(SIGNING_KEY, message, hashlib.sha256).hexdigest()
        ok = request.headers.get("x-signature") == good
        writer.write(response(200, b'{"answer": "Oslo"}') if ok else response(401, b"{}"))

    async with origin(handler) as server, make_http_client(4) as client:
        spec = {"type": "signer", "callable": f"{__name__}:hmac_signer"}
        target = target_of({"url": f"{server.url}/ask", "auth": spec}, client)
        replies = [await target.ask(q) for q in ("one", "two", "three")]
    assert [r.answer for r in replies] == ["Oslo"] * 3
    assert len({r.headers["x-signature"] for r in server.requests}) == 3  # per request


def test_stream_spec_defaults_for_openai() -> None:
    spec = parse_targets(
        [
            {
                "name": "x",
                "type": "http_json",
                "url": "http://h/{query}",
                "method": "GET",
                "body": None,
                "stream": {"format": "openai"},
            }
        ]
    )[0]
    assert spec.stream is not None and spec.stream.spec() == StreamSpec(StreamFormat.OPENAI)
