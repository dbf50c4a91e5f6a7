"""The HTTP clients targets use: one small port, a lean httptools client in production.

Probing is many small JSON requests to few origins with bounded concurrency, where the client's
own CPU per request decides how close to the target's speed the runner gets. Measured against
the same local server (``bench/bench_runner.py``, 5 ms target, 64 in flight): an earlier round
found aiohttp's client at a third of the CPU per request of httpx over a hand-written h11
transport and a tenth of httpx over httpcore's pool; then, side by side on a busy machine, the
runner with aiohttp took about 210 µs of process CPU per request and with
:class:`~groundwatch.adapters.targets.h1.H1Client` (asyncio Protocol + llhttp through
httptools, the parser uvicorn uses) about 89 µs, lane and response contract included (60–67 µs
on uvloop once the lane's own costs were cut). ``H1Client.exchange`` alone costs within a few
µs of a bare asyncio client. So production HTTP targets use ``H1Client``
(:func:`make_http_client`), and aiohttp is gone.

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
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from groundwatch.adapters.targets.base import ErrorKind, TargetError

if TYPE_CHECKING:  # both imported where used: neither is needed to start the CLI
    import httpx

    from groundwatch.adapters.targets.h1 import H1Client


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
) -> H1Client:
    """The shared client for HTTP targets (make it in the lifespan, close it on shutdown).

    ``max_connections`` should cover the sum of the HTTP targets' concurrency; the runner's
    per-attempt timeout is the real deadline, ``timeout`` is only a backstop.
    """
    from groundwatch.adapters.targets.h1 import H1Client

    return H1Client(max_connections, timeout=timeout, ssl_context=ssl_context)


__all__ = [
    "HttpClient",
    "HttpReply",
    "HttpxClient",
    "as_http_client",
    "make_http_client",
    "too_large",
]
