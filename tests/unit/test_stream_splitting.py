"""How a stream's bytes become events, whatever the pieces they arrive in: every split of the
same bytes reads to the same answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from groundwatch.adapters.targets.base import TargetError
from groundwatch.adapters.targets.streams import StreamFormat, StreamReader, StreamSpec


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def _read(spec: StreamSpec, data: bytes, size: int) -> tuple[str, list[object], int]:
    reader = StreamReader(spec)
    got = asyncio.run(reader.read(_pieces(data, size), lambda: 1.0, 0.0))
    return got.answer, got.retrieved_ids, got.events


def _chunk(text: str, **more: object) -> str:
    return json.dumps({"choices": [{"delta": {"content": text}}], **more})


OPENAI = StreamSpec(StreamFormat.OPENAI, retrieved_ids_path="sources", coalesce_s=0)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_sse_reads_the_same_in_any_pieces_and_with_any_line_end(end: str, size: int) -> None:
    lines = [
        ": keep-alive",
        "data: " + json.dumps({"choices": [{"delta": {"role": "assistant"}}], "sources": ["a"]}),
        "",
        "event: message",
        "data: " + _chunk("Oslo, "),
        "",
        # one event's JSON over two data lines: joined with a line break, still one document
        'data: {"choices": [{"delta":',
        'data:  {"content": "Norway"}}], "sources": ["a", "b"]}',
        "",
        "data: [DONE]",
        "",
        "data: " + _chunk(" after the end"),
        "",
    ]
    data = end.join(lines).encode()
    assert _read(OPENAI, data, size) == ("Oslo, Norway", ["a", "b"], 3)


def test_the_last_event_needs_no_blank_line_after_it() -> None:
    data = ("data: " + _chunk("Oslo") + "\n\ndata: " + _chunk("!")).encode()
    assert _read(OPENAI, data, 5)[0] == "Oslo!"


def test_an_error_event_is_a_bad_payload_naming_what_it_said() -> None:
    data = b'data: {"choices": []}\n\nevent: error\ndata: {"message": "overloaded"}\n\n'
    with pytest.raises(TargetError, match=r"error event: .*overloaded"):
        _read(OPENAI, data, 4)


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_ndjson_lines_in_any_pieces_blank_lines_skipped(size: int) -> None:
    spec = StreamSpec(StreamFormat.NDJSON, delta_path="text", coalesce_s=0)
    data = b'{"text": "Os"}\r\n\n{"text": "lo"}\n  \n{"text": 1.5}'
    assert _read(spec, data, size) == ("Oslo1.5", [], 3)


def test_a_delta_of_the_wrong_type_on_the_way_is_skipped_not_read() -> None:
    # "choices" a string: the path cannot go on; not the answer's text, and no delta found
    data = b'data: {"choices": "none"}\n\n'
    with pytest.raises(TargetError, match=r"held no choices\.0\.delta\.content"):
        _read(OPENAI, data, 3)


async def _never_rest(seconds: float) -> None:
    raise AssertionError("a paced connection spaces its own reads")


@pytest.mark.parametrize("ended", [True, False])
def test_a_paced_connection_is_paced_from_the_first_token_and_unpaced_at_the_end(
    ended: bool,
) -> None:
    """The reader turns the connection's pacing on once, at the first token, and off at the
    end marker (what follows it, the body's terminator, is read at once: never a rest more
    before the answer is done); a stream that ends with its body the transport unpaces."""
    role = "data: " + json.dumps({"choices": [{"delta": {"role": "assistant"}}]}) + "\n\n"
    pieces = [role, "data: " + _chunk("Oslo") + "\n\n", "data: " + _chunk(".") + "\n\n"]
    if ended:
        pieces.append("data: [DONE]\n\n")
    paced: list[tuple[int, float]] = []
    given = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal given
        for piece in pieces:
            given += 1
            yield piece.encode()

    spec = StreamSpec(StreamFormat.OPENAI, coalesce_s=0.1)
    reader = StreamReader(spec)
    got = asyncio.run(
        reader.read(chunks(), lambda: 1.0, 0.0, _never_rest, lambda s: paced.append((given, s)))
    )
    assert got.answer == "Oslo."
    assert paced == ([(2, 0.1), (4, 0)] if ended else [(2, 0.1)])
