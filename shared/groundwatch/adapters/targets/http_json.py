"""A RAG system behind an HTTP JSON API: template a request, find the answer in the reply.

The client is injected (made and closed by whoever owns the lifespan), so one connection pool is
shared by every HTTP target, and tests or the embedded demo can pass an ``httpx.ASGITransport`` to
call an app in-process through exactly this code.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import orjson

from groundwatch.adapters.targets.auth import RequestAuth
from groundwatch.adapters.targets.base import (
    ErrorKind,
    JsonNumber,
    TargetError,
    TargetReply,
    reply_from,
)
from groundwatch.adapters.targets.paths import MissingPath, PathError, ReplyPath
from groundwatch.adapters.targets.streams import StreamReader, StreamSpec
from groundwatch.adapters.targets.transport import HttpClient, HttpReply, as_http_client
from groundwatch.adapters.throttle import Clock
from groundwatch.adapters.tracing.propagation import with_trace_context
from groundwatch.errors import ConfigError

PLACEHOLDER = "{query}"
DEFAULT_BODY = '{"query": "{query}"}'
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Far above what the contract keeps (50 contexts x 20 000 chars); beyond it a reply is refused.
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024

JsonTemplate = str | Mapping[str, Any] | list[Any]
#: Told of every streamed answer: seconds to its first text delta (None: none had text) and
#: to the end of the stream.
StreamObserver = Callable[[float | None, float], None]


class _HideUrlSecrets(logging.Filter):
    """httpx logs every request URL at INFO, and a target URL may carry an API key in its query
    (``?key=${VAR}``) or credentials in its user info: those lines keep scheme, host and path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, httpx.URL) for a in record.args):
            record.args = tuple(_bare(a) if isinstance(a, httpx.URL) else a for a in record.args)
        return True


def _bare(url: httpx.URL) -> str:
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}{url.path}{'?…' if url.query else ''}"


logging.getLogger("httpx").addFilter(_HideUrlSecrets())
log = logging.getLogger(__name__)
_PLACEHOLDER_LIKE = re.compile(r"\{([A-Za-z_]\w*)\}")


def _text(template: JsonTemplate) -> str:
    return template if isinstance(template, str) else orjson.dumps(template).decode()


def _near_miss(url: str, body: JsonTemplate | None) -> str:
    """`` (found {qurey}: did you mean {query}?)`` for a misspelt placeholder, else ''."""
    import difflib

    found = _PLACEHOLDER_LIKE.findall(url + " " + (_text(body) if body is not None else ""))
    close = [f for f in found if difflib.get_close_matches(f, ["query"], n=1, cutoff=0.6)]
    if close:
        return f" (found {{{close[0]}}}: did you mean {PLACEHOLDER}?)"
    if found:
        return f" (found {', '.join('{' + f + '}' for f in found)})"
    return ""


def expand_env(value: str, env: Mapping[str, str], where: str) -> str:
    """Replace ``${NAME}`` with the variable's value; a missing one is a :class:`ConfigError`
    naming the variable and where it was used, never a value."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in env:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        return env[name]

    return _ENV_REF.sub(sub, value)


def _fill(node: Any, query: str) -> Any:
    if isinstance(node, str):
        return node.replace(PLACEHOLDER, query)
    if isinstance(node, Mapping):
        return {k: _fill(v, query) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, query) for v in node]
    return node


def render_body(template: JsonTemplate, query: str) -> bytes:
    """The request body for ``query``.

    A string template is JSON text with ``{query}`` inside a JSON string; the query is inserted
    JSON-escaped, so quotes and newlines in a generated question cannot break the request. A
    mapping or list template (from YAML) has the placeholder substituted in its strings.
    """
    if isinstance(template, str):
        escaped = orjson.dumps(query).decode()[1:-1]
        return template.replace(PLACEHOLDER, escaped).encode()
    return orjson.dumps(_fill(template, query))


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _loads_exact(raw: bytes) -> Any:
    """``raw`` as JSON with every non-integer number a :class:`JsonNumber` (its text kept) and
    every integer exact; ``NaN``/``Infinity``, which Python's parser would take, are not JSON:
    ``bad_payload``, as is anything else that is not JSON."""
    try:
        return json.loads(raw, parse_float=JsonNumber, parse_constant=_not_json)
    except ValueError:  # JSONDecodeError, _not_json, an integer beyond Python's digit limit
        raise TargetError(ErrorKind.BAD_PAYLOAD, "reply is not JSON") from None


def _has_float(found: tuple[Any, list[Any], list[Any]]) -> bool:
    answer, ids, contexts = found
    return type(answer) is float or float in map(type, ids) or float in map(type, contexts)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


#: How long the end of a stream's body (after its last event) is waited for.
_DRAIN_S = 1.0


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows a stream's last event (the chunked body's terminator, mostly): a
    connection whose reply was not read to its end cannot carry the next request. A server
    still sending after the end marker is cut off (under the cap, within ``_DRAIN_S``)."""
    import asyncio

    try:
        async with asyncio.timeout(_DRAIN_S):
            async for _ in chunks:
                pass
    except (TimeoutError, TargetError):
        pass


