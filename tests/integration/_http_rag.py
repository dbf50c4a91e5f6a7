"""A scripted RAG endpoint on 127.0.0.1 for CLI tests: answers from a dataset's gold answers
for the groups it "knows", refuses the rest, and can be told to fail or to omit fields."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def answers_of(dataset: Path, knows: Callable[[str], bool]) -> dict[str, str]:
    """question text → gold answer, for the groups ``knows(group_id)`` accepts."""
    out: dict[str, str] = {}
    for line in dataset.read_text().splitlines():
        g = json.loads(line)
        if not knows(g["group_id"]):
            continue
        values = g["answer"]["values"]
        for f in g["forms"]:
            out[f["text"]] = " and ".join(values)
    return out


@contextmanager
def serve(
    answers: dict[str, str],
    *,
    status: int = 200,
    reply: Callable[[str], Any] | None = None,
    traceparents: list[str] | None = None,
    failing: frozenset[str] = frozenset(),
    fail_share: float = 0.0,
    seed: int = 0,
    draws: list[bool] | None = None,
) -> Iterator[str]:
    """Serve POST {"query": …} at http://127.0.0.1:PORT/ask until the block ends; yields the URL.

    ``reply(answer)`` shapes the JSON reply (default ``{"answer": answer}``: no retrieved ids,
    no contexts); ``status`` other than 200 fails every request with it; ``traceparents``
    collects each request's W3C ``traceparent`` header ("" when it had none); the questions in
    ``failing`` fail with HTTP 500 while the rest are answered; ``fail_share`` of all requests
    fail with HTTP 500 at random (``random.Random(seed)``, drawn in arrival order; ``draws``
    collects whether each failed)."""
    rng = random.Random(seed)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if traceparents is not None:
                traceparents.append(self.headers.get("traceparent") or "")
            query = json.loads(body or b"{}").get("query", "")
            with lock:
                drawn = rng.random() < fail_share
                if draws is not None:
                    draws.append(drawn)
            if status != 200 or query in failing or drawn:
                self.send_response(status if status != 200 else 500)
                self.end_headers()
                return
            answer = answers.get(query, "I don't know.")
            data = json.dumps(reply(answer) if reply else {"answer": answer}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    finally:
        server.shutdown()
        server.server_close()
