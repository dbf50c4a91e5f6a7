"""Streamed answers: server-sent events, OpenAI-compatible ``stream: true`` chunks, NDJSON.

Each event is a JSON document; the answer is the concatenation of the text deltas a path
finds in the events (``choices.0.delta.content`` for OpenAI-compatible chunks), the retrieved
ids and contexts are gathered from whichever events carry them (each once, in order of
arrival). An event without a delta (a
role-only first chunk, a usage or ``finish_reason`` chunk) is skipped; a delta that is not text
is a bad payload, as is a stream in which no event had one. SSE's ``[DONE]`` ends the stream.

The reader also measures what people who run these services watch: the time to the first
non-empty delta and to the end of the stream.

Every read of a stream costs the event loop and the HTTP stack a turn, and a server flushes one
event per token. Until the first token the stream is read as it comes, so the time to first
token is exact; after it, reads come at most once per ``coalesce_s`` and take what arrived
meanwhile in one: the answer is judged whole, so its later deltas need no hurry. On an HTTP/1.1
connection of :mod:`~.netio` the connection itself is paced (its socket left unread between
reads: the packets wait in the kernel); elsewhere (HTTP/2, in-memory transports) the reader
sleeps between the pieces it had to wait for. That cuts the reads of a 27-event answer from 27
to ~10; the end of the stream is then seen at most ``coalesce_s`` late, and what follows the
end marker is read at once. What is left per event is the HTTP/1 parser's (h11: one event per
HTTP chunk, ~6 µs) and the reader's own (split, JSON parse, delta: ~3 µs).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from groundwatch.adapters.targets.base import ErrorKind, JsonNumber, TargetError, number_text
from groundwatch.adapters.targets.paths import ABSENT, MissingPath, PathError, ReplyPath

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
        self,
        chunks: AsyncIterator[bytes],
        clock: Callable[[], float],
        started: float,
        rest: Callable[[float], Awaitable[None]] = asyncio.sleep,
        pace: Callable[[float], None] | None = None,
    ) -> StreamedAnswer:
        """The answer of ``chunks``, read at most once per ``coalesce_s`` once the first token
        is in (see the module docstring).

        ``pace``: the connection spaces its own reads (an HTTP/1.1 socket, left unread between
        them): turned on once, at the first token. Without it the reader ``rest``s between
        pieces itself, after a piece it had to wait for only: the pieces of one read come one
        by one from the HTTP stack's buffer at once, and a pause after each would hold back
        data that is already here (at most one pause per half ``coalesce_s``, whatever a loaded
        loop makes those look like). One loop, no generator between the HTTP stack and the
        splitter: a layer more costs each piece of the stream ~1 µs."""
        got = _Collector(self, clock, started)
        out = got.out
        split = _Splitter(self._sse, self.spec.done.encode())
        pause = self.spec.coalesce_s
        half = pause / 2
        time = asyncio.get_running_loop().time
        pieces = aiter(chunks)
        rested = float("-inf")
        paced = False
        while True:
            asked = time()
            try:
                data = await anext(pieces)
            except StopAsyncIteration:
                got.take(split.finish())
                break
            came = time()
            got.take(split.feed(data))
            if split.ended:
                if paced and pace is not None:  # what follows the end is read as it comes
                    pace(0)
                break
            if pause > 0 and out.first_token_s is not None:
                if pace is not None:
                    pace(pause)
                    paced, pause = True, 0.0  # the connection keeps the pace from here on
                elif came - asked >= _WAITED_S and came - rested >= half:
                    await rest(pause)
                    rested = time()
        return got.answer()


class _Collector:
    """One stream's answer as its events come: the deltas, the ids and contexts, the time of
    the first token."""

    __slots__ = ("_clock", "_parts", "_reader", "_started", "contexts", "found_delta", "ids", "out")

    def __init__(self, reader: StreamReader, clock: Callable[[], float], started: float) -> None:
        self._reader = reader
        self._clock = clock
        self._started = started
        self.out = StreamedAnswer("")
        self._parts: list[str] = []
        self.ids, self.contexts = _Gathered(), _Gathered()
        self.found_delta = False

    def take(self, payloads: list[bytes]) -> None:
        reader, out = self._reader, self.out
        delta_path, ids_path, contexts_path = reader._delta, reader._ids, reader._contexts
        for payload in payloads:
            out.events += 1
            doc = _loads(payload)
            try:
                delta = delta_path.get(doc)
            except PathError:
                delta = ABSENT
            if delta is not ABSENT:
                self.found_delta = True
                if delta is not None:
                    text = delta if type(delta) is str else self._text(delta)
                    if text and out.first_token_s is None:
                        out.first_token_s = self._clock() - self._started
                    self._parts.append(text)
            if ids_path is not None and (found := _gather(ids_path, doc)):
                self.ids.add_new(found)
            if contexts_path is not None and (found := _gather(contexts_path, doc)):
                self.contexts.add_new(found)

    def _text(self, delta: Any) -> str:
        if isinstance(delta, bool) or not isinstance(delta, str | int | float):
            raise TargetError(
                ErrorKind.BAD_PAYLOAD,
                f"{self._reader.spec.delta_path}: a {type(delta).__name__} delta, not text",
            )
        return delta if isinstance(delta, str) else number_text(delta)

    def answer(self) -> StreamedAnswer:
        out = self.out
        if not self.found_delta:
            raise TargetError(
                ErrorKind.BAD_PAYLOAD,
                f"the stream's {out.events} events held no {self._reader.spec.delta_path}",
            )
        out.answer = "".join(self._parts)
        out.retrieved_ids, out.contexts = list(self.ids), list(self.contexts)
        return out


class _Splitter:
    """The events of a stream, split as its pieces arrive: each SSE event's joined ``data``
    lines, or each non-blank NDJSON line. One call per piece, every line of it in one loop:
    an async generator per line costs more than the JSON parse of its event."""

    __slots__ = ("_data", "_done", "_event", "_rest", "_sse", "ended")

    def __init__(self, sse: bool, done: bytes) -> None:
        self._sse = sse
        self._done = done
        self._rest = b""
        self._data: list[bytes] = []
        self._event = b""
        #: SSE's end marker (``[DONE]``) came: what follows is not read as events
        self.ended = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if (  # one whole ``data: ...`` event, as servers flush them: no line loop
            self._sse
            and not self._rest
            and not self._data
            and not self._event
            and chunk[:6] == b"data: "
            and chunk[-2:] == b"\n\n"
            and chunk.count(b"\n") == 2
            and b"\r" not in chunk
            and not self.ended
        ):
            payload = chunk[6:-2]
            if payload[:1] != b"{" and payload.strip() == self._done:
                self.ended = True
                return []
            return [payload]
        buf = self._rest + chunk if self._rest else chunk
        held = b""
        if b"\r" in buf:  # line ends other than \n: rare, normalised once
            if buf.endswith(b"\r"):  # its \n may come in the next piece
                buf, held = buf[:-1], b"\r"
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._rest = lines.pop() + held
        return self._events(lines)

    def finish(self) -> list[bytes]:
        """What the stream's end completes: its last line, an event with no blank line after."""
        out = self._events([self._rest.rstrip(b"\r")]) if self._rest else []
        self._rest = b""
        if self._sse and self._data and not self.ended:
            payload = b"\n".join(self._data)
            self._data = []
            if payload.strip() != self._done:
                out.append(payload)
        return out

    def _events(self, lines: list[bytes]) -> list[bytes]:
        if not self._sse:
            return [line for line in lines if line.strip()]
        out: list[bytes] = []
        data = self._data
        for line in lines:
            if self.ended:
                break
            if not line:  # the blank line that dispatches an event
                if data:
                    payload = b"\n".join(data)
                    data.clear()
                    name, self._event = self._event, b""
                    if payload.strip() == self._done:
                        self.ended = True
                        break
                    if name == b"error":
                        said = payload[:200].decode(errors="replace")
                        raise TargetError(
                            ErrorKind.BAD_PAYLOAD, f"the stream sent an error event: {said}"
                        )
                    out.append(payload)
                self._event = b""
            elif line[0] == 58:  # ":": a comment (keep-alive)
                continue
            else:
                name_, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name_ == b"data":
                    data.append(value)
                elif name_ == b"event":
                    self._event = value
        return out


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


def _gather(path: ReplyPath, doc: Any) -> list[Any]:
    try:
        if path.single and path.get(doc) is ABSENT:  # the usual event: no ids in it
            return []
        return path.many(doc)
    except MissingPath:
        return []
    except PathError as exc:
        raise TargetError(ErrorKind.BAD_PAYLOAD, str(exc)) from None


__all__ = ["OPENAI_DELTA", "StreamFormat", "StreamReader", "StreamSpec", "StreamedAnswer"]