class HttpJsonTarget:
    """``ask`` = one HTTP request; status, transport and payload failures become TargetErrors."""

    def __init__(
        self,
        client: HttpClient | httpx.AsyncClient,
        url: str,
        *,
        method: str = "POST",
        headers: Mapping[str, str] | None = None,
        body_template: JsonTemplate | None = DEFAULT_BODY,
        answer_path: str = "answer",
        retrieved_ids_path: str | None = "retrieved_ids",
        contexts_path: str | None = "contexts",
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        sample_body: Mapping[str, Any] | None = None,
        sample_params: Mapping[str, str | int | float] | None = None,
        auth: RequestAuth | None = None,
        stream: StreamSpec | None = None,
        on_stream: StreamObserver | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        """``stream``: the reply is a stream of events (SSE, OpenAI chunks, NDJSON) and the
        answer their text deltas; ``auth`` adds the headers that authenticate each request."""
        self._client = as_http_client(client)
        self._auth = auth
        self._stream = StreamReader(stream) if stream is not None else None
        self.on_stream = on_stream
        self._clock = clock
        self.url = url
        self._fixed_url = url if PLACEHOLDER not in url else None
        self.method = method.upper()
        self._headers = dict(headers or {})
        if body_template is not None and not any(
            k.lower() == "content-type" for k in self._headers
        ):
            self._headers["Content-Type"] = "application/json"
        self._body = body_template
        if body_template is not None:
            probe = render_body(body_template, 'a "quoted"\nquery \\ {x}')
            try:
                orjson.loads(probe)
            except orjson.JSONDecodeError:
                raise ConfigError(
                    "body_template: not JSON once {query} is filled in; put {query} inside a "
                    'JSON string, e.g. {"query": "{query}"}'
                ) from None
        self.answer_path = ReplyPath(answer_path)
        self.retrieved_ids_path = ReplyPath(retrieved_ids_path) if retrieved_ids_path else None
        self.contexts_path = ReplyPath(contexts_path) if contexts_path else None
        self.max_response_bytes = max_response_bytes
        self._warned: set[str] = set()
        #: How this endpoint is asked for a SelfCheck sample: fields merged into the request's
        #: JSON object (``{"temperature": 1.0}``) and/or query parameters added to its URL. An
        #: endpoint with neither declared cannot be sampled (see ``sampler_of``).
        self._sample_body = dict(sample_body or {})
        self._sample_query = urlencode({k: str(v) for k, v in (sample_params or {}).items()})
        self.can_sample = bool(self._sample_body or self._sample_query)
        if self._sample_body:
            shape = orjson.loads(render_body(body_template, "q")) if body_template else None
            if not isinstance(shape, dict):
                raise ConfigError(
                    "sampling.body: fields can only be added to a JSON object body; use"
                    " sampling.params for a query-string knob"
                )
        if PLACEHOLDER not in url and (
            body_template is None or PLACEHOLDER not in _text(body_template)
        ):
            raise ConfigError(
                f"{PLACEHOLDER} appears neither in the url nor in the body, so no question would"
                f" be sent{_near_miss(url, body_template)}"
            )

    def __repr__(self) -> str:  # never the headers: they hold secrets
        return f"HttpJsonTarget({self.method} {self.url})"

    async def ask(self, query: str) -> TargetReply:
        url = self._fixed_url or self.url.replace(PLACEHOLDER, quote(query, safe=""))
        content = render_body(self._body, query) if self._body is not None else None
        return await self._exchange(url, content)

    async def sample(self, query: str) -> TargetReply:
        """One SelfCheck sample: the request with the declared ``sampling`` fields and params."""
        url = self._fixed_url or self.url.replace(PLACEHOLDER, quote(query, safe=""))
        if self._sample_query:
            url += ("&" if "?" in url else "?") + self._sample_query
        content = render_body(self._body, query) if self._body is not None else None
        if self._sample_body and content is not None:
            content = orjson.dumps({**orjson.loads(content), **self._sample_body})
        return await self._exchange(url, content)

    async def _exchange(self, url: str, content: bytes | None) -> TargetReply:
        auth = self._auth
        for _ in range(2):  # a second time only when a 401 made the auth fetch a fresh token
            headers = with_trace_context(self._headers)
            if auth is not None:
                headers = {**headers, **await auth.headers(self.method, url, content)}
            if self._stream is not None:
                status, streamed = await self._streamed(self._stream, url, headers, content)
                if streamed is not None:
                    return streamed
                reply = HttpReply(status.status, status.retry_after, b"")
            else:
                reply = await self._client.exchange(
                    self.method, url, headers, content, self.max_response_bytes
                )
            if reply.status != 401 or auth is None or not auth.refused():
                break
        self._check_status(reply)
        return self.parse(reply.body)

    async def _streamed(
        self, reader: StreamReader, url: str, headers: Mapping[str, str], content: bytes | None
    ) -> tuple[HttpReply, TargetReply | None]:
        """The streamed answer, or (for a status that is no answer) that status alone."""
        started = self._clock()
        async with self._client.stream(
            self.method, url, headers, content, self.max_response_bytes
        ) as response:
            if response.status >= 300:
                return HttpReply(response.status, response.retry_after, b""), None
            got = await reader.read(response.chunks, self._clock, started, pace=response.pace)
            await _drain(response.chunks)
        if self.on_stream is not None:
            self.on_stream(got.first_token_s, self._clock() - started)
        ok = HttpReply(response.status, None, b"")
        return ok, reply_from(got.answer, got.retrieved_ids, got.contexts)

    def _check_status(self, reply: HttpReply) -> None:
        code = reply.status
        if code < 300:
            return
        if code < 400:
            # the endpoint sent the question elsewhere (a moved URL, a login page): its body is
            # not an answer, and following it could send the question (and its headers) anywhere
            raise TargetError(ErrorKind.REDIRECT, f"HTTP {code}", status_code=code)
        hint = _retry_after(reply.retry_after)
        if code == 429:
            kind = ErrorKind.RATE_LIMITED
            raise TargetError(kind, "HTTP 429", status_code=code, retry_after=hint)
        if code == 408:
            raise TargetError(ErrorKind.TIMEOUT, "HTTP 408", status_code=code)
        if code >= 500:
            kind = ErrorKind.HTTP_5XX
            raise TargetError(kind, f"HTTP {code}", status_code=code, retry_after=hint)
        raise TargetError(ErrorKind.HTTP_4XX, f"HTTP {code}", status_code=code)

    def parse(self, raw: bytes) -> TargetReply:
        """The reply's answer, ids and contexts by the configured paths.

        A number among them is kept as the endpoint wrote it: orjson reads numbers as floats
        (``1e400`` is an error, a 30-digit integer loses digits, ``1e-400`` is 0.0), so a reply
        where one of them is a float is read again by :func:`_loads_exact`, which keeps each
        number's text (``"1e400"``, never ``"inf"``)."""
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            # orjson also refuses an escaped lone surrogate ("\ud800"), which JSON's grammar
            # allows and Python's json.dumps writes: the standard parser takes it, and the
            # contract then replaces the character and flags the answer (answer_sanitized)
            doc = _loads_exact(raw)
        else:
            found = self._find(doc)
            if not _has_float(found):
                return reply_from(*found)
            doc = _loads_exact(raw)
        return reply_from(*self._find(doc))

    def _find(self, doc: Any) -> tuple[Any, list[Any], list[Any]]:
        try:
            answer = self.answer_path.one(doc)
            ids = self._optional(self.retrieved_ids_path, doc, "retrieved_ids_path")
            contexts = self._optional(self.contexts_path, doc, "contexts_path")
        except PathError as exc:
            raise TargetError(ErrorKind.BAD_PAYLOAD, str(exc)) from None
        return answer, ids, contexts

    def _optional(self, path: ReplyPath | None, doc: Any, setting: str) -> list[Any]:
        """Retrieved ids and contexts are optional: a reply without them is an answer without
        evidence (retrieval is then judged by context comparison), not a failed probe. A value
        of the wrong type still is a bad payload. The first absence is logged once, with the
        target setting that points at it (its default may not fit the endpoint's reply)."""
        if path is None:
            return []
        try:
            return path.many(doc)
        except MissingPath as exc:
            if path.expr not in self._warned:
                self._warned.add(path.expr)
                log.warning(
                    "%r: %s; treated as empty — set %s to where the reply has it, or to null"
                    " if the endpoint returns none",
                    self,
                    exc,
                    setting,
                )
            return []
