"""Streamed answers: server-sent events, OpenAI-compatible ``stream: true`` chunks, NDJSON.

Each event is a JSON document; the answer is the concatenation of the text deltas a path
finds in the events (``choices.0.delta.content`` for OpenAI-compatible chunks), the retrieved
ids and contexts are gathered from whichever events carry them (each once, in order of
arrival). An event without a delta (a
role-only first chunk, a usage or ``finish_reason`` chunk) is skipped; a delta that is not text
is a bad payload, as is a stream in which no event had one. SSE's ``[DONE]`` ends the stream.

The reader also measures what people who run these services watch: the time to the first
non-empty delta and to the end of the stream.

Every read of a stream costs the HTTP stack a full turn (h11, httpcore, anyio: ~50 µs), and a
server flushes one event per token. Until the first token the stream is read as it comes, so
the time to first token is exact; after it, the reader waits ``coalesce_s`` between reads and
takes what arrived meanwhile in one: the answer is judged whole, so its later deltas need no
hurry. That cuts the reads of a 20-token answer from ~20 to a handful; the end of the stream is
then seen at most ``coalesce_s`` late.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from groundwatch.adapters.targets.base import ErrorKind, JsonNumber, TargetError, number_text
from groundwatch.adapters.targets.paths import MissingPath, PathError, ReplyPath

OPENAI_DELTA = "choices.0.delta.content"
#: A piece that took longer than this to come was waited for on the network (not buffered).
_WAITED_S = 0.002


class StreamFormat(StrEnum):
    SSE = "sse"
    #: SSE with the OpenAI chat-completions chunk shape: the delta path defaults to
    #: ``choices.0.delta.content``
    OPENAI = "openai"
    NDJSON = "ndjson"


@dataclass(frozen=True, slots=True)
class StreamSpec:
    format: StreamFormat
    delta_path: str = OPENAI_DELTA
    retrieved_ids_path: str | None = None
    contexts_path: str | None = None
    done: str = "[DONE]"
    #: seconds between reads once the first token is in (0: read every event as it comes)
    coalesce_s: float = 0.1


@dataclass(slots=True)
class StreamedAnswer:
    """What a stream said, and when: ``first_token_s`` is None when no delta held text."""

    answer: str
    retrieved_ids: list[Any] = field(default_factory=list)
    contexts: list[Any] = field(default_factory=list)
    first_token_s: float | None = None
    events: int = 0


class StreamReader:
    """Reads one stream per :meth:`read` call with the paths of a :class:`StreamSpec`."""

    def __init__(self, spec: StreamSpec) -> None:
        self.spec = spec
        self._delta = ReplyPath(spec.delta_path)
        self._ids = ReplyPath(spec.retrieved_ids_path) if spec.retrieved_ids_path else None
        self._contexts = ReplyPath(spec.contexts_path) if spec.contexts_path else None
        self._sse = spec.format is not StreamFormat.NDJSON

    async def read(
        self, chunks: AsyncIterator[bytes], clock: Callable[[], float], started: float
    ) -> StreamedAnswer:
        out = StreamedAnswer("")
        parts: list[str] = []
        ids, contexts = _Gathered(), _Gathered()
        found_delta = False
        async for payload in self._payloads(self._paced(chunks, out)):
            out.events += 1
            doc = _loads(payload)
            try:
                delta = self._delta.one(doc)
            except PathError:
                delta = None
            else:
                found_delta = True
            if delta is not None:
                if isinstance(delta, bool) or not isinstance(delta, str | int | float):
                    raise TargetError(
                        ErrorKind.BAD_PAYLOAD,
                        f"{self.spec.delta_path}: a {type(delta).__name__} delta, not text",
                    )
                text = delta if isinstance(delta, str) else number_text(delta)
                if text and out.first_token_s is None:
                    out.first_token_s = clock() - started
                parts.append(text)
            ids.add_new(_gather(self._ids, doc))
            contexts.add_new(_gather(self._contexts, doc))
        if not found_delta:
            raise TargetError(
                ErrorKind.BAD_PAYLOAD,
                f"the stream's {out.events} events held no {self.spec.delta_path}",
            )
        out.answer = "".join(parts)
        out.retrieved_ids, out.contexts = list(ids), list(contexts)
        return out

    async def _paced(
        self, chunks: AsyncIterator[bytes], out: StreamedAnswer
    ) -> AsyncIterator[bytes]:
        """``chunks``, with a pause once the first token is in (see the module docstring): what
        arrives during it waits in the socket and comes in one read.

        Only a piece the reader had to wait for ends with a pause: the pieces of one read come
        one by one from the HTTP stack's buffer at once, and a pause after each would hold back
        data that is already here (at most one pause per half ``coalesce_s``, whatever a loaded
        loop makes those look like)."""
        pause = self.spec.coalesce_s
        if pause <= 0:
            async for data in chunks:
                yield data
            return
        loop = asyncio.get_running_loop()
        pieces = aiter(chunks)
        rested = float("-inf")
        while True:
            asked = loop.time()
            try:
                data = await anext(pieces)
            except StopAsyncIteration:
                return
            got = loop.time()
            yield data  # consumed (every line of it) before this resumes
            waited = got - asked >= _WAITED_S
            if out.first_token_s is not None and waited and got - rested >= pause / 2:
                await asyncio.sleep(pause)
                rested = loop.time()

    async def _payloads(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """Each event's JSON text: an SSE event's joined ``data`` lines, or an NDJSON line."""
        data: list[bytes] = []
        event = b""
        async for line in _lines(chunks):
            if not self._sse:
                if line.strip():
                    yield line
                continue
            if not line:  # the blank line that dispatches an event
                if data:
                    payload = b"\n".join(data)
                    data, name = [], event
                    event = b""
                    if payload.strip() == self.spec.done.encode():
                        return
                    if name == b"error":
                        said = payload[:200].decode(errors="replace")
                        raise TargetError(
                            ErrorKind.BAD_PAYLOAD, f"the stream sent an error event: {said}"
                        )
                    yield payload
                event = b""
                continue
            if line.startswith(b":"):
                continue  # a comment (keep-alive)
            name_, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name_ == b"data":
                data.append(value)
            elif name_ == b"event":
                event = value
        if data:  # the last event, with no blank line after it
            payload = b"\n".join(data)
            if payload.strip() != self.spec.done.encode():
                yield payload


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream's lines without their ends (``\\n``, ``\\r\\n`` or ``\\r`` alone)."""
    rest = b""
    async for chunk in chunks:
        buf = rest + chunk
        held = buf.endswith(b"\r")  # its \n may come in the next chunk
        if held:
            buf = buf[:-1]
        lines = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        rest = lines.pop() + (b"\r" if held else b"")
        for line in lines:
            yield line
    if rest:
        yield rest.rstrip(b"\r")


def _loads(payload: bytes) -> Any:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        try:  # the exact parser keeps numbers orjson cannot (1e400) and lone surrogates
            return json.loads(payload, parse_float=JsonNumber)
        except ValueError:
            raise TargetError(
                ErrorKind.BAD_PAYLOAD, f"a stream event is not JSON: {payload[:80]!r}"
            ) from None


class _Gathered(list[Any]):
    """A list that takes each (hashable) value once: services repeat the whole list of sources
    on every chunk (Perplexity's ``citations``), and a retrieved id counts once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[Any] = set()

    def add_new(self, values: list[Any]) -> None:
        for v in values:
            try:
                if v in self.seen:
                    continue
                self.seen.add(v)
            except TypeError:  # a dict or list: the reply's check refuses it later
                pass
            self.append(v)


def _gather(path: ReplyPath | None, doc: Any) -> list[Any]:
    if path is None:
        return []
    try:
        return path.many(doc)
    except MissingPath:
        return []
    except PathError as exc:
        raise TargetError(ErrorKind.BAD_PAYLOAD, str(exc)) from None


__all__ = ["OPENAI_DELTA", "StreamFormat", "StreamReader", "StreamSpec", "StreamedAnswer"]
