"""A local OpenAI-compatible chat-completions server for tests, scriptable per request.

The real ``openai`` SDK is pointed at it, so prompts, parsing, retries, rate limits and caching run
over real HTTP. Each request takes the next scripted :class:`Reply` (or, once the script is empty,
asks ``responder``); every request body and its arrival time are recorded.

    server = FakeOpenAIServer().start()
    server.script(Reply.status(429, retry_after=0), Reply.text("Correct"))
    ... AsyncOpenAI(base_url=server.base_url, api_key="test") ...
    server.stop()
"""

from __future__ import annotations

import asyncio
import collections
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response


@dataclass(frozen=True)
class Reply:
    """What the server does with one request."""

    content: str | None = None  # assistant text (one per choice); None → ask the responder
    status: int = 200
    body: str | None = None  # raw body instead of a completion (malformed JSON, error text)
    delay: float = 0.0  # seconds to wait before answering (timeouts, concurrency)
    retry_after: float | None = None
    choices: list[str] | None = None  # explicit texts for n > 1

    @classmethod
    def text(cls, content: str, delay: float = 0.0) -> Reply:
        return cls(content=content, delay=delay)

    @classmethod
    def status_code(cls, status: int, retry_after: float | None = None) -> Reply:
        return cls(status=status, retry_after=retry_after)

    @classmethod
    def malformed(cls) -> Reply:
        return cls(body="{this is not json", status=200)

    @classmethod
    def delayed(cls, seconds: float, content: str = "Correct") -> Reply:
        return cls(content=content, delay=seconds)


Responder = Callable[[dict[str, Any]], str]


def _default_responder(body: dict[str, Any]) -> str:
    return "Correct"


@dataclass
class Recorded:
    body: dict[str, Any]
    arrived: float  # time.monotonic()


@dataclass
class FakeOpenAIServer:
    """The app, its script and its recordings; :meth:`start` serves it on a free local port."""

    responder: Responder = _default_responder
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    _script: collections.deque[Reply] = field(default_factory=collections.deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    port: int = 0

    # -- scripting ------------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.in_flight = self.max_in_flight = 0
        self.responder = _default_responder

    def _next(self) -> Reply | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def prompts(self) -> list[str]:
        """The last (user) message of every recorded request."""
        return [r.body["messages"][-1]["content"] for r in self.requests]

    # -- the app ----------------------------------------------------------------------------------
    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            body = await request.json()
            with self._lock:
                self.requests.append(Recorded(body, time.monotonic()))
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                reply = self._next() or Reply()
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                if reply.status != 200:
                    headers = {}
                    if reply.retry_after is not None:
                        headers["retry-after"] = str(reply.retry_after)
                    err = {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
                    return JSONResponse(err, status_code=reply.status, headers=headers)
                if reply.body is not None:
                    return PlainTextResponse(reply.body, media_type="application/json")
                n = int(body.get("n") or 1)
                if reply.choices is not None:
                    texts = list(reply.choices)
                elif reply.content is not None:
                    texts = [reply.content] * n
                else:
                    texts = [self.responder(body) for _ in range(n)]
                prompt_tokens = sum(
                    len(str(m.get("content", "")).split()) for m in body["messages"]
                )
                completion_tokens = sum(len(t.split()) for t in texts)
                return JSONResponse(
                    {
                        "id": f"chatcmpl-{len(self.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": i,
                                "message": {"role": "assistant", "content": t},
                                "finish_reason": "stop",
                            }
                            for i, t in enumerate(texts)
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens,
                        },
                    }
                )
            finally:
                with self._lock:
                    self.in_flight -= 1

        return app

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(
            self.app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="fake-openai", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None
