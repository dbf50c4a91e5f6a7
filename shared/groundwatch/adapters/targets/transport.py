"""The HTTP clients targets use: one small port, aiohttp in production, httpx where injected.

Probing is many small JSON requests to few origins with bounded concurrency, where the client's
own CPU per request decides how close to the target's speed the runner gets. Measured against
the same local server (``bench/bench_runner.py``, 5 ms target, 64 in flight), aiohttp's client
(C HTTP parser, per-host keep-alive pool) cost about a third of the CPU per request of httpx
over a hand-written h11 transport, and httpx over httpcore's pool about a tenth; so production
HTTP targets use :class:`AiohttpClient` (:func:`make_http_client`), and the hand-written
transport is gone.

:class:`HttpJsonTarget` talks to an :class:`HttpClient`: a single ``exchange`` call that sends
one request and returns the status, the ``Retry-After`` header and the body read up to a cap.
An ``httpx.AsyncClient`` is still accepted (wrapped in :class:`HttpxClient`): tests pass one
with ``httpx.MockTransport``, the in-process HTTP path of the embedded demo one with
``httpx.ASGITransport``, and a deployment that needs proxies or HTTP/2 can pass its own.
Failures come out as :class:`TargetError` with their kind, whichever client sent the request.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from groundwatch.adapters.targets.base import ErrorKind, TargetError

if TYPE_CHECKING:  # both imported where used: neither is needed to start the CLI
    import aiohttp
    import httpx


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A response as targets need it: status, the server's ``Retry-After``, the whole body."""

    status: int
    retry_after: str | None
    body: bytes


def too_large(limit: int) -> TargetError:
    return TargetError(ErrorKind.BAD_PAYLOAD, f"reply larger than {limit} bytes")


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

    async def aclose(self) -> None: ...


class AiohttpClient:
    """The production client: an ``aiohttp.ClientSession`` over a keep-alive pool.

    The session is made on first use (aiohttp wants a running event loop), so the client can be
    built anywhere and the aiohttp import costs nothing to a process that never probes over
    HTTP. A POST is not retried by aiohttp itself; here a request whose connection the server
    closed before any reply (a keep-alive connection that timed out on the server's side) is
    sent once more on a fresh connection, as the server never saw it answered.
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
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._closed:
            raise RuntimeError("HTTP client is closed")
        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            limit_per_host=0,
            keepalive_timeout=self._keepalive,
            ssl=self._ssl if self._ssl is not None else True,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            # the runner's per-attempt deadline bounds every request; a total timeout here would
            # arm a second timer per request (CPU on the hot path) for the same job. Connecting
            # keeps its own bound, and a socket read stalled longer than ``timeout`` fails too.
            timeout=aiohttp.ClientTimeout(
                total=None, connect=self.timeout, sock_read=self.timeout
            ),
            auto_decompress=True,
            raise_for_status=False,
        )
        return self._session

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> HttpReply:
        import aiohttp

        session = self._session or self._open()
        for attempt in (1, 2):
            try:
                async with session.request(method, url, headers=headers, data=body) as resp:
                    size = resp.content_length
                    if size is not None and size > max_bytes:
                        raise too_large(max_bytes)
                    if size is not None:
                        data = await resp.read()
                    else:
                        parts: list[bytes] = []
                        got = 0
                        async for chunk in resp.content.iter_any():
                            got += len(chunk)
                            if got > max_bytes:
                                raise too_large(max_bytes)
                            parts.append(chunk)
                        data = b"".join(parts)
                    return HttpReply(resp.status, resp.headers.get("Retry-After"), data)
            except TimeoutError as exc:  # aiohttp's timeouts are TimeoutErrors too
                raise TargetError(ErrorKind.TIMEOUT, type(exc).__name__) from None
            except aiohttp.ServerDisconnectedError as exc:
                if attempt == 1:
                    continue  # closed before any reply: once more, on a fresh connection
                raise TargetError(ErrorKind.CONNECTION, f"{type(exc).__name__}: {exc}") from None
            except aiohttp.ClientPayloadError as exc:
                raise TargetError(ErrorKind.CONNECTION, f"{type(exc).__name__}: {exc}") from None
            except aiohttp.ContentTypeError as exc:  # pragma: no cover - read() never checks
                raise TargetError(ErrorKind.BAD_PAYLOAD, str(exc)) from None
            except (aiohttp.ClientError, OSError) as exc:
                raise TargetError(ErrorKind.CONNECTION, f"{type(exc).__name__}: {exc}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> AiohttpClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


class HttpxClient:
    """An ``httpx.AsyncClient`` behind the same port (its owner closes it)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        max_bytes: int,
    ) -> HttpReply:
        import httpx

        try:
            async with self.client.stream(method, url, headers=headers, content=body) as resp:
                parts: list[bytes] = []
                got = 0
                async for chunk in resp.aiter_bytes():
                    got += len(chunk)
                    if got > max_bytes:
                        raise too_large(max_bytes)
                    parts.append(chunk)
                return HttpReply(resp.status_code, resp.headers.get("Retry-After"), b"".join(parts))
        except httpx.TimeoutException as exc:
            raise TargetError(ErrorKind.TIMEOUT, type(exc).__name__) from None
        except httpx.DecodingError as exc:
            raise TargetError(ErrorKind.BAD_PAYLOAD, f"undecodable body: {exc}") from None
        except httpx.RequestError as exc:
            raise TargetError(ErrorKind.CONNECTION, f"{type(exc).__name__}: {exc}") from None

    async def aclose(self) -> None:
        await self.client.aclose()


def as_http_client(client: HttpClient | httpx.AsyncClient) -> HttpClient:
    """``client`` as the port: an ``httpx.AsyncClient`` is wrapped, anything else kept."""
    if isinstance(client, HttpClient):
        return client
    return HttpxClient(client)


def make_http_client(
    max_connections: int = 100,
    *,
    timeout: float | None = 60.0,
    ssl_context: ssl.SSLContext | None = None,
) -> AiohttpClient:
    """The shared client for HTTP targets (make it in the lifespan, close it on shutdown).

    ``max_connections`` should cover the sum of the HTTP targets' concurrency; the runner's
    per-attempt timeout is the real deadline, ``timeout`` is only a backstop.
    """
    return AiohttpClient(max_connections, timeout=timeout, ssl_context=ssl_context)


__all__ = [
    "AiohttpClient",
    "HttpClient",
    "HttpReply",
    "HttpxClient",
    "as_http_client",
    "make_http_client",
    "too_large",
]
