from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx2
import openai
import pytest

from groundwatch.adapters.targets import (
    CallableTarget,
    ErrorKind,
    OpenAIChatTarget,
    TargetError,
    TargetReply,
    reply_from,
)
from groundwatch.adapters.targets.openai_chat import BASELINE_SYSTEM_PROMPT
from groundwatch.core.model import DONT_KNOW
from groundwatch.errors import RetryLater
from tests.waiting import GENEROUS_S, until

pytestmark = pytest.mark.unit


async def test_callable_sync_runs_in_a_thread_and_does_not_block_the_loop() -> None:
    threads: list[str] = []
    ticked = threading.Event()

    def slow(query: str) -> str:
        threads.append(threading.current_thread().name)
        # returns only once the loop has run meanwhile: on the loop's thread it would wait alone
        assert ticked.wait(GENEROUS_S), "the loop did not run while the call was in progress"
        return f"echo {query}"

    target = CallableTarget(slow)

    async def ticker() -> None:
        await until("the call under way", lambda: threads)
        ticked.set()

    tick_task = asyncio.create_task(ticker())
    reply = await target.ask("x")
    await tick_task
    assert reply == TargetReply("echo x")
    assert threads[0] != threading.main_thread().name


async def test_callable_async_function_and_async_callable_object() -> None:
    async def answer(query: str) -> dict[str, Any]:
        return {"answer": 42, "retrieved_ids": ["d1", 7], "contexts": ("c",)}

    class Bot:
        async def __call__(self, query: str) -> TargetReply:
            return TargetReply("bot", ["d"], ["c"])

    assert await CallableTarget(answer).ask("q") == TargetReply("42", ["d1", "7"], ["c"])
    assert await CallableTarget(Bot()).ask("q") == TargetReply("bot", ["d"], ["c"])


@pytest.mark.parametrize(
    "result",
    [None, {"text": "no answer"}, {"answer": "a", "retrieved_ids": "d1"}, {"answer": ["a"]}, 3.5j],
)
async def test_callable_bad_results_are_bad_payload(result: object) -> None:
    with pytest.raises(TargetError) as err:
        await CallableTarget(lambda q: result, in_thread=False).ask("q")  # type: ignore[arg-type,return-value]
    assert err.value.kind is ErrorKind.BAD_PAYLOAD


def test_reply_from_rejects_structures_and_bounds_size() -> None:
    with pytest.raises(TargetError, match="answer is dict"):
        reply_from({"a": 1})
    with pytest.raises(TargetError, match="contexts holds a dict"):
        reply_from("a", [], [{"text": "c"}])
    assert reply_from(True if False else "yes").answer == "yes"
    long = reply_from("x" * 20_001)
    assert long.truncated and len(long.answer) == 20_000 and not long.contexts_truncated


def test_reply_from_turns_numbers_into_text_and_refuses_booleans_and_cuts_long_ids() -> None:
    ids = ["d1", 7, 2.5]
    reply = reply_from(42, ids, ("c",))
    assert reply.answer == "42" and reply.retrieved_ids == ["d1", "7", "2.5"]
    assert reply.contexts == ["c"] and ids == ["d1", 7, 2.5]  # the caller's list untouched
    with pytest.raises(TargetError, match="answer is bool"):
        reply_from(True)
    with pytest.raises(TargetError, match="retrieved_ids holds a bool"):
        reply_from("a", ["d1", False])
    cut = reply_from("a", ["i" * 600, "d2"], ["c" * 20_001])
    assert [len(i) for i in cut.retrieved_ids] == [512, 2] and len(cut.contexts[0]) == 20_000
    assert cut.contexts_truncated and not cut.truncated


class FakeLlm:
    def __init__(self, replies: list[str] | None = None, exc: BaseException | None = None) -> None:
        self.replies = replies if replies is not None else ["Paris"]
        self.exc = exc
        self.calls: list[dict[str, Any]] = []

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        self.calls.append({"system": system, "user": user, "max_tokens": max_tokens})
        if self.exc is not None:
            raise self.exc
        return self.replies


async def test_openai_chat_target_is_llm_only() -> None:
    llm = FakeLlm([" Paris \n"])
    reply = await OpenAIChatTarget(llm, max_tokens=32).ask("Capital of France?")
    assert reply == TargetReply("Paris")
    assert llm.calls == [
        {"system": BASELINE_SYSTEM_PROMPT, "user": "Capital of France?", "max_tokens": 32}
    ]
    assert DONT_KNOW in BASELINE_SYSTEM_PROMPT


_REQ = httpx2.Request("POST", "https://api.example/v1/chat/completions")  # openai uses httpx2


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (openai.APITimeoutError(request=_REQ), ErrorKind.TIMEOUT),
        (openai.APIConnectionError(request=_REQ), ErrorKind.CONNECTION),
        (
            openai.RateLimitError(
                "slow down", response=httpx2.Response(429, request=_REQ), body=None
            ),
            ErrorKind.RATE_LIMITED,
        ),
        (
            openai.InternalServerError(
                "boom", response=httpx2.Response(503, request=_REQ), body=None
            ),
            ErrorKind.HTTP_5XX,
        ),
        (
            openai.BadRequestError("bad", response=httpx2.Response(400, request=_REQ), body=None),
            ErrorKind.HTTP_4XX,
        ),
        (RetryLater("llm down"), ErrorKind.CONNECTION),
    ],
)
async def test_openai_chat_errors_become_kinds(exc: BaseException, kind: ErrorKind) -> None:
    with pytest.raises(TargetError) as err:
        await OpenAIChatTarget(FakeLlm(exc=exc)).ask("q")
    assert err.value.kind is kind


async def test_openai_chat_no_choices_is_bad_payload() -> None:
    with pytest.raises(TargetError) as err:
        await OpenAIChatTarget(FakeLlm([])).ask("q")
    assert err.value.kind is ErrorKind.BAD_PAYLOAD
