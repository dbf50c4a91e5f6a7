"""An endpoint under test whose first reply holds a NUL character (issue 17's reproduction).

Every other request gets an explicit refusal. It runs in a thread of the test process on a free
loopback port and counts what it answered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The reply from the issue, byte for byte: a JSON ``\u0000`` escape inside the answer.
NUL_REPLY = b'{"answer":"The answer is \\u0000 unknown"}'
REFUSAL = b'{"answer":"I don\'t know.","retrieved_ids":[]}'


@dataclass
class NulTarget:
    url: str
    answered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextlib.contextmanager
def nul_target() -> Iterator[NulTarget]:
    state = NulTarget(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            with state.lock:
                first = state.answered == 0
                state.answered += 1
            body = NUL_REPLY if first else REFUSAL
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # quiet
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/query"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def nul_targets_yaml(name: str, url: str) -> str:
    """A targets file naming the endpoint; the issue's reply has an answer and nothing else."""
    return (
        f"targets:\n  - name: {name}\n    type: http_json\n    url: {url}\n"
        "    retrieved_ids_path: null\n    contexts_path: null\n"
    )
