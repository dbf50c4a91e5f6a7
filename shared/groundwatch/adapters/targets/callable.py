"""A Python callable as a target: for library use, notebooks and tests.

The callable takes the query and returns a :class:`TargetReply`, a plain answer string, or a
mapping with ``answer`` (and optionally ``retrieved_ids``, ``contexts``). A synchronous callable
runs in a worker thread so a slow one cannot block the event loop (and so timeouts still fire).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from groundwatch.adapters.targets.base import (
    SAMPLE_TEMPERATURE,
    ErrorKind,
    TargetError,
    TargetReply,
    reply_from,
)

CallableResult = TargetReply | str | Mapping[str, Any]
TargetCallable = Callable[[str], CallableResult | Awaitable[CallableResult]]


class CallableTarget:
    def __init__(self, fn: TargetCallable, *, in_thread: bool = True) -> None:
        self._fn = fn
        self._in_thread = in_thread
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - an async __call__ on an object
        )
        #: a callable that takes ``temperature`` can be sampled (SelfCheck): it is called with
        #: ``temperature=1.0`` for a sample; one without it gives the same answer again
        self.can_sample = _takes_temperature(fn)

    def __repr__(self) -> str:
        return f"CallableTarget({getattr(self._fn, '__qualname__', self._fn)!r})"

    async def ask(self, query: str) -> TargetReply:
        return await self._call(query, {})

    async def sample(self, query: str) -> TargetReply:
        """One stochastic answer for SelfCheck: the callable with ``temperature=1.0``."""
        return await self._call(query, {"temperature": SAMPLE_TEMPERATURE})

    async def _call(self, query: str, kwargs: dict[str, Any]) -> TargetReply:
        fn: Any = self._fn
        if self._is_async:
            result: Any = await fn(query, **kwargs)
        elif self._in_thread:
            result = await asyncio.to_thread(fn, query, **kwargs)
        else:
            result = fn(query, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return _as_reply(result)


def _takes_temperature(fn: object) -> bool:
    try:
        params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    p = params.get("temperature")
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _as_reply(result: Any) -> TargetReply:
    if isinstance(result, TargetReply):
        return result.bounded()
    if isinstance(result, str):
        return reply_from(result)
    if isinstance(result, Mapping):
        if "answer" not in result:
            raise TargetError(ErrorKind.BAD_PAYLOAD, "callable returned a mapping without 'answer'")
        ids = result.get("retrieved_ids") or []
        contexts = result.get("contexts") or []
        if not isinstance(ids, list | tuple) or not isinstance(contexts, list | tuple):
            raise TargetError(ErrorKind.BAD_PAYLOAD, "retrieved_ids and contexts must be lists")
        return reply_from(result["answer"], ids, contexts)
    raise TargetError(ErrorKind.BAD_PAYLOAD, f"callable returned a {type(result).__name__}")
