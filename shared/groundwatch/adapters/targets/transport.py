"""The HTTP client targets share: ``httpx.AsyncClient`` over httpcore2's connection pool.

httpcore 1.0.9 (httpx 0.28's pool) hands a freshly idle HTTP/1.1 connection to *every* queued
request; all but one wake, fail and re-queue, each time triggering another full pass over the
pool. With 64 keep-alive connections that churn collapsed throughput here from 640 to ~40
requests/s (encode/httpcore#1035, still open). httpcore2 (the maintained fork, already installed
with ``openai``) fixed it (pydantic/httpx2#974, #1075). This transport keeps the ``httpx`` API —
requests, responses and exceptions are httpx's, so :class:`HttpJsonTarget` and tests with
``httpx.MockTransport`` or ``httpx.ASGITransport`` are unchanged — and swaps only the pool.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from types import TracebackType

import httpcore2
import httpx

from groundwatch.adapters.targets.lean import LeanTransport

# Most specific first: the first match wins.
_EXCEPTIONS: list[tuple[type[Exception], type[httpx.TransportError]]] = [
    (httpcore2.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx.ReadTimeout),
    (httpcore2.WriteTimeout, httpx.WriteTimeout),
    (httpcore2.PoolTimeout, httpx.PoolTimeout),
    (httpcore2.TimeoutException, httpx.TimeoutException),
    (httpcore2.ConnectError, httpx.ConnectError),
    (httpcore2.ReadError, httpx.ReadError),
    (httpcore2.WriteError, httpx.WriteError),
    (httpcore2.NetworkError, httpx.NetworkError),
    (httpcore2.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore2.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore2.ProtocolError, httpx.ProtocolError),
    (httpcore2.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore2.ProxyError, httpx.ProxyError),
]


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _EXCEPTIONS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        closer = getattr(self._stream, "aclose", None)
        if closer is not None:
            await closer()


class PooledTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` async transport whose connection pool is httpcore2's."""

    def __init__(
        self,
        *,
        limits: httpx.Limits | None = None,
        ssl_context: ssl.SSLContext | None = None,
        retries: int = 0,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=100)
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            retries=retries,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        req = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _mapped():
            resp = await self._pool.handle_async_request(req)
        assert isinstance(resp.stream, AsyncIterable)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_ResponseStream(resp.stream),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


def make_http_client(
    max_connections: int = 100,
    *,
    timeout: float | None = 60.0,
    ssl_context: ssl.SSLContext | None = None,
    lean: bool = True,
) -> httpx.AsyncClient:
    """The shared client for HTTP targets (make it in the lifespan, close it on shutdown).

    ``max_connections`` should cover the sum of the HTTP targets' concurrency; the runner's
    per-attempt timeout is the real deadline, ``timeout`` is only a backstop. ``lean`` picks
    :class:`~groundwatch.adapters.targets.lean.LeanTransport` (HTTP/1.1, no proxies, least CPU);
    otherwise     :class:`PooledTransport` (httpcore2's pool).
    """
    transport: httpx.AsyncBaseTransport
    if lean:
        transport = LeanTransport(max_connections=max_connections, ssl_context=ssl_context)
    else:
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        transport = PooledTransport(limits=limits, ssl_context=ssl_context)
    return httpx.AsyncClient(transport=transport, timeout=timeout, follow_redirects=False)
